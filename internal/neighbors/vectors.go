package neighbors

// Vectors is a set of unit vectors of one dimension, held as (index, value)
// pairs when most entries are zero, as in hashed TF-IDF, else dense. The
// sparse form is the only copy the index keeps: 156,000 TF-IDF vectors of
// 384 dimensions take about 50 MB sparse against 240 MB dense, which is
// what bounds pack's memory on large sets.
type Vectors struct {
	dim   int
	dense [][]float32 // nil in sparse form
	// Sparse form: vector i is idx/val[off[i]:off[i+1]], indices ascending.
	off    []uint32
	idx    []uint16
	val    []float32
	sparse bool
	n      int
}

// NewVectors returns an empty set of dimension dim; Append decides on the
// form from the first vectors it is given.
func NewVectors(dim int) *Vectors { return &Vectors{dim: dim} }

// FromDense returns vecs as a set (sparse when at most a quarter of the
// entries are non-zero). A dense set keeps vecs: callers must not modify
// them afterwards.
func FromDense(vecs [][]float32) *Vectors {
	dim := 0
	if len(vecs) > 0 {
		dim = len(vecs[0])
	}
	v := NewVectors(dim)
	v.Append(vecs)
	return v
}

// Append adds vecs (each of the set's dimension). The first call fixes the
// form: sparse when at most a quarter of its entries are non-zero and the
// dimension fits 16-bit indices.
func (v *Vectors) Append(vecs [][]float32) {
	if len(vecs) == 0 {
		return
	}
	if v.n == 0 && v.dense == nil && v.off == nil {
		nnz := 0
		for _, x := range vecs {
			nnz += nonZero(x)
		}
		v.sparse = v.dim <= 1<<16 && nnz*4 <= len(vecs)*v.dim
		if v.sparse {
			v.off = []uint32{0}
		}
	}
	v.n += len(vecs)
	if !v.sparse {
		v.dense = append(v.dense, vecs...)
		return
	}
	for _, x := range vecs {
		for j, f := range x {
			if f != 0 {
				v.idx = append(v.idx, uint16(j))
				v.val = append(v.val, f)
			}
		}
		v.off = append(v.off, uint32(len(v.idx)))
	}
}

func nonZero(x []float32) int {
	n := 0
	for _, f := range x {
		if f != 0 {
			n++
		}
	}
	return n
}

// Len is the number of vectors.
func (v *Vectors) Len() int { return v.n }

// Dim is their dimension.
func (v *Vectors) Dim() int { return v.dim }

// Sparse reports whether the set is held in sparse form.
func (v *Vectors) Sparse() bool { return v.sparse }

// Bytes is the memory the vectors take (backing arrays only).
func (v *Vectors) Bytes() int64 {
	if !v.sparse {
		return int64(v.n) * int64(v.dim) * 4
	}
	return int64(len(v.off))*4 + int64(len(v.idx))*2 + int64(len(v.val))*4
}

// simDense is the inner product of dense q with vector id.
func (v *Vectors) simDense(q []float32, id int32) float32 {
	if !v.sparse {
		return Dot(q, v.dense[id])
	}
	// q is a buffer of 1<<16 entries (see buffer), so a 16-bit index needs
	// no bounds check: this loop is most of the index's time.
	qa := (*[1 << 16]float32)(q)
	a, b := v.off[id], v.off[id+1]
	idx, val := v.idx[a:b], v.val[a:b]
	val = val[:len(idx)]
	var s0, s1 float32
	i := 0
	for ; i+2 <= len(idx); i += 2 {
		s0 += val[i] * qa[idx[i]]
		s1 += val[i+1] * qa[idx[i+1]]
	}
	if i < len(idx) {
		s0 += val[i] * qa[idx[i]]
	}
	return s0 + s1
}

// buffer returns a zeroed scratch buffer for load: 1<<16 entries for a
// sparse set (indices of any 16-bit value are in range), Dim for a dense.
func (v *Vectors) buffer() []float32 {
	if v.sparse {
		return make([]float32, 1<<16)
	}
	return make([]float32, v.dim)
}

// load returns vector i in dense form, scattered into buf (from buffer,
// all zero) for a sparse set; unload zeroes buf again.
func (v *Vectors) load(i int32, buf []float32) []float32 {
	if !v.sparse {
		return v.dense[i]
	}
	a, b := v.off[i], v.off[i+1]
	for k := a; k < b; k++ {
		buf[v.idx[k]] = v.val[k]
	}
	return buf
}

func (v *Vectors) unload(i int32, buf []float32) {
	if !v.sparse {
		return
	}
	for _, j := range v.idx[v.off[i]:v.off[i+1]] {
		buf[j] = 0
	}
}

// Dot is the inner product of vectors i and j (their cosine similarity).
func (v *Vectors) Dot(i, j int) float32 {
	if !v.sparse {
		return Dot(v.dense[i], v.dense[j])
	}
	ai, bi := v.off[i], v.off[i+1]
	aj, bj := v.off[j], v.off[j+1]
	var s float32
	for ai < bi && aj < bj {
		switch x, y := v.idx[ai], v.idx[aj]; {
		case x == y:
			s += v.val[ai] * v.val[aj]
			ai++
			aj++
		case x < y:
			ai++
		default:
			aj++
		}
	}
	return s
}
