package gates

import "testing"

func TestReducibleMemory(t *testing.T) {
	const countWays = "def count_ways(n):\n    A = [0] * (n + 1)\n    B = [0] * (n + 1)\n    A[0] = 1\n    A[1] = 0\n    B[0] = 0\n    B[1] = 1\n    for i in range(2, n+1):\n        A[i] = A[i - 2] + 2 * B[i - 1]\n        B[i] = A[i - 1] + B[i - 2]\n    return A[n]"
	for _, tc := range []struct{ name, code, want string }{
		{"a list only summed", "def f(xs):\n    return sum([x * x for x in xs])", "sum([x * x for x in xs])"},
		{"a generator already", "def f(xs):\n    return sum(x * x for x in xs)", ""},
		{"a table read two back", countWays, "A"},
		{"a table read further back", "def f(n):\n    A = [0] * (n + 1)\n    A[1] = 1\n    for i in range(2, n + 1):\n        A[i] = A[i - 1] + A[i // 2]\n    return A[n]", ""},
		{"a table returned whole", "def f(n):\n    A = [0] * (n + 1)\n    for i in range(2, n + 1):\n        A[i] = A[i - 1] + 1\n    return A", ""},
		{"no table", "def f(n):\n    return n + 1", ""},
	} {
		if got := ReducibleMemory(tc.code); got != tc.want {
			t.Errorf("%s: ReducibleMemory = %q, want %q", tc.name, got, tc.want)
		}
	}
}
