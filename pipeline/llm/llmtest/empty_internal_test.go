package llmtest

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// TestEmptyAnswer: asked to handle empty input explicitly, the persona
// adds a path for it that its own lines justify, or says why there is no
// empty input; every answer passes the product's check.
func TestEmptyAnswer(t *testing.T) {
	const ask = "Could you make `f` handle an empty input explicitly?"
	for _, tc := range []struct {
		name, code string
		says, adds string // in the prose; in the code
	}{
		{"a counter set before the loop", "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total",
			"returns `total` as it was set before the loop, `0`", "    if len(xs) == 0:\n        return 0\n"},
		{"a loop over the indexes", "def f(xs):\n    best = None\n    for i in range(len(xs)):\n        if best is None or xs[i] > best:\n            best = xs[i]\n    return best",
			"`None`", "    if len(xs) == 0:\n        return None\n"},
		{"no loop: an explicit error", "def f(xs):\n    return xs[0] + xs[-1]",
			"raises a ValueError", "    if len(xs) == 0:\n        raise ValueError(\"xs must not be empty\")\n"},
		{"tab-indented", "def f(xs):\n\tn = 0\n\tfor x in xs:\n\t\tn += 1\n\treturn (n)",
			"`0`", "\tif len(xs) == 0:\n\t    return 0\n"},
		{"a list built from the argument alone", "def f(cases):\n    return [g(*args) for args in cases]",
			"builds its list from `cases` alone, so it returns `[]`", "    if len(cases) == 0:\n        return []\n"},
		{"a number only", "def f(n):\n    return n * (n + 1) // 2", "uses none of its arguments (`n`)", ""},
		{"already tested", "def f(xs):\n    if not xs:\n        return 0\n    return max(xs)", "already tests for an empty `xs`", ""},
		{"a truthiness test of a number is no empty path", "def f(xs, k):\n    if not k:\n        return 0\n    return xs[0] * k",
			"raises a ValueError", "    if len(xs) == 0:\n        raise ValueError(\"xs must not be empty\")\n"},
		// find_Product: sorted in place, then a loop to the length n
		{"a product to the length argument", "def f(arr, n):\n    arr.sort()\n    prod = 1\n    for i in range(0, n, 1):\n        if arr[i - 1] != arr[i]:\n            prod = prod * arr[i]\n    return prod",
			"returns `prod` as it was set before the loop, `1`", "    if len(arr) == 0:\n        return 1\n"},
		{"all over the argument", "def f(xs, num):\n    ok = all(x >= num for x in xs)\n    return ok", "`all` of no values is `True`", "    if len(xs) == 0:\n        return True\n"},
		{"a sum returned", "def f(xs):\n    return sum(x * x for x in xs)", "`sum` of no values is `0`", "    if len(xs) == 0:\n        return 0\n"},
		{"a loop down from the length", "def f(arr, n):\n    total = 0\n    for i in range(n - 1, -1, -1):\n        total += i * arr[i]\n    return total", "`0`", "    if len(arr) == 0:\n        return 0\n"},
		{"a regular expression's matches", "import re\ndef f(text):\n  return (re.findall(r\"\\b\\w{4,}\\b\", text))", "`re.findall` finds no match in an empty `text`", "  if len(text) == 0:\n      return []\n"},
		{"told what it returned before", "def f(a, b):\n    return tuple(set(a) & set(b))", "already returned `()`", "    if len(a) == 0:\n        return ()\n"},
	} {
		was := ""
		if strings.HasPrefix(tc.name, "told") {
			was = "()"
		}
		got := emptyAnswer(tc.code, "`f`", "f", was, false)
		if !strings.Contains(got, tc.says) {
			t.Errorf("%s: answer %q lacks %q", tc.name, got, tc.says)
		}
		code := lastCode(got)
		if tc.adds != "" && !strings.Contains(code, tc.adds) {
			t.Errorf("%s: code\n%s\nlacks\n%s", tc.name, code, tc.adds)
		}
		if tc.adds == "" && strings.TrimSpace(code) != strings.TrimSpace(tc.code) {
			t.Errorf("%s: code changed to\n%s", tc.name, code)
		}
		if gates.NoEmptyPath(code, ask) {
			t.Errorf("%s: the product's check rejects the answer:\n%s", tc.name, got)
		}
		if tc.adds == "" && !gates.KeepsForRequest(ask, got) {
			t.Errorf("%s: kept code without a reason about the request: %q", tc.name, got)
		}
	}
}

// TestPlainShape: what the persona says of how code goes over its input
// is true of the code: one pass only where there is one.
func TestPlainShape(t *testing.T) {
	for _, tc := range []struct {
		name, code, want string
	}{
		{"recursion", "def f(n):\n    if n < 2:\n        return n\n    return f(n - 1) + f(n - 2)", "calls itself"},
		{"nested", "def f(xs):\n    for i in xs:\n        for j in xs:\n            pass", "one loop inside another"},
		{"two loops", "def f(xs):\n    for i in xs:\n        pass\n    return [x for x in xs]", "2 passes"},
		{"one loop", "def f(xs):\n    return sum(x for x in xs)", "once"},
		{"a comprehension that indexes", "def f(nums, N):\n    result = [i[N] for i in nums]\n    return result", "once"},
		{"a comprehension with a call in it", "def f_all(cases):\n    return [g(*args) for args in cases]", "once"},
		{"no loop", "def f(a, b):\n    return a * b", "no loop of its own"},
		{"a companion is not f", "def f(a, b):\n    return a * b\n\n\ndef f_all(cases):\n    return [f(*c) for c in cases]", "no loop of its own"},
	} {
		got := plainShape(tc.code, "`f`")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.name, got, tc.want)
		}
		if s := gates.FalseOnePass("It "+got+".", tc.code); s != "" {
			t.Errorf("%s: the product's check finds a false one-pass claim: %q", tc.name, s)
		}
	}
}
