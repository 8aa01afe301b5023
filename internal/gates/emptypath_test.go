package gates

import "testing"

func TestEmptyCases(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{
		{"    if not xs:\n        return 0", 1},
		{"    if len(xs) == 0:\n        raise ValueError('xs must not be empty')", 1},
		{"    return xs[0] if xs else None", 1},
		{"    if xs == []:\n        return None", 1},
		{"    while stack and stack[-1] < x:\n        stack.pop()", 1},
		{"    try:\n        return xs[0]\n    except IndexError:\n        return None", 1},
		{"    if n % i == 0:\n        return False", 0},
		{"    if a > b:\n        return a", 0},
		{"    for x in xs:\n        total += x\n    return total", 0},
		{"if not xs:\n    pass", 0}, // not inside a function
	} {
		if got := EmptyCases(tc.line); got != tc.want {
			t.Errorf("EmptyCases(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}

func TestNoEmptyPath(t *testing.T) {
	const ask = "Could you make `f` handle an empty input explicitly?"
	for _, tc := range []struct {
		name, code, request string
		want                bool
	}{
		{"a docstring only", "def f(xs):\n    \"\"\"Empty input takes the same path.\"\"\"\n    return sum(xs)", ask, true},
		{"a guard", "def f(xs):\n    if len(xs) == 0:\n        return 0\n    return sum(xs)", ask, false},
		{"a conditional expression", "def f(xs):\n    return xs[0] if xs else None", ask, false},
		{"no collection argument", "def f(n):\n    return n * 2", ask, false},
		{"a collection through a library call", "import heapq\ndef f(nums, n):\n    return heapq.nlargest(n, nums)", ask, true},
		{"a string method", "def f(s):\n    return s.split()", ask, true},
		{"a truthiness test of a number", "def f(xs, n):\n    if not n:\n        return 0\n    return sum(xs[:n])", ask, true},
		{"a while loop over the input", "def f(xs):\n    t = 0\n    while xs:\n        t += xs.pop()\n    return t", ask, true},
		{"a test of a name set from the input", "def f(xs):\n    s = sorted(xs)\n    if s:\n        return s[0]\n    return sum(xs)", ask, false},
		{"a test of a name set otherwise", "def f(xs, n):\n    k = n * 2\n    if not k:\n        return 0\n    return sum(xs)", ask, true},
		{"a test of the later collection argument", "def f(n, xs):\n    if not xs:\n        return n\n    return sum(xs) + n", ask, false},
		{"an except clause", "def f(xs):\n    try:\n        return max(xs)\n    except ValueError:\n        return None", ask, false},
		{"not asked explicitly", "def f(xs):\n    return sum(xs)", "How does `f` handle an empty list?", false},
		{"another request", "def f(xs):\n    return sum(xs)", "Please add tests for `f`.", false},
	} {
		if got := NoEmptyPath(tc.code, tc.request); got != tc.want {
			t.Errorf("%s: NoEmptyPath = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFalseOnePass(t *testing.T) {
	const once = "It works through its input once and returns the value the task describes."
	for _, tc := range []struct {
		name, text, code string
		want             bool
	}{
		{"recursion", once, "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)", true},
		{"nested loops", once, "def f(xs):\n    n = 0\n    for i in range(len(xs)):\n        for j in range(i):\n            n += 1\n    return n", true},
		{"nested comprehension", "It builds the grid in one pass.", "def f(r, c):\n    return [[0 for x in range(c)] for y in range(r)]", true},
		{"two loops in a row", "So `f` makes a single pass over the list.", "def f(xs):\n    for x in xs:\n        pass\n    for x in xs:\n        pass", true},
		{"a while around a for", once, "def f(xs):\n    while xs:\n        for x in xs:\n            pass\n        xs = xs[1:]", true},
		{"a comprehension with a call, inside a loop", once, "def f(xss):\n    out = 0\n    for xs in xss:\n        out += sum([g(x) for x in xs])\n    return out", true},
		{"a while loop alone", once, "def f(n):\n    while n > 9:\n        n //= 10\n    return n", false},
		{"one loop", once, "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t", false},
		{"a demo call after the def is no recursion", once, "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n\nprint(f([1, 2]))", false},
		{"one loop in each of two functions", once, "def f(xs):\n    return [x for x in xs]\n\ndef g(xs):\n    return [f(x) for x in xs]", false},
		{"no such claim", "It calls itself until n is below 2.", "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)", false},
		{"the claim inside code only", "Here.\n\n```python\n# one pass over the input\n```", "def fib(n):\n    return fib(n - 1)", false},
	} {
		if got := FalseOnePass(tc.text, tc.code) != ""; got != tc.want {
			t.Errorf("%s: FalseOnePass = %v, want %v (passes %+v)", tc.name, got, tc.want, CountPasses(tc.code))
		}
	}
}
