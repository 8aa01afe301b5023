package neighbors

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// HNSW is a hierarchical navigable small-world graph (Malkov & Yashunin,
// 2016) over unit vectors, for approximate nearest-neighbour search by
// cosine similarity. It is built by one goroutine in insertion order from a
// seeded random source, so the same vectors and seed give the same graph
// and the same answers; Search is safe for concurrent use once Build
// returns.
type HNSW struct {
	// M is the number of links per node on upper layers (2M on layer 0);
	// EfConstruction the candidate list size while inserting; EfSearch the
	// candidate list size while searching (at least k).
	M, EfConstruction, EfSearch int

	vecs     [][]float32
	sp       []sparse    // vecs in sparse form when most entries are zero, else nil
	links    [][][]int32 // node -> layer -> neighbours
	entry    int32
	maxLevel int
	pool     sync.Pool // *searcher
}

// NewHNSW returns an empty index with the given parameters (zero values
// take 12, 64 and 48, the pack stage's defaults).
func NewHNSW(m, efConstruction, efSearch int) *HNSW {
	if m <= 0 {
		m = 12
	}
	if efConstruction <= 0 {
		efConstruction = 64
	}
	if efSearch <= 0 {
		efSearch = 48
	}
	return &HNSW{M: m, EfConstruction: efConstruction, EfSearch: efSearch, entry: -1}
}

// searcher is one goroutine's scratch space: a visited set by generation
// number and the two heaps.
type searcher struct {
	visited []uint32
	gen     uint32
	cand    []Neighbor // max-heap by similarity: closest first
	res     []Neighbor // min-heap by similarity: worst result on top
}

func (h *HNSW) getSearcher() *searcher {
	s, _ := h.pool.Get().(*searcher)
	if s == nil || len(s.visited) < len(h.vecs) {
		s = &searcher{visited: make([]uint32, len(h.vecs))}
	}
	s.gen++
	if s.gen == 0 { // wrapped: clear
		clear(s.visited)
		s.gen = 1
	}
	return s
}

// Build inserts vecs (unit length, all one dimension) in order. The index
// keeps vecs; callers must not modify them afterwards.
//
// After the first nodes, nodes are inserted in batches: each node of a
// batch searches the graph as it was before the batch (in parallel, the
// costly part), then the batch is linked in one goroutine in node order.
// The graph is therefore the same for the same vectors and seed on any
// number of cores; nodes of one batch just do not see each other while
// searching, which costs no measurable recall at this batch size.
func (h *HNSW) Build(ctx context.Context, vecs [][]float32, seed uint64) error {
	const sequential, batch = 2048, 256
	h.vecs = vecs
	h.sp = toSparse(vecs)
	h.links = make([][][]int32, len(vecs))
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	mult := 1 / math.Log(float64(h.M))
	levels := make([]int, len(vecs))
	for i := range levels {
		levels[i] = int(-math.Log(1-rng.Float64()) * mult)
	}
	for i := 0; i < min(sequential, len(vecs)); i++ {
		h.connect(int32(i), levels[i], h.searchInsert(int32(i), levels[i]))
	}
	found := make([][][]Neighbor, batch)
	for lo := sequential; lo < len(vecs); lo += batch {
		hi := min(lo+batch, len(vecs))
		if err := parallel(ctx, hi-lo, func(j int) {
			found[j] = h.searchInsert(int32(lo+j), levels[lo+j])
		}); err != nil {
			return err
		}
		for j := range hi - lo {
			h.connect(int32(lo+j), levels[lo+j], found[j])
		}
	}
	return ctx.Err()
}

func (h *HNSW) maxLinks(layer int) int {
	if layer == 0 {
		return 2 * h.M
	}
	return h.M
}

// searchInsert finds the link candidates of node q on each of its layers
// present in the graph (index = layer), reading the graph only.
func (h *HNSW) searchInsert(q int32, level int) [][]Neighbor {
	if h.entry < 0 {
		return nil
	}
	s := h.getSearcher()
	defer h.pool.Put(s)
	qv := h.vecs[q]
	ep := Neighbor{ID: h.entry, Sim: h.sim(qv, h.entry)}
	for l := h.maxLevel; l > level; l-- {
		ep = h.greedy(qv, ep, l)
	}
	top := min(level, h.maxLevel)
	out := make([][]Neighbor, top+1)
	eps := []Neighbor{ep}
	for l := top; l >= 0; l-- {
		out[l] = h.searchLayer(s, qv, eps, h.EfConstruction, l)
		s.gen++ // a fresh visited set for the next layer
		if s.gen == 0 {
			clear(s.visited)
			s.gen = 1
		}
		eps = out[l]
	}
	return out
}

// connect links node q into the graph on every layer up to level, given
// its candidates per layer.
func (h *HNSW) connect(q int32, level int, found [][]Neighbor) {
	h.links[q] = make([][]int32, level+1)
	if h.entry < 0 {
		h.entry, h.maxLevel = q, level
		return
	}
	for l, cand := range found {
		nb := h.selectNeighbors(cand, h.M)
		h.links[q][l] = ids(nb)
		for _, n := range nb {
			h.link(n.ID, q, n.Sim, l)
		}
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = q, level
	}
}

// link adds to to from's layer-l links, pruning with the heuristic when
// from has too many.
func (h *HNSW) link(from, to int32, sim float32, l int) {
	ls := append(h.links[from][l], to)
	if len(ls) <= h.maxLinks(l) {
		h.links[from][l] = ls
		return
	}
	fv := h.vecs[from]
	cand := make([]Neighbor, len(ls))
	for i, id := range ls {
		if id == to {
			cand[i] = Neighbor{ID: id, Sim: sim}
		} else {
			cand[i] = Neighbor{ID: id, Sim: h.sim(fv, id)}
		}
	}
	sort.Slice(cand, func(i, j int) bool { return better(cand[i], cand[j]) })
	h.links[from][l] = ids(h.selectNeighbors(cand, h.maxLinks(l)))
}

// selectNeighbors is the paper's heuristic (algorithm 4, keeping pruned
// connections): a candidate, taken closest first, is linked only if it is
// closer to the new node than to every neighbour already chosen, which
// keeps links pointing in different directions; remaining slots are filled
// with the closest pruned candidates. cand must be sorted best first.
func (h *HNSW) selectNeighbors(cand []Neighbor, m int) []Neighbor {
	if len(cand) <= m {
		return cand
	}
	out := make([]Neighbor, 0, m)
	var pruned []Neighbor
	for _, c := range cand {
		if len(out) >= m {
			break
		}
		ok := true
		cv := h.vecs[c.ID]
		for _, r := range out {
			if h.sim(cv, r.ID) > c.Sim {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, p := range pruned {
		if len(out) >= m {
			break
		}
		out = append(out, p)
	}
	return out
}

func ids(ns []Neighbor) []int32 {
	out := make([]int32, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// greedy walks layer l towards q from ep while a neighbour is closer.
func (h *HNSW) greedy(q []float32, ep Neighbor, l int) Neighbor {
	for changed := true; changed; {
		changed = false
		for _, id := range h.links[ep.ID][l] {
			if s := h.sim(q, id); s > ep.Sim || (s == ep.Sim && id < ep.ID) {
				ep, changed = Neighbor{ID: id, Sim: s}, true
			}
		}
	}
	return ep
}

// searchLayer is the beam search of layer l from eps, returning up to ef
// nearest nodes, best first.
func (h *HNSW) searchLayer(s *searcher, q []float32, eps []Neighbor, ef, l int) []Neighbor {
	s.cand, s.res = s.cand[:0], s.res[:0]
	for _, e := range eps {
		if s.visited[e.ID] == s.gen {
			continue
		}
		s.visited[e.ID] = s.gen
		s.cand = heapPush(s.cand, e, better)
		s.res = heapPush(s.res, e, worse)
		if len(s.res) > ef {
			s.res = heapPop(s.res, worse)
		}
	}
	for len(s.cand) > 0 {
		c := s.cand[0]
		s.cand = heapPop(s.cand, better)
		if len(s.res) >= ef && worse(c, s.res[0]) {
			break
		}
		for _, id := range h.links[c.ID][l] {
			if s.visited[id] == s.gen {
				continue
			}
			s.visited[id] = s.gen
			n := Neighbor{ID: id, Sim: h.sim(q, id)}
			if len(s.res) < ef || better(n, s.res[0]) {
				s.cand = heapPush(s.cand, n, better)
				s.res = heapPush(s.res, n, worse)
				if len(s.res) > ef {
					s.res = heapPop(s.res, worse)
				}
			}
		}
	}
	out := make([]Neighbor, len(s.res))
	copy(out, s.res)
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

func worse(a, b Neighbor) bool { return better(b, a) }

// heapPush and heapPop keep a binary heap whose top is the element for
// which before(top, x) holds for all x.
func heapPush(hp []Neighbor, x Neighbor, before func(a, b Neighbor) bool) []Neighbor {
	hp = append(hp, x)
	i := len(hp) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !before(hp[i], hp[p]) {
			break
		}
		hp[i], hp[p] = hp[p], hp[i]
		i = p
	}
	return hp
}

func heapPop(hp []Neighbor, before func(a, b Neighbor) bool) []Neighbor {
	n := len(hp) - 1
	hp[0] = hp[n]
	hp = hp[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && before(hp[l], hp[m]) {
			m = l
		}
		if r < n && before(hp[r], hp[m]) {
			m = r
		}
		if m == i {
			return hp
		}
		hp[i], hp[m] = hp[m], hp[i]
		i = m
	}
}

// Search returns the k nearest neighbours of vector q, best first,
// excluding the node skip (-1 for none).
func (h *HNSW) Search(q []float32, k int, skip int32) []Neighbor {
	if h.entry < 0 {
		return nil
	}
	s := h.getSearcher()
	defer h.pool.Put(s)
	ep := Neighbor{ID: h.entry, Sim: h.sim(q, h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(q, ep, l)
	}
	found := h.searchLayer(s, q, []Neighbor{ep}, max(h.EfSearch, k+1), 0)
	out := make([]Neighbor, 0, k)
	for _, n := range found {
		if n.ID != skip && len(out) < k {
			out = append(out, n)
		}
	}
	return out
}

// KNN returns the k nearest neighbours of every indexed vector.
func (h *HNSW) KNN(ctx context.Context, k int) ([][]Neighbor, error) {
	out := make([][]Neighbor, len(h.vecs))
	err := parallel(ctx, len(h.vecs), func(i int) {
		out[i] = h.Search(h.vecs[i], k, int32(i))
	})
	return out, err
}

// sim is the similarity of a dense vector to indexed node id.
func (h *HNSW) sim(q []float32, id int32) float32 {
	if h.sp != nil {
		return h.sp[id].dot(q)
	}
	return Dot(q, h.vecs[id])
}
