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
