package gates

import "testing"

const pairCode = "def f(A, N):\n    return N\n\nprint(f([1, 2], 2))\n\n\ndef f_all(cases):\n    \"\"\"Apply f to each case.\"\"\"\n    return [f(*args) for args in cases]\n"

func TestUncalledClaim(t *testing.T) {
	for _, tc := range []struct {
		name, text, code string
		also             []string
		want             bool
	}{
		{"companion never called", "The output confirms that `f_all` handles the request correctly.", pairCode, nil, true},
		{"companion called", "The output confirms that `f_all` handles the request correctly.", pairCode + "\nprint(f_all([([1, 2], 2)]))\n", nil, false},
		{"the called function", "The output confirms that `f` handles the request correctly.", pairCode, nil, false},
		{"called through another function", "The run shows `helper` works.", "def helper(x):\n    return x\n\ndef g(x):\n    return helper(x)\n\nprint(g(1))", nil, false},
		{"called by the harness", "All 3 tests pass, so `f_all` does what the task asks.", pairCode, []string{"f_all"}, false},
		{"says it only defines it", "The code ran without errors and printed nothing, because it only defines `f_all`.", pairCode, nil, false},
		{"no run claim", "`f_all` takes a list of argument tuples.", pairCode, nil, false},
		{"a name in a code block", "The output confirms it.\n\n```python\nf_all([])\n```", pairCode, nil, false},
		{"recursion alone does not call it", "The output shows `r` works.", "def r(n):\n    return 1 if n < 2 else r(n - 1)\n", nil, true},
	} {
		if got := UncalledClaim(tc.text, tc.code, tc.also...) != ""; got != tc.want {
			t.Errorf("%s: UncalledClaim = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRepeatedCall(t *testing.T) {
	for _, tc := range []struct {
		name, code, want string
	}{
		{"condition and assignment", "def len_log(list1):\n    max=len(list1[0])\n    for i in list1:\n        if len(i)>max:\n            max=len(i)\n    return max", "len(i)"},
		{"stored once", "def len_log(list1):\n    m = len(list1[0])\n    for i in list1:\n        n = len(i)\n        if n > m:\n            m = n\n    return m", ""},
		{"header runs once", "def f(xs):\n    for i in range(len(xs)):\n        print(len(xs))\n    return 0", ""},
		{"while condition runs every pass", "def f(xs, n):\n    while len(xs) > n:\n        n += len(xs)\n    return n", "len(xs)"},
		{"argument changes in the body", "def f(xs):\n    while len(xs) > 1:\n        xs = xs[1:]\n        print(len(xs))\n    return xs", ""},
		{"argument mutated in the body", "def f(out, xs):\n    for x in xs:\n        print(len(out))\n        out.append(x)\n        print(len(out))", ""},
		{"side effects are not pure", "def f(xs):\n    for x in xs:\n        a = xs.pop()\n        b = xs.pop()", ""},
		{"outside any loop", "def f(xs):\n    a = len(xs)\n    b = len(xs)\n    return a + b", ""},
		{"in a comment", "def f(xs):\n    for x in xs:\n        y = abs(x)  # abs(x) again\n    return y", ""},
	} {
		if got := RepeatedCall(tc.code); got != tc.want {
			t.Errorf("%s: RepeatedCall = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFalseComputedOnce(t *testing.T) {
	const twice = "def f(xs):\n    best = 0\n    for x in xs:\n        if abs(x) > best:\n            best = abs(x)\n    return best"
	const once = "def f(xs):\n    best = 0\n    for x in xs:\n        a = abs(x)\n        if a > best:\n            best = a\n    return best"
	for _, tc := range []struct {
		name, text, code string
		want             bool
	}{
		{"false claim", "No change is needed to avoid recomputing values: `f` has no recursion and no nested loop, so each value it derives is computed once.", twice, true},
		{"another wording", "No change is needed: `f` never recomputes anything.", twice, true},
		{"true claim", "No change is needed: each value it derives is computed once.", once, false},
		{"no claim", "`f` keeps the largest magnitude seen so far.", twice, false},
		{"claim inside code only", "Here it is.\n\n```python\n# computed once\n```", twice, false},
	} {
		if got := FalseComputedOnce(tc.text, tc.code) != ""; got != tc.want {
			t.Errorf("%s: FalseComputedOnce = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUncalledNew(t *testing.T) {
	const before = "def f(A, N):\n    return N\n\nprint(f([1, 2], 2))\n"
	for _, tc := range []struct {
		name, after, text string
		also              []string
		want              string
	}{
		{"companion never called", pairCode, "I added `f_all`, which applies `f` to each case.", nil, "f_all"},
		{"companion called", pairCode + "\nprint(f_all([([1, 2], 2)]))\n", "I added `f_all`.", nil, ""},
		{"said not called", pairCode, "I added `f_all`; the run does not call it, so nothing below tests it.", nil, ""},
		{"said of another function", pairCode, "I added `f_all`. The run does not call `g`.", nil, "f_all"},
		{"new helper called by the old function", "def h(x):\n    return x\n\ndef f(A, N):\n    return h(N)\n\nprint(f([1, 2], 2))\n", "`h` is a helper.", nil, ""},
		{"called by the harness", pairCode, "I added `f_all`.", []string{"f_all"}, ""},
		{"old function uncalled is not new", "def f(A, N):\n    return N\n", "`f` returns N.", nil, ""},
		{"a nested def is not top level", "def f(A, N):\n    def g():\n        return N\n    return g()\n\nprint(f([1, 2], 2))\n", "ok", nil, ""},
	} {
		if got := UncalledNew(before, tc.after, tc.text, tc.also...); got != tc.want {
			t.Errorf("%s: UncalledNew = %q, want %q", tc.name, got, tc.want)
		}
	}
}
