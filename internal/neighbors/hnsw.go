package neighbors

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// HNSW is a hierarchical navigable small-world graph (Malkov & Yashunin,
// 2016) over unit vectors, for approximate nearest-neighbour search by
// cosine similarity. It is built in batches from a seeded random source
// (see Build), so the same vectors and seed give the same graph and the
// same answers on any number of cores; Search is safe for concurrent use
// once Build returns.
type HNSW struct {
	// M is the number of links per node on upper layers (2M on layer 0);
	// EfConstruction the candidate list size while inserting; EfSearch the
	// candidate list size while searching (at least k).
	M, EfConstruction, EfSearch int

	v        *Vectors
	links    [][][]int32 // node -> layer -> neighbours
	entry    int32
	maxLevel int
	pool     sync.Pool // *searcher
}

// NewHNSW returns an empty index with the given parameters (zero values
// take the pack stage's defaults).
func NewHNSW(m, efConstruction, efSearch int) *HNSW {
	if m <= 0 {
		m = DefaultConfig.M
	}
	if efConstruction <= 0 {
		efConstruction = DefaultConfig.EfConstruction
	}
	if efSearch <= 0 {
		efSearch = DefaultConfig.EfSearch
	}
	return &HNSW{M: m, EfConstruction: efConstruction, EfSearch: efSearch, entry: -1}
}

// searcher is one goroutine's scratch space: a visited set by generation
// number, the two heaps, and two dense buffers (all zero between uses)
// that sparse vectors are scattered into.
type searcher struct {
	visited []uint32
	gen     uint32
	cand    []Neighbor // max-heap by similarity: closest first
	res     []Neighbor // min-heap by similarity: worst result on top
	q, c    []float32
}

func (h *HNSW) getSearcher() *searcher {
	s, _ := h.pool.Get().(*searcher)
	if s == nil || len(s.visited) < h.v.Len() {
		s = &searcher{visited: make([]uint32, h.v.Len()), q: h.v.buffer(), c: h.v.buffer()}
	}
	s.next()
	return s
}

// next starts a fresh visited set.
func (s *searcher) next() {
	s.gen++
	if s.gen == 0 { // wrapped: clear
		clear(s.visited)
		s.gen = 1
	}
}

// Build inserts vecs (unit length, all one dimension) in order. The index
// keeps vecs (dense sets by reference): callers must not modify them.
func (h *HNSW) Build(ctx context.Context, vecs [][]float32, seed uint64) error {
	_, err := h.build(ctx, FromDense(vecs), seed, 0)
	return err
}

// BuildKNN builds the index on v and returns every vector's k nearest
// neighbours, best first, found while building rather than by searching
// the finished graph: each inserted node's beam search (EfConstruction
// wide) already finds its nearest earlier nodes, and each of those learns
// of the new node at the same time, so every pair that one side's search
// met is known to both sides. Nodes inserted in one batch are compared
// with each other exactly. One round of neighbours-of-neighbours then
// fills what both searches missed. This is several times cheaper than a
// search per node afterwards and finds more of the true neighbours.
func (h *HNSW) BuildKNN(ctx context.Context, v *Vectors, seed uint64, k int) ([][]Neighbor, error) {
	if k < 1 {
		return nil, errors.New("neighbors: k must be >= 1")
	}
	kn, err := h.build(ctx, v, seed, k)
	if err != nil {
		return nil, err
	}
	if err := h.refine(ctx, kn); err != nil {
		return nil, err
	}
	return kn.lists(), nil
}

// build inserts the vectors of v, collecting k nearest neighbours per node
// when k > 0.
//
// After the first nodes, nodes are inserted in batches: each node of a
// batch searches the graph as it was before the batch (in parallel, the
// costly part), then the batch is linked: every node's own links in
// parallel, then the links back to it grouped by the node they are added
// to, each group in node order, in parallel. That is exactly the graph
// that linking the batch one node after another would give, so it is the
// same on any number of cores; nodes of one batch just do not see each
// other while searching, which costs no measurable recall at this batch
// size.
func (h *HNSW) build(ctx context.Context, v *Vectors, seed uint64, k int) (*knnLists, error) {
	const sequential, batch = 2048, 256
	h.v = v
	n := v.Len()
	h.links = make([][][]int32, n)
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	mult := 1 / math.Log(float64(h.M))
	levels := make([]int, n)
	for i := range levels {
		levels[i] = int(-math.Log(1-rng.Float64()) * mult)
	}
	var kn *knnLists
	if k > 0 {
		kn = newKNNLists(n, k)
	}
	s := h.getSearcher()
	for i := 0; i < min(sequential, n); i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		found, _ := h.searchInsert(s, int32(i), levels[i], i)
		kn.offerFound(int32(i), found, nil)
		h.connect(s, int32(i), levels[i], found)
	}
	h.pool.Put(s)
	found := make([][][]Neighbor, batch)
	intra := make([][]Neighbor, batch)
	for lo := sequential; lo < n; lo += batch {
		hi := min(lo+batch, n)
		if err := parallel(ctx, hi-lo, func(j int) {
			s := h.getSearcher()
			lim := lo + j
			if kn == nil {
				lim = lo
			}
			found[j], intra[j] = h.searchInsert(s, int32(lo+j), levels[lo+j], lim)
			h.pool.Put(s)
		}); err != nil {
			return nil, err
		}
		for j := range hi - lo {
			kn.offerFound(int32(lo+j), found[j], intra[j])
		}
		if err := h.connectBatch(ctx, lo, levels[lo:hi], found[:hi-lo]); err != nil {
			return nil, err
		}
	}
	return kn, ctx.Err()
}

func (h *HNSW) maxLinks(layer int) int {
	if layer == 0 {
		return 2 * h.M
	}
	return h.M
}

// searchInsert finds the link candidates of node q on each of its layers
// present in the graph (index = layer), reading the graph only, and its
// similarity to the nodes of its batch inserted before it (from the first
// node not yet in the graph up to lim).
func (h *HNSW) searchInsert(s *searcher, q int32, level, lim int) (found [][]Neighbor, intra []Neighbor) {
	qv := h.v.load(q, s.q)
	defer h.v.unload(q, s.q)
	for i := h.graphSize(q); i < lim; i++ {
		intra = append(intra, Neighbor{ID: int32(i), Sim: h.v.simDense(qv, int32(i))})
	}
	if h.entry < 0 {
		return nil, intra
	}
	ep := Neighbor{ID: h.entry, Sim: h.v.simDense(qv, h.entry)}
	for l := h.maxLevel; l > level; l-- {
		ep = h.greedy(qv, ep, l)
	}
	top := min(level, h.maxLevel)
	found = make([][]Neighbor, top+1)
	eps := []Neighbor{ep}
	for l := top; l >= 0; l-- {
		found[l] = h.searchLayer(s, qv, eps, h.EfConstruction, l)
		s.next() // a fresh visited set for the next layer
		eps = found[l]
	}
	return found, intra
}

// graphSize is the number of nodes linked when q searches: nodes before
// the first node of q's batch. In the sequential phase every earlier node
// is linked, so there is no batch to compare exactly.
func (h *HNSW) graphSize(q int32) int {
	const sequential, batch = 2048, 256
	if q < sequential {
		return int(q)
	}
	return sequential + (int(q)-sequential)/batch*batch
}

// connect links node q into the graph on every layer up to level, given
// its candidates per layer.
func (h *HNSW) connect(s *searcher, q int32, level int, found [][]Neighbor) {
	h.links[q] = make([][]int32, level+1)
	if h.entry < 0 {
		h.entry, h.maxLevel = q, level
		return
	}
	for l, cand := range found {
		nb := h.selectNeighbors(s, cand, h.M)
		h.links[q][l] = ids(nb)
		for _, n := range nb {
			h.link(s, n.ID, q, n.Sim, l)
		}
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = q, level
	}
}

// backLink is a link to add from node from to node to on layer l.
type backLink struct {
	from, to int32
	l        int32
	sim      float32
}

// connectBatch links the batch of nodes lo.. (levels and candidates per
// node) into the graph; see build for why this equals linking them one by
// one.
func (h *HNSW) connectBatch(ctx context.Context, lo int, levels []int, found [][][]Neighbor) error {
	chosen := make([][][]Neighbor, len(found))
	if err := parallel(ctx, len(found), func(j int) {
		s := h.getSearcher()
		defer h.pool.Put(s)
		q := lo + j
		h.links[q] = make([][]int32, levels[j]+1)
		chosen[j] = make([][]Neighbor, len(found[j]))
		for l, cand := range found[j] {
			chosen[j][l] = h.selectNeighbors(s, cand, h.M)
			h.links[q][l] = ids(chosen[j][l])
		}
	}); err != nil {
		return err
	}
	var back []backLink
	for j := range found {
		q := int32(lo + j)
		for l, nb := range chosen[j] {
			for _, n := range nb {
				back = append(back, backLink{from: n.ID, to: q, l: int32(l), sim: n.Sim})
			}
		}
		if levels[j] > h.maxLevel {
			h.entry, h.maxLevel = q, levels[j]
		}
	}
	// Group by (from, layer), keeping node order within a group.
	sort.SliceStable(back, func(a, b int) bool {
		if back[a].from != back[b].from {
			return back[a].from < back[b].from
		}
		return back[a].l < back[b].l
	})
	var starts []int
	for i := range back {
		if i == 0 || back[i].from != back[i-1].from || back[i].l != back[i-1].l {
			starts = append(starts, i)
		}
	}
	starts = append(starts, len(back))
	return parallel(ctx, len(starts)-1, func(g int) {
		s := h.getSearcher()
		defer h.pool.Put(s)
		for _, b := range back[starts[g]:starts[g+1]] {
			h.link(s, b.from, b.to, b.sim, int(b.l))
		}
	})
}

// link adds to to from's layer-l links, pruning with the heuristic when
// from has too many.
func (h *HNSW) link(s *searcher, from, to int32, sim float32, l int) {
	ls := append(h.links[from][l], to)
	if len(ls) <= h.maxLinks(l) {
		h.links[from][l] = ls
		return
	}
	fv := h.v.load(from, s.q)
	cand := make([]Neighbor, len(ls))
	for i, id := range ls {
		if id == to {
			cand[i] = Neighbor{ID: id, Sim: sim}
		} else {
			cand[i] = Neighbor{ID: id, Sim: h.v.simDense(fv, id)}
		}
	}
	h.v.unload(from, s.q)
	sort.Slice(cand, func(i, j int) bool { return better(cand[i], cand[j]) })
	h.links[from][l] = ids(h.selectNeighbors(s, cand, h.maxLinks(l)))
}

// selectNeighbors is the paper's heuristic (algorithm 4, keeping pruned
// connections): a candidate, taken closest first, is linked only if it is
// closer to the new node than to every neighbour already chosen, which
// keeps links pointing in different directions; remaining slots are filled
// with the closest pruned candidates. cand must be sorted best first.
func (h *HNSW) selectNeighbors(s *searcher, cand []Neighbor, m int) []Neighbor {
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
		if len(out) > 0 {
			cv := h.v.load(c.ID, s.c)
			for _, r := range out {
				if h.v.simDense(cv, r.ID) > c.Sim {
					ok = false
					break
				}
			}
			h.v.unload(c.ID, s.c)
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
			if s := h.v.simDense(q, id); s > ep.Sim || (s == ep.Sim && id < ep.ID) {
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
			n := Neighbor{ID: id, Sim: h.v.simDense(q, id)}
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
	if h.v.sparse { // the query goes into a full-size buffer (see Vectors.buffer)
		copy(s.q, q)
		defer clear(s.q[:len(q)])
		q = s.q
	}
	return h.search(s, q, k, skip)
}

func (h *HNSW) search(s *searcher, q []float32, k int, skip int32) []Neighbor {
	ep := Neighbor{ID: h.entry, Sim: h.v.simDense(q, h.entry)}
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

// KNN returns the k nearest neighbours of every indexed vector by a search
// of the finished graph per vector (EfSearch wide).
func (h *HNSW) KNN(ctx context.Context, k int) ([][]Neighbor, error) {
	out := make([][]Neighbor, h.v.Len())
	err := parallel(ctx, len(out), func(i int) {
		if h.entry < 0 {
			return
		}
		s := h.getSearcher()
		defer h.pool.Put(s)
		q := h.v.load(int32(i), s.q)
		out[i] = h.search(s, q, k, int32(i))
		h.v.unload(int32(i), s.q)
	})
	return out, err
}
