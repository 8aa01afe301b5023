package gates

import "testing"

func TestNamesPurpose(t *testing.T) {
	const minCost = "Write a function to find the minimum cost path to reach (m, n) from (0, 0) for the given cost matrix cost[][] and a position (m, n) in cost[][].\nassert min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2) == 8"
	for _, tc := range []struct {
		name, text, request string
		want                bool
	}{
		{"structure only", "`min_cost` runs one loop inside another, so it goes over its input more than once. `tc` starts as `[[0 for x in range(C)] for x in range(R)]`. It returns `tc[m][n]`.", minCost, false},
		{"purpose in the task's words", "`min_cost` finds the cheapest path from the top-left corner: each entry of `tc` is the least cost to reach that cell.", minCost, true},
		{"stems meet", "It counts the vowels.", "Write a function to count vowels in a string.", true},
		{"names only in backquotes", "`count_vowels` returns `n`.", "Write a function to count vowels in a string.", false},
		{"a request with no content word", "`f` returns its argument.", "Write a function.", true},
	} {
		if got := NamesPurpose(tc.text, tc.request); got != tc.want {
			t.Errorf("%s: NamesPurpose = %v, want %v (request words %v, text words %v)", tc.name, got, tc.want, contentWords(tc.request), contentWords(tc.text))
		}
	}
}
