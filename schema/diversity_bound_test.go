package schema

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
		"Sure! Here is the code:\n```python", "a b c d e f", "a b c d e f g", "\n\n  lead\n",
		"a b \nc", "a b c d e f  g", "trailing ", "```python\nx", "x\r\ny", "a\tb c", "six words here and then\u00a0more"} {
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

// TestDiversityMergeMatchesOnePass: dialogues counted in parts (as inspect
// counts row groups) and merged give the figures one pass gives, exactly
// while under the bounds, including texts repeated across parts.
func TestDiversityMergeMatchesOnePass(t *testing.T) {
	for _, parts := range []int{1, 2, 7} {
		var one Diversity
		ps := make([]Diversity, parts)
		for i := 0; i < 30_000; i++ {
			d := Dialogue{Messages: []Message{
				{Role: RoleUser, Content: fmt.Sprint("question ", i%9000)},
				{Role: RoleAssistant, Content: fmt.Sprint("Opening ", i%40, " of a reply\n```python\nx\n```")},
				{Role: RoleAssistant, Content: fmt.Sprint("  closing words ", i%12345, "  ")},
			}}
			if i%3 == 0 {
				d.Model = "m"
			}
			one.Add(&d)
			ps[(i*7919)%parts].Add(&d)
		}
		var merged Diversity
		for i := range ps {
			merged.Merge(&ps[i])
		}
		want, got := one.Summary(5), merged.Summary(5)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%d parts: merged %+v, one pass %+v", parts, got, want)
		}
		if want.DistinctFirstUser != 9000 || want.DistinctClosings != 12345 || want.DistinctCodeless != 12345 || want.Estimated {
			t.Errorf("one pass %+v: want 9000 first turns, 12345 closings and code-less replies, exact", want)
		}
		if len(want.TopOpenings) != 5 || want.TopOpenings[0].Count != 750 {
			t.Errorf("top openings %+v, want 5 of 750 each", want.TopOpenings)
		}
	}
}

// TestDistinctSketchMerge: sets past maxExact become sketches whether they
// grow by adds or by merges, and merging a sketch into exact sets (and the
// reverse) counts the union.
func TestDistinctSketchMerge(t *testing.T) {
	defer func(e int) { maxExact = e }(maxExact)
	maxExact = 1 << 15
	n := 200_000
	var all, a, b distinct
	for i := 0; i < n; i++ {
		h := hash64(fmt.Sprint("text ", i))
		all.add(h)
		if i%8 == 0 {
			a.add(h) // 25,000: a stays exact
		} else {
			b.add(h)
		}
		all.add(h) // repeats count once
	}
	for _, c := range []struct {
		name string
		d    *distinct
		want int
	}{{"all", &all, n}, {"b", &b, 7 * n / 8}} {
		got, est := c.d.count()
		if !est || math.Abs(float64(got-c.want))/float64(c.want) > 0.03 {
			t.Errorf("%s: %d (estimated %v), want about %d, estimated", c.name, got, est, c.want)
		}
	}
	if got, est := a.count(); est || got != n/8 {
		t.Errorf("a: %d (estimated %v), want exactly %d", got, est, n/8)
	}
	var ab, ba distinct
	ab.merge(&a)
	ab.merge(&b)
	ba.merge(&b)
	ba.merge(&a)
	for name, d := range map[string]*distinct{"a+b": &ab, "b+a": &ba} {
		got, est := d.count()
		if !est || math.Abs(float64(got-n))/float64(n) > 0.03 {
			t.Errorf("%s: %d (estimated %v), want about %d", name, got, est, n)
		}
	}
}

func TestSortHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 255, 256, 1000, 100_000} {
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = r.Uint64()
			if i%10 == 9 {
				hs[i] = hs[i-1] // repeats
			}
		}
		want := slices.Clone(hs)
		slices.Sort(want)
		sortHashes(hs, make([]uint64, len(hs)))
		if !slices.Equal(hs, want) {
			t.Errorf("n=%d: not sorted", n)
		}
	}
}
