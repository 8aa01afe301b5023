package neighbors

import "context"

// knnLists keeps the k best neighbours seen for every node, best first,
// each neighbour once. Which k it keeps does not depend on the order of
// offers (ties go to the lower id), so lists filled from parallel work
// are deterministic.
type knnLists struct {
	k   int
	nb  []Neighbor // node i's list is nb[i*k : i*k+cnt[i]]
	cnt []uint8
}

func newKNNLists(n, k int) *knnLists {
	return &knnLists{k: k, nb: make([]Neighbor, n*k), cnt: make([]uint8, n)}
}

func (l *knnLists) row(i int32) []Neighbor {
	lo := int(i) * l.k
	return l.nb[lo : lo+int(l.cnt[i])]
}

// offer proposes n as a neighbour of node i.
func (l *knnLists) offer(i int32, n Neighbor) {
	if n.ID == i {
		return
	}
	lo := int(i) * l.k
	c := int(l.cnt[i])
	row := l.nb[lo : lo+c]
	if c == l.k && !better(n, row[c-1]) {
		return
	}
	for _, x := range row {
		if x.ID == n.ID {
			return
		}
	}
	at := c
	for at > 0 && better(n, row[at-1]) {
		at--
	}
	if c < l.k {
		c++
		l.cnt[i] = uint8(c)
	}
	row = l.nb[lo : lo+c]
	copy(row[at+1:], row[at:c-1])
	row[at] = n
}

// offerFound records what inserting node q found: its layer-0 candidates
// among earlier nodes and its similarities to earlier nodes of its batch,
// both ways round.
func (l *knnLists) offerFound(q int32, found [][]Neighbor, intra []Neighbor) {
	if l == nil {
		return
	}
	var layer0 []Neighbor
	if len(found) > 0 {
		layer0 = found[0]
	}
	for _, set := range [][]Neighbor{layer0, intra} {
		for _, n := range set {
			l.offer(q, n)
			l.offer(n.ID, Neighbor{ID: q, Sim: n.Sim})
		}
	}
}

// lists returns the lists as slices (sharing l's storage).
func (l *knnLists) lists() [][]Neighbor {
	out := make([][]Neighbor, len(l.cnt))
	for i := range out {
		out[i] = l.row(int32(i))
	}
	return out
}

// refine is one round of neighbours-of-neighbours: every node compares
// itself with its neighbours' neighbours (as they were before the round)
// and keeps the best k. A true neighbour missed by both insertion searches
// is usually a neighbour's neighbour.
func (h *HNSW) refine(ctx context.Context, kn *knnLists) error {
	old := &knnLists{k: kn.k, nb: append([]Neighbor(nil), kn.nb...), cnt: append([]uint8(nil), kn.cnt...)}
	return parallel(ctx, len(kn.cnt), func(i int) {
		s := h.getSearcher()
		defer h.pool.Put(s)
		q := h.v.load(int32(i), s.q)
		defer h.v.unload(int32(i), s.q)
		s.visited[i] = s.gen
		for _, a := range old.row(int32(i)) {
			s.visited[a.ID] = s.gen
		}
		for _, a := range old.row(int32(i)) {
			for _, b := range old.row(a.ID) {
				if s.visited[b.ID] == s.gen {
					continue
				}
				s.visited[b.ID] = s.gen
				kn.offer(int32(i), Neighbor{ID: b.ID, Sim: h.v.simDense(q, b.ID)})
			}
		}
	})
}
