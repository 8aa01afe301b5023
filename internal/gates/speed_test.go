package gates

import "testing"

func TestLowerCost(t *testing.T) {
	const (
		fib     = "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint(fib(10))"
		fibMemo = "import functools\n\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint(fib(10))"
		common  = "def common(a, b):\n    out = []\n    for x in a:\n        if x in b:\n            out.append(x)\n    return out"
		commonS = "def common(a, b):\n    seen = set(b)\n    out = []\n    for x in a:\n        if x in seen:\n            out.append(x)\n    return out"
		// a fake: the same loop and scan, the result kept in a variable
		commonF = "def common(a, b):\n    out = []\n    for x in a:\n        if x in b:\n            out.append(x)\n    result = out\n    return result"
		pairs   = "def pairs(xs):\n    n = 0\n    for i in range(len(xs)):\n        for j in range(i):\n            n += xs[i] == xs[j]\n    return n"
		mul     = "def mul(x, y):\n    if y < 0:\n        return -mul(x, -y)\n    elif y == 0:\n        return 0\n    return x + mul(x, y - 1)"
		mulMemo = "import functools\n\n@functools.lru_cache(maxsize=None)\n" + mul
		pairsC  = "from collections import Counter\n\ndef pairs(xs):\n    c = Counter(xs)\n    n = 0\n    for v in c.values():\n        n += v * (v - 1) // 2\n    return n"
	)
	for _, c := range []struct {
		name, before, after string
		want                bool
	}{
		{"memoized recursion", fib, fibMemo, true},
		{"set instead of list scan", common, commonS, true},
		{"counter instead of nested loop", pairs, pairsC, true},
		{"same work, renamed result", common, commonF, false},
		{"unchanged", fib, fib, false},
		{"a cache on a recursion with one call per branch", mul, mulMemo, false},
		{"slower", commonS, common, false},
	} {
		if got := LowerCost(c.before, c.after); got != c.want {
			t.Errorf("%s: LowerCost = %v, want %v (cost before %d, after %d)", c.name, got, c.want, cost(c.before), cost(c.after))
		}
	}
	if ClaimsSpeedup("This version is faster: it keeps the result in a variable.\n\n```python\nx = 1\n```") == "" {
		t.Errorf("ClaimsSpeedup missed \"is faster\"")
	}
	if ClaimsSpeedup("The memory grows with one side of the grid instead of its area.") != "" {
		t.Errorf("ClaimsSpeedup took a memory claim for a speed claim")
	}
}
