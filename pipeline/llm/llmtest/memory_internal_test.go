package llmtest

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// TestLessMemory: asked for less memory, the persona changes the code
// where its lines allow an exact change, and only there; the change is
// a change of the code for the product's check.
func TestLessMemory(t *testing.T) {
	const ways = "def count_ways(n): \n\tA = [0] * (n + 1) \n\tB = [0] * (n + 1) \n\tA[0] = 1\n\tA[1] = 0\n\tB[0] = 0\n\tB[1] = 1\n\tfor i in range(2, n+1): \n\t\tA[i] = A[i - 2] + 2 * B[i - 1] \n\t\tB[i] = A[i - 1] + B[i - 2] \n\treturn A[n] \n\nprint(count_ways(8))"
	for _, tc := range []struct {
		name, code, fn, want string
		ok                   bool
	}{
		{"two tables", ways, "count_ways",
			"def count_ways(n): \n\t# A1 and B1: the entries i - 1 of the former tables; A2 and B2: the entries i - 2.\n\tA2, A1 = 1, 0\n\tB2, B1 = 0, 1\n\tfor i in range(2, n + 1):\n\t\tnew_A, new_B = A2 + 2 * B1, A1 + B2\n\t\tA2, A1 = A1, new_A\n\t\tB2, B1 = B1, new_B\n\treturn A1 if n >= 1 else A2\n\nprint(count_ways(8))", true},
		{"a step reads the entry it is beside", "def f(n):\n    A = [0] * (n + 1)\n    A[1] = 1\n    for i in range(2, n + 1):\n        A[i] = A[i - 1] + A[i - 2] + A[i // 2]\n    return A[n]", "f", "", false},
		{"a list summed", "def f(xs):\n    return sum([x * x for x in xs])", "f", "def f(xs):\n    return sum(x * x for x in xs)", true},
		{"a list gone through once", "def f(ls):\n    flat = [x for l in ls for x in l]\n    n = 0\n    for x in flat:\n        n += x\n    return n", "f",
			"def f(ls):\n    flat = (x for l in ls for x in l)\n    n = 0\n    for x in flat:\n        n += x\n    return n", true},
		{"a list gone through twice", "def f(ls):\n    flat = [x for l in ls for x in l]\n    for x in flat:\n        pass\n    return len(flat)", "f", "", false},
		{"a documented table: the docstring is written anew", "def f(n):\n    \"\"\"How it works: `A` starts as `[0] * (n + 1)`.\"\"\"\n    A = [0] * (n + 1)\n    A[1] = 1\n    for i in range(2, n + 1):\n        A[i] = A[i - 1] + A[i - 2]\n    return A[n]", "f",
			"def f(n):\n    \"\"\"How it works: a loop takes `i` from `range(2, n + 1)` and updates `new_A` and `A2, A1`. It returns `A1 if n >= 1 else A2`.\"\"\"\n    # A1: the entries i - 1 of the former tables; A2: the entries i - 2.\n    A2, A1 = 0, 1\n    for i in range(2, n + 1):\n        new_A = A1 + A2\n        A2, A1 = A1, new_A\n    return A1 if n >= 1 else A2", true},
		{"a list returned", "def f(xs):\n    return [x * x for x in xs]", "f", "", false},
	} {
		got, _, ok := lessMemory(tc.code, tc.fn)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: lessMemory = %q, %v\nwant %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
		if ok && gates.SameLogic(tc.code, got) {
			t.Errorf("%s: the product's check sees no change", tc.name)
		}
	}
	for _, ask := range []string{"keep the memory f uses small for long inputs", "can you make f faster or lighter on memory for very large inputs"} {
		a, ok := keepAnswer(ask, ways, "`count_ways`", "count_ways", false)
		if !ok || !strings.Contains(a, "the tables `A` and `B`, which grew with the input, can go") {
			t.Errorf("%s: keepAnswer = %q, want the tables replaced", ask, a)
		}
		if r := gates.ReducibleMemory(lastCode(a)); r != "" {
			t.Errorf("%s: the product's check still finds %q reducible in\n%s", ask, r, lastCode(a))
		}
		// declining, it keeps what the product's check finds reducible
		if a, _ := keepAnswer(ask, ways, "`count_ways`", "count_ways", true); gates.ReducibleMemory(lastCode(a)) == "" {
			t.Errorf("%s: the declining answer %q is not caught", ask, a)
		}
	}
}

// TestRollGrid: min_cost's table becomes one row (the pipeline runs the
// rewritten code against MBPP's tests; here its lines are compared).
func TestRollGrid(t *testing.T) {
	const minCost = "R = 3\nC = 3\ndef min_cost(cost, m, n): \n\ttc = [[0 for x in range(C)] for x in range(R)] \n\ttc[0][0] = cost[0][0] \n\tfor i in range(1, m+1): \n\t\ttc[i][0] = tc[i-1][0] + cost[i][0] \n\tfor j in range(1, n+1): \n\t\ttc[0][j] = tc[0][j-1] + cost[0][j] \n\tfor i in range(1, m+1): \n\t\tfor j in range(1, n+1): \n\t\t\ttc[i][j] = min(tc[i-1][j-1], tc[i-1][j], tc[i][j-1]) + cost[i][j] \n\treturn tc[m][n]\n\nprint(min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2))"
	const want = "R = 3\nC = 3\ndef min_cost(cost, m, n): \n\t# row: row i of the former table tc, filled left to right; diag and up: the entries of row i - 1 to the upper left and above.\n\trow = [0] * (n + 1)\n\trow[0] = cost[0][0]\n\tfor j in range(1, n + 1):\n\t\trow[j] = row[j - 1] + cost[0][j]\n\tfor i in range(1, m + 1):\n\t\tdiag = row[0]\n\t\trow[0] = row[0] + cost[i][0]\n\t\tfor j in range(1, n + 1):\n\t\t\tup = row[j]\n\t\t\trow[j] = min(diag, up, row[j - 1]) + cost[i][j]\n\t\t\tdiag = up\n\treturn row[n]\n\nprint(min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2))"
	got, ok := rollGrid(minCost, "min_cost")
	if !ok || got != want {
		t.Errorf("rollGrid = %v\n%s\nwant\n%s", ok, got, want)
	}
	// a step that reads two rows back is not rolled
	if _, ok := rollGrid(strings.Replace(minCost, "tc[i-1][j], tc[i][j-1]", "tc[i-2][j], tc[i][j-1]", 1), "min_cost"); ok {
		t.Error("rollGrid rolled a table whose step reads two rows back")
	}
	a, ok := keepAnswer("can you make f faster or lighter on memory for very large inputs", minCost, "`min_cost`", "min_cost", false)
	if !ok || !strings.Contains(a, "One row now does the work of the whole table") {
		t.Errorf("keepAnswer = %q, want the table rolled into one row", a)
	}
}

func TestCountOnce(t *testing.T) {
	const odd = "def get_Odd_Occurrence(arr,arr_size):   \n    for i in range(0,arr_size): \n        count = 0\n        for j in range(0,arr_size): \n            if arr[i] == arr[j]: \n                count+=1     \n        if (count % 2 != 0): \n            return arr[i]     \n    return -1\n\nprint(get_Odd_Occurrence([1,2,3,1,2,3,1],7))"
	const want = "from collections import Counter\ndef get_Odd_Occurrence(arr,arr_size):   \n    # occurrences: how often each value of arr occurs, counted once\n    occurrences = Counter(arr[:arr_size])\n    for i in range(0,arr_size): \n        count = occurrences[arr[i]]\n        if (count % 2 != 0): \n            return arr[i]     \n    return -1\n\nprint(get_Odd_Occurrence([1,2,3,1,2,3,1],7))"
	got, ok := countOnce(odd, "get_Odd_Occurrence")
	if !ok || got != want {
		t.Errorf("countOnce = %v\n%s\nwant\n%s", ok, got, want)
	}
	for _, ask := range []string{"make sure f still works quickly on much larger inputs", "avoid recomputing values inside f"} {
		if a, ok := keepAnswer(ask, odd, "`get_Odd_Occurrence`", "get_Odd_Occurrence", false); !ok || strings.TrimSpace(lastCode(a)) != want {
			t.Errorf("%s: keepAnswer = %q, want the counts taken once", ask, a)
		}
	}
	// the inner loop does more than count: not rewritten
	if _, ok := countOnce(strings.Replace(odd, "count+=1     ", "count+=1\n                print(j)", 1), "get_Odd_Occurrence"); ok {
		t.Error("countOnce rewrote an inner loop that does more than count")
	}
	// over len(arr), the whole list is counted
	byLen := strings.NewReplacer("range(0,arr_size)", "range(len(arr))").Replace(odd)
	if got, ok := countOnce(byLen, "get_Odd_Occurrence"); !ok || !strings.Contains(got, "occurrences = Counter(arr)\n") {
		t.Errorf("countOnce over len(arr) = %v\n%s", ok, got)
	}
}
