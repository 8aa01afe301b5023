package llmtest

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// TestSpeedAnswers: asked for speed, the persona caches a recursion that
// repeats its cases and turns a list searched in a loop into a set; the
// product's check takes both for real speed-ups, and the FakeSpeedup
// answer for a fake one. Code with neither shape gets no speed answer.
func TestSpeedAnswers(t *testing.T) {
	for _, c := range []struct {
		name, code, fn, mark string
		ok                   bool
	}{
		{"recursion with repeated cases", "def lcs(X, Y, m, n):\n    if m == 0 or n == 0:\n        return 0\n    elif X[m-1] == Y[n-1]:\n        return 1 + lcs(X, Y, m-1, n-1)\n    else:\n        return max(lcs(X, Y, m, n-1), lcs(X, Y, m-1, n))\n\nprint(lcs(\"AGGTAB\", \"GXTXAYB\", 6, 7))", "lcs", "@functools.lru_cache(maxsize=None)", true},
		{"list searched in a loop", "def common(a, b):\n    out = []\n    for x in a:\n        if x in b:\n            out.append(x)\n    return out\n\nprint(common([1, 2, 3], [2, 3, 4]))", "common", "b_set = set(b)", true},
		{"recursion on a list (no cache)", "def total(xs, n):\n    if n == 0:\n        return 0\n    return total(xs, n - 1) + total(xs, n - 1) * 0 + xs[n - 1]\n\nprint(total([1, 2], 2))", "total", "", false},
		{"list of lists searched (unhashable)", "def has(rows, r):\n    n = 0\n    for x in r:\n        if x in rows:\n            n += 1\n    return n\n\nprint(has([[1], [2]], [[1]]))", "has", "", false},
		{"one self-call per branch (a cache saves nothing)", "def multiply_int(x, y):\n    if y < 0:\n        return -multiply_int(x, -y)\n    elif y == 0:\n        return 0\n    else:\n        return x + multiply_int(x, y - 1)\n\nprint(multiply_int(10, 20))", "multiply_int", "", false},
		{"one self-call per branch, a docstring quoting two", "def multiply_int(x, y):\n    \"\"\"How it works: it returns `-multiply_int(x, -y)` or `x + multiply_int(x, y - 1)`.\"\"\"\n    if y < 0:\n        return -multiply_int(x, -y)\n    return x + multiply_int(x, y - 1)\n\nprint(multiply_int(10, 20))", "multiply_int", "", false},
		{"one loop, nothing to cache", "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n\nprint(total([1, 2]))", "total", "", false},
	} {
		text, ok := speedAnswer(c.code, "`"+c.fn+"`", c.fn)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v (%q)", c.name, ok, c.ok, text)
			continue
		}
		if !ok {
			continue
		}
		after := lastCode(text)
		if !strings.Contains(after, c.mark) {
			t.Errorf("%s: code %q lacks %q", c.name, after, c.mark)
		}
		if gates.ClaimsSpeedup(text) == "" || !gates.LowerCost(c.code, after) {
			t.Errorf("%s: the product does not take it for a real speed-up: claim %q, lower cost %v", c.name, gates.ClaimsSpeedup(text), gates.LowerCost(c.code, after))
		}
		if got := unSpeed(after); normalize(got) != normalize(c.code) {
			t.Errorf("%s: the judge's unSpeed gives %q, want the code before %q", c.name, got, c.code)
		}
		fake, ok := fakeSpeedup(c.code, "`"+c.fn+"`", c.fn)
		if !ok || gates.ClaimsSpeedup(fake) == "" || gates.LowerCost(c.code, lastCode(fake)) {
			t.Errorf("%s: the fake speed-up %q passes the product's check", c.name, fake)
		}
	}
}

// TestSpeedKeptForASetSearch: code whose loop searches a set it builds is
// already linear: asked for speed, the persona says so instead of calling
// a faster version a different algorithm.
func TestSpeedKeptForASetSearch(t *testing.T) {
	code := "def first_dup(nums):\n    seen = set()\n    for x in nums:\n        if x in seen:\n            return x\n        seen.add(x)\n    return -1\n\nprint(first_dup([1, 2, 2]))"
	text, ok := keepAnswer("make sure f still works quickly on much larger inputs", code, "`first_dup`", "first_dup", false)
	if !ok || !strings.HasPrefix(text, "No change is needed") {
		t.Errorf("got %q, want a kept answer that says no change is needed", text)
	}
}

// TestSummaryClaimsOnlyTheCodesCall: the summary after an answer's code
// names an example call only where the code makes one, and a first check
// in the task only where the task shows one.
func TestSummaryClaimsOnlyTheCodesCall(t *testing.T) {
	const f = "def add(a, b):\n    return a + b"
	if got := after("`add`", f, 2); strings.Contains(got, "call at the end") {
		t.Errorf("after() of code with no call: %q", got)
	}
	if got := after("`add`", f+"\n\nprint(add(1, 2))", 2); !strings.Contains(got, "`a`, `b`") {
		t.Errorf("after() of code with a call: %q, want its arguments named", got)
	}
	if got := firstCheck("Write a function to add two numbers."); strings.Contains(got, "in the task") {
		t.Errorf("firstCheck of a task with no example: %q", got)
	}
}
