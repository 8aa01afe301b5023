package neighbors

import (
	"math/rand/v2"
)

// Grouping says how neighbours become dialogues.
type Grouping struct {
	// Sizes are the dialogue sizes to draw from (each equally likely), e.g.
	// [2, 3]: the seed query plus one or two of its neighbours.
	Sizes []int
	// Floor is the least cosine similarity between a seed and a neighbour
	// joining its dialogue.
	Floor float32
	// Seed makes the seed order and size draws reproducible.
	Seed uint64
}

// Group builds dialogues from each query's nearest neighbours (nbrs[i],
// best first). Seeds are visited in an order shuffled by g.Seed; a seed not
// yet used takes its still-unused neighbours at or above the floor, most
// similar first, up to a drawn size. Every query is used at most once. A
// seed with no unused neighbour left stays available as someone else's
// neighbour; queries in no group are returned as leftovers, in input order.
// Each group lists the seed first, then its neighbours by similarity.
func (g Grouping) Group(nbrs [][]Neighbor) (groups [][]int, leftovers []int) {
	n := len(nbrs)
	rng := rand.New(rand.NewPCG(g.Seed, 0xbb67ae8584caa73b))
	used := make([]bool, n)
	for _, s := range rng.Perm(n) {
		if used[s] {
			continue
		}
		size := g.Sizes[rng.IntN(len(g.Sizes))]
		grp := []int{s}
		for _, nb := range nbrs[s] {
			if len(grp) >= size {
				break
			}
			if nb.Sim < g.Floor || used[nb.ID] || int(nb.ID) == s {
				continue
			}
			grp = append(grp, int(nb.ID))
		}
		if len(grp) < 2 {
			continue
		}
		for _, m := range grp {
			used[m] = true
		}
		groups = append(groups, grp)
	}
	for i, u := range used {
		if !u {
			leftovers = append(leftovers, i)
		}
	}
	return groups, leftovers
}

// MeanCohesion is the mean over groups of the mean pairwise cosine
// similarity of a group's members.
func MeanCohesion(vecs [][]float32, groups [][]int) float64 {
	return FromDense(vecs).MeanCohesion(groups)
}

// MeanCohesion is MeanCohesion on the set.
func (v *Vectors) MeanCohesion(groups [][]int) float64 {
	if len(groups) == 0 {
		return 0
	}
	total := 0.0
	for _, g := range groups {
		sum, pairs := 0.0, 0
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				sum += float64(v.Dot(g[i], g[j]))
				pairs++
			}
		}
		if pairs > 0 {
			total += sum / float64(pairs)
		}
	}
	return total / float64(len(groups))
}

// RandomGroups draws groups of the same sizes as groups from all n queries
// uniformly (without repeats inside a group), as the baseline for
// MeanCohesion.
func RandomGroups(n int, groups [][]int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed, 0x3c6ef372fe94f82b))
	out := make([][]int, 0, len(groups))
	for _, g := range groups {
		if n < len(g) {
			break
		}
		r := make([]int, 0, len(g))
		for len(r) < len(g) {
			x := rng.IntN(n)
			dup := false
			for _, y := range r {
				dup = dup || y == x
			}
			if !dup {
				r = append(r, x)
			}
		}
		out = append(out, r)
	}
	return out
}
