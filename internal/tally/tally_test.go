package tally

import "testing"

func TestJoin(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"ints, ties by key", Join(map[string]int{"b": 2, "a": 2, "c": 5}, "%s (%d)", "-"), "c (5), a (2), b (2)"},
		{"floats", Join(map[string]float64{"x": 1, "y": 3}, "%s %.0f", "none"), "y 3, x 1"},
		{"empty", Join(map[string]int{}, "%s %d", "none recorded"), "none recorded"},
		{"nil, no stand-in", Join[int](nil, "%s %d", ""), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestCommon(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []int
		want int
	}{
		{"disjoint", []int{1, 3}, []int{2, 4}, 0},
		{"subset", []int{1, 2, 3}, []int{2, 3}, 2},
		{"repeats count as a multiset", []int{1, 1, 1, 2}, []int{1, 1, 2, 2}, 3},
		{"one empty", nil, []int{1}, 0},
		{"tail of one past the other", []int{5, 9}, []int{1, 2, 9}, 1},
	} {
		if got := Common(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Common(%v, %v) = %d, want %d", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := Common(tc.b, tc.a); got != tc.want {
			t.Errorf("%s: Common is not symmetric: %d", tc.name, got)
		}
	}
	if got := Common([]string{"a", "b", "d"}, []string{"b", "c", "d"}); got != 2 {
		t.Errorf("strings: got %d, want 2", got)
	}
}
