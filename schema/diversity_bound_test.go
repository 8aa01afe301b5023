package schema

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// openingFields is opening as it was: strings.Fields over the first line.
func openingFields(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	w := strings.Fields(line)
	if len(w) > 6 {
		w = w[:6]
	}
	return strings.Join(w, " ")
}

func TestOpeningMatchesFields(t *testing.T) {
	for _, s := range []string{"", "   ", "one", "  a  b\tc\u00a0d e f g h\nnext line", "x\ny", "\xff\xfe a \u2003 b",
		"Sure! Here is the code:\n```python", "a b c d e f", "a b c d e f g", "\n\n  lead\n"} {
		if got, want := opening(s), openingFields(s); got != want {
			t.Errorf("opening(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzOpening(f *testing.F) {
	f.Add("Sure! Here is the code:\n```python")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := opening(s), openingFields(s); got != want {
			t.Errorf("opening(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestDiversityBounded: past the exact bounds, distinct counts are estimates
// within 3% and flagged, and frequent openings keep their counts while
// millions of one-off openings are dropped.
func TestDiversityBounded(t *testing.T) {
	defer func(e, o int) { maxExact, maxOpenings = e, o }(maxExact, maxOpenings)
	// Well past the sketch's 2^14 registers, where its estimate is unbiased.
	maxExact, maxOpenings = 1<<16, 1<<12
	n := 200_000
	var dv Diversity
	for i := 0; i < n; i++ {
		d := Dialogue{Messages: []Message{
			{Role: RoleUser, Content: fmt.Sprint("question ", i)},
			{Role: RoleAssistant, Content: fmt.Sprint("Sure thing, here it is ", i%3)},
			{Role: RoleAssistant, Content: fmt.Sprint("unique opening number ", i, " and more words")},
		}}
		dv.Add(&d)
	}
	s := dv.Summary(5)
	if !s.Estimated {
		t.Errorf("summary not flagged as estimated past %d distinct texts", maxExact)
	}
	// Standard error 0.81%: 3% is beyond 3.5 of them.
	if e := math.Abs(float64(s.DistinctFirstUser)-float64(n)) / float64(n); e > 0.03 {
		t.Errorf("distinct first user turns %d, want %d within 3%% (off %.2f%%)", s.DistinctFirstUser, n, 100*e)
	}
	if dv.openings.len() > maxOpenings {
		t.Errorf("%d openings kept, bound %d", dv.openings.len(), maxOpenings)
	}
	if len(s.TopOpenings) != 3 {
		t.Fatalf("top openings %+v, want the 3 repeated ones", s.TopOpenings)
	}
	for _, o := range s.TopOpenings {
		if !strings.HasPrefix(o.Text, "Sure thing") || o.Count < n/3-2 || o.Count > n/3+1 {
			t.Errorf("opening %+v, want a 'Sure thing' opening counted about %d times", o, n/3)
		}
	}
	var small Diversity
	for i := 0; i < 1000; i++ {
		small.Add(&Dialogue{Messages: []Message{{Role: RoleUser, Content: fmt.Sprint(i % 700)}}})
	}
	if s := small.Summary(5); s.Estimated || s.DistinctFirstUser != 700 {
		t.Errorf("small corpus: %+v, want exactly 700 distinct, not estimated", s)
	}
}
