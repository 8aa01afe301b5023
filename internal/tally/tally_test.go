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
