package llmtest

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
)

func TestKeepAnswer(t *testing.T) {
	const (
		sumList = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total"
		pairs   = "def f(xs):\n    n = 0\n    for i in range(len(xs)):\n        for j in range(i):\n            if xs[i] == xs[j]:\n                n += 1\n    return n"
		fib     = "def f(n):\n    if n < 2:\n        return n\n    return f(n - 1) + f(n - 2)"
		squares = "def f(n):\n    return [i * i for i in range(n)]"
		fstring = "def f(name):\n    return f\"hello {name}\""
		longIf  = "def f(a, b, c):\n    if a > 0 and b > 0 and c > 0 and a + b > c and a + c > b and b + c > a:\n        return True\n    return False"
	)
	for _, tc := range []struct {
		name, request, code string
		ok                  bool
		says                string
	}{
		{"layout, short condition", "use a clearer layout for the condition in f", fib, true, "`n < 2` fits on one line"},
		{"layout, no condition", "use a clearer layout for the condition in f", sumList, true, "has no condition"},
		{"layout, long condition", "use a clearer layout for the condition in f", longIf, true, "        and c > 0\n"},
		{"older python", "avoid features in f that older python versions lack", sumList, true, "exists in Python 3.5"},
		{"older python with a match statement", "avoid features in f that older python versions lack", "def f(x):\n    match x:\n        case 1:\n            return 'one'\n    return 'other'", false, ""},
		{"older python with an f-string", "avoid features in f that older python versions lack", fstring, false, ""},
		{"memory, counters only", "keep the memory f uses small for long inputs", sumList, true, "keeps only single values"},
		{"memory, builds a list", "keep the memory f uses small for long inputs", squares, true, "unchanged because keeping its memory small"},
		{"recomputing, a call twice per pass", "avoid recomputing values inside f", "def f(xs):\n    best = 0\n    for x in xs:\n        if abs(x) > best:\n            best = abs(x)\n    return best", true, "        abs_x = abs(x)\n        if abs_x > best:\n"},
		{"recomputing, one loop", "avoid recomputing values inside f", sumList, true, "no recursion, no nested loop and no call its loop makes twice"},
		{"recomputing, recursion", "avoid recomputing values inside f", fib, true, "unchanged because avoiding recomputed values"},
		{"larger inputs, one loop", "make sure f still works quickly on much larger inputs", sumList, true, "single pass"},
		{"larger inputs, nested loops", "make sure f still works quickly on much larger inputs", pairs, true, "unchanged because making it faster"},
		{"faster, no loop", "can you make f faster or lighter on memory for very large inputs", "def f(a, b):\n    return a * b", true, "no loop and no recursion"},
		{"a call after the def is no recursion", "avoid recomputing values inside f", sumList + "\n\nprint(f([1, 2]))\nassert f([3]) == 3", true, "no recursion, no nested loop and no call its loop makes twice"},
		{"a companion function is not f", "make sure f still works quickly on much larger inputs",
			"def f(a, b):\n    return a * b\n\n\ndef f_all(cases):\n    return [f(*args) for args in cases]", true, "no loop and no recursion"},
		{"larger inputs, a comprehension is a loop", "make sure f still works quickly on much larger inputs", "def f(nums, N):\n    result = [i[N] for i in nums]\n    return result", true, "makes a single pass"},
		{"larger inputs, the work left to sorted", "make sure f still works quickly on much larger inputs", "def f(M):\n    return sorted(M, key=sum)", true, "leaves the work over its input to `sorted`, which Python runs in C"},
		{"larger inputs, loops one after another", "make sure f still works quickly on much larger inputs",
			"def f(arr, n):\n    for i in range(n):\n        arr[i] = abs(arr[i])\n    for i in range(n):\n        if arr[i] == 0:\n            return i\n    return n", true, "makes 2 passes one after another"},
		{"not such a request", "add a docstring to f that says what it returns", sumList, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := keepAnswer(tc.request, tc.code, "`f`", "f", false)
			if ok != tc.ok || !strings.Contains(got, tc.says) {
				t.Fatalf("keepAnswer = %q, %v; want %v and an answer saying %q", got, ok, tc.ok, tc.says)
			}
			if changed := strings.Contains(tc.name, "long condition") || strings.Contains(tc.name, "twice per pass"); ok && changed == strings.Contains(got, block(tc.code)) {
				t.Errorf("keepAnswer = %q, want the code unchanged unless a long condition is laid out anew or a repeated call stored", got)
			}
			// A good model's reason passes the simulate stage's check.
			if ok && strings.Contains(got, block(tc.code)) && !gates.KeepsForRequest(tc.request, got) {
				t.Errorf("gates.KeepsForRequest(%q, %q) = false, want true", tc.request, got)
			}
			if s := gates.FalseComputedOnce(got, lastCode(got)); s != "" {
				t.Errorf("a false computed-once claim: %q", s)
			}
			if s := gates.FalseOnePass(got, tc.code); s != "" {
				t.Errorf("a false one-pass claim: %q", s)
			}
		})
	}
}

func TestSplitCondition(t *testing.T) {
	for _, tc := range []struct {
		name, code, cond, want string
		ok                     bool
	}{
		{"and", "def f(a, b):\n    if a > 0 and b > 0:\n        return 1\n    return 0", "a > 0 and b > 0",
			"def f(a, b):\n    if (a > 0\n            and b > 0):\n        return 1\n    return 0", true},
		{"or in a call and a string stay", "def f(s, t):\n    while g(s or t) and s != ' or ' or t:\n        s = s[1:]", "g(s or t) and s != ' or ' or t",
			"def f(s, t):\n    while (g(s or t)\n            and s != ' or '\n            or t):\n        s = s[1:]", true},
		{"one clause", "def f(a):\n    if a > 0:\n        return 1", "a > 0", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := splitCondition(tc.code, tc.cond)
			if got != tc.want || ok != tc.ok {
				t.Errorf("splitCondition = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestEmptyArg(t *testing.T) {
	for args, want := range map[string]int{
		"[], 3":          0,
		"[1, 2], ''":     1,
		"'a,b', ()":      1,
		"f([]), 2":       -1,
		`"x", {}, [0]`:   1,
		"(1, [2, 3]), 4": -1,
	} {
		if got := emptyArg(args); got != want {
			t.Errorf("emptyArg(%q) = %d, want %d", args, got, want)
		}
	}
}

func TestExplainDoc(t *testing.T) {
	const ways = "def count_ways(n):\n    A = [0] * (n + 1)\n    for i in range(2, n + 1):\n        A[i] = A[i - 2] + 1\n    return A[n]\n\nprint(count_ways(4))"
	for _, tc := range []struct {
		name, code string
		how        bool
		want       string
	}{
		{"how", ways, true, "How it works: `A` starts as `[0] * (n + 1)`. A loop takes `i` from `range(2, n + 1)` and updates `A[i]`. It returns `A[n]`."},
		{"what it returns", ways, false, "Return `A[n]`, the result the task asks for."},
		{"what a name returned is", "def f(nums, N):\n    result = [i[N] for i in nums]\n    return result", false, "Return `result`, built as `[i[N] for i in nums]`."},
		{"recursion", "def power(a, b):\n    if b == 0:\n        return 1\n    return a * power(a, b - 1)", true,
			"How it works: if `b == 0`, it returns `1` at once, the case that ends the recursion. Otherwise it returns `a * power(a, b - 1)`, calling itself."},
		{"stray spaces and semicolons", "def f(L, R):\n    count = 0\n    for i in range(L,R + 1) :\n        count += i\n    return count;", true,
			"How it works: `count` starts as `0`. A loop takes `i` from `range(L,R + 1)` and updates `count`. It returns `count`."},
		{"a search that returns early, with a library call", "import math\ndef is_not_prime(n):\n    for i in range(2, int(math.sqrt(n)) + 1):\n        if n % i == 0:\n            return True\n    return False", true,
			"How it works: a loop takes `i` from `range(2, int(math.sqrt(n)) + 1)`, returning `True` as soon as `n % i == 0`. It returns `False`. `sqrt` bounds the search by the square root."},
		{"one line", "def is_coprime(x, y):\n    return gcd(x, y) == 1", true,
			"How it works: it returns `gcd(x, y) == 1`. `gcd` is the greatest common divisor."},
		{"if, elif and else", "def lcs(X, Y, m, n):\n    if m == 0 or n == 0:\n       return 0\n    elif X[m-1] == Y[n-1]:\n       return 1 + lcs(X, Y, m-1, n-1)\n    else:\n       return max(lcs(X, Y, m, n-1), lcs(X, Y, m-1, n))", true,
			"How it works: if `m == 0 or n == 0`, it returns `0` at once, the case that ends the recursion. If instead `X[m-1] == Y[n-1]`, it returns `1 + lcs(X, Y, m-1, n-1)`, calling itself. Otherwise it returns `max(lcs(X, Y, m, n-1), lcs(X, Y, m-1, n))`, calling itself."},
		{"a space before the parenthesis", "def helper(a, b):\n    return a\n\ndef common_prefix (arr, n):\n    prefix = arr[0]\n    for i in range (1, n):\n        prefix = helper(prefix, arr[i])\n    return (prefix)", true,
			"How it works: `prefix` starts as `arr[0]`. A loop takes `i` from `range (1, n)` and updates `prefix`. It returns `(prefix)`."},
		{"while and two returns", "def f(x):\n    while x > 9:\n        x //= 10\n    if x:\n        return x\n    return 0", true,
			"How it works: a loop repeats while `x > 9` and updates `x`. If `x`, it returns `x`. Otherwise it returns `0`."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := fnName(tc.code)
			if got := explainDoc(tc.code, strings.Trim(fn, "`"), tc.how); got != tc.want {
				t.Errorf("explainDoc = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKeepRegexSpeed: a regular expression goes over its input in C; the
// answer does not say the steps stay the same whatever the input's size.
func TestKeepRegexSpeed(t *testing.T) {
	code := "import re\ndef text_match(text):\n  patterns = '^[a-z]+_[a-z]+$'\n  if re.search(patterns,  text):\n    return 'Found a match!'\n  else:\n    return 'Not matched!'"
	a, ok := keepAnswer("make sure f still works quickly on much larger inputs", code, "`text_match`", "text_match", false)
	if !ok || strings.Contains(a, "the same few steps whatever the size") || !strings.Contains(a, "`re.search`") {
		t.Errorf("keepAnswer = %q, want the work over the input left to `re.search`", a)
	}
}
