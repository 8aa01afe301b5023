package correct

import "testing"

func TestTakes(t *testing.T) {
	for _, tc := range []struct{ fn, code, want string }{
		{"find_Product", "def find_Product(arr, n):\n    return 1", "`find_Product` takes `arr` and `n`; a first implementation:"},
		{"f", "def f(a, b=2, *rest, **kw):\n    pass", "`f` takes `a`, `b`, `rest` and `kw`; a first implementation:"},
		{"g", "function g(xs) { return xs.length; }", "`g` takes `xs`; a first implementation:"},
		{"h", "def h():\n    return 0", "I'll write `h` and let the tests below judge it:"},
		{"m", "class C:\n    def m(self):\n        return 0", "I'll write `m` and let the tests below judge it:"},
	} {
		if got := takes(tc.fn, tc.code); got != tc.want {
			t.Errorf("takes(%q) = %q, want %q", tc.fn, got, tc.want)
		}
	}
}

// TestTakesUnlessPlanted: a planted rename of a parameter is not named as
// the plan.
func TestTakesUnlessPlanted(t *testing.T) {
	const fixed = "def count_ways(n):\n    return n"
	if got, want := takesUnlessPlanted("count_ways", "def count_ways(ns):\n    return n", fixed), "I'll write `count_ways` and let the tests below judge it:"; got != want {
		t.Errorf("renamed parameter: got %q, want %q", got, want)
	}
	if got, want := takesUnlessPlanted("count_ways", "def count_ways(n):\n    return n + 1", fixed), "`count_ways` takes `n`; a first implementation:"; got != want {
		t.Errorf("same parameters: got %q, want %q", got, want)
	}
}
