package neighbors

import (
	"context"
	"runtime"
	"sort"
	"sync"
)

// Neighbor is one nearest neighbour: an index into the vectors and its
// cosine similarity (vectors are unit length, so the dot product).
type Neighbor struct {
	ID  int32
	Sim float32
}

// dot is the inner product of two equal-length vectors, unrolled because it
// is the whole cost of nearest-neighbour search.
func Dot(a, b []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
		s4 += a[i+4] * b[i+4]
		s5 += a[i+5] * b[i+5]
		s6 += a[i+6] * b[i+6]
		s7 += a[i+7] * b[i+7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// topK keeps the k best neighbours seen, best first.
type topK struct {
	k  int
	hs []Neighbor
}

func (t *topK) push(n Neighbor) {
	if len(t.hs) == t.k && !better(n, t.hs[len(t.hs)-1]) {
		return
	}
	i := sort.Search(len(t.hs), func(i int) bool { return better(n, t.hs[i]) })
	if len(t.hs) < t.k {
		t.hs = append(t.hs, Neighbor{})
	}
	copy(t.hs[i+1:], t.hs[i:len(t.hs)-1])
	t.hs[i] = n
}

// better orders neighbours by similarity, ties by lower id, so results do
// not depend on scan order.
func better(a, b Neighbor) bool {
	if a.Sim != b.Sim {
		return a.Sim > b.Sim
	}
	return a.ID < b.ID
}

// parallel runs fn(i) for i in [0, n) on GOMAXPROCS workers, checking ctx
// every few items.
func parallel(ctx context.Context, n int, fn func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), max(n, 1))
	var next int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	claim := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		lo := int(next)
		hi := min(lo+64, n)
		next = int64(hi)
		return lo, hi
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if ctx.Err() != nil {
					return
				}
				lo, hi := claim()
				if lo >= n {
					return
				}
				for i := lo; i < hi; i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// ExactKNN returns the k nearest neighbours of each of queries (indexes into
// vecs) among all of vecs, itself excluded, by brute force.
func ExactKNN(ctx context.Context, vecs [][]float32, queries []int, k int) ([][]Neighbor, error) {
	return ExactKNNVectors(ctx, FromDense(vecs), queries, k)
}

// ExactKNNVectors is ExactKNN on a vector set.
func ExactKNNVectors(ctx context.Context, v *Vectors, queries []int, k int) ([][]Neighbor, error) {
	out := make([][]Neighbor, len(queries))
	// 256 KiB each for a sparse set; pointers, so Put does not allocate.
	bufs := sync.Pool{New: func() any { b := v.buffer(); return &b }}
	err := parallel(ctx, len(queries), func(qi int) {
		q := int32(queries[qi])
		bp := bufs.Get().(*[]float32)
		defer bufs.Put(bp)
		buf := *bp
		qv := v.load(q, buf)
		defer v.unload(q, buf)
		t := topK{k: k, hs: make([]Neighbor, 0, k)}
		for j := range int32(v.Len()) {
			if j == q {
				continue
			}
			s := v.simDense(qv, j)
			if len(t.hs) < k || s >= t.hs[len(t.hs)-1].Sim {
				t.push(Neighbor{ID: j, Sim: s})
			}
		}
		out[qi] = t.hs
	})
	return out, err
}

// all returns 0..n-1.
func all(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Recall is recall@k of an approximate search against exact search: the
// fraction of the k slots filled with a true k-nearest neighbour. A found
// neighbour as similar as the exact k-th one counts, since among tied
// vectors (duplicated texts) any is a correct answer.
func Recall(approx, exact [][]Neighbor) float64 {
	hit, total := 0, 0
	for i := range exact {
		if len(exact[i]) == 0 {
			continue
		}
		kth := exact[i][len(exact[i])-1].Sim - 1e-6
		found := 0
		for _, n := range approx[i] {
			if n.Sim >= kth && found < len(exact[i]) {
				found++
			}
		}
		hit += found
		total += len(exact[i])
	}
	if total == 0 {
		return 1
	}
	return float64(hit) / float64(total)
}
