package schema

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// sortedDist is what Dist replaces: every value kept and sorted.
func sortedDist(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	sum := 0
	for _, x := range s {
		sum += x
	}
	p := func(q float64) int { return s[int(q*float64(len(s)-1))] }
	return fmt.Sprintf("min %d  p50 %d  p90 %d  p99 %d  max %d  mean %.1f", s[0], p(0.5), p(0.9), p(0.99), s[len(s)-1], float64(sum)/float64(len(s)))
}

func TestDistMatchesSortedValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n, max int
	}{{0, 1}, {1, 1}, {2, 10}, {7, 3}, {100, 1000}, {1001, 5}, {50000, 100000}, {3000, 1 << 20}} {
		// d counts every value; parts count them split three ways and
		// are merged, as inspect merges its row groups.
		var d, merged Dist
		var parts [3]Dist
		var vals []int
		for i := 0; i < c.n; i++ {
			v := r.IntN(c.max + 1)
			d.Add(v)
			parts[r.IntN(3)].Add(v)
			vals = append(vals, v)
		}
		for i := range parts {
			merged.Merge(&parts[i])
		}
		want := sortedDist(vals)
		if got := d.String(); got != want {
			t.Errorf("n=%d max=%d: %s, want %s", c.n, c.max, got, want)
		}
		if got := merged.String(); got != want {
			t.Errorf("n=%d max=%d merged: %s, want %s", c.n, c.max, got, want)
		}
	}
}
