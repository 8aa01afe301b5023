package embed

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// DefaultDim is the TF-IDF vector dimension when none is given.
const DefaultDim = 384

// TFIDF is a hashed TF-IDF vectorizer for short code questions. Features are
// word unigrams, word bigrams, and the parts of code identifiers
// (getUserName, parse_json_file, HTTPServer2 -> get user name, parse json
// file, http server 2), hashed with a sign bit into Dim buckets (the
// "hashing trick", so there is no vocabulary to store). Term frequency is
// sublinear (1 + log tf), IDF is smoothed (log((1+N)/(1+df)) + 1) and
// vectors are L2-normalised. Everything is deterministic: the same corpus
// gives the same vectors on any machine and core count.
//
// Fit learns IDF from a corpus; Transform then embeds any texts. Embed does
// both on the texts it is given when the vectorizer was never fitted, which
// is how the engine uses it (IDF fitted on the corpus being embedded).
// Fit must not run concurrently with Transform or Embed; Transform alone is
// safe for concurrent use.
type TFIDF struct {
	dim     int
	idf     []float32 // nil until Fit
	docs    int
	workers int
	mu      sync.Mutex // serialises Embed's fit-on-first-use
}

// NewTFIDF returns an unfitted vectorizer of dimension dim (DefaultDim if <= 0).
func NewTFIDF(dim int) *TFIDF {
	if dim <= 0 {
		dim = DefaultDim
	}
	return &TFIDF{dim: dim, workers: runtime.GOMAXPROCS(0)}
}

// Dim returns the vector dimension.
func (t *TFIDF) Dim() int { return t.dim }

// Fitted reports whether IDF has been learnt, and from how many documents.
func (t *TFIDF) Fitted() (bool, int) { return t.idf != nil, t.docs }

// Embed implements Embedder: it fits on texts first if t was never fitted,
// then transforms them. ctx is checked between chunks of work.
func (t *TFIDF) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t.mu.Lock()
	if t.idf == nil {
		if err := t.fit(ctx, texts); err != nil {
			t.mu.Unlock()
			return nil, err
		}
	}
	t.mu.Unlock()
	return t.transform(ctx, texts)
}

// Fit learns document frequencies from corpus, replacing any earlier fit.
func (t *TFIDF) Fit(corpus []string) { _ = t.fit(context.Background(), corpus) }

// Transform returns the unit vector of each text. Before Fit every bucket
// has IDF 1 (plain sublinear TF).
func (t *TFIDF) Transform(texts []string) [][]float32 {
	v, _ := t.transform(context.Background(), texts)
	return v
}

// Sparse is a vector given by its non-zero entries, indices ascending.
type Sparse struct {
	Idx []int32
	Val []float32
}

// TransformSparse returns the unit vector of text in sparse form.
func (t *TFIDF) TransformSparse(text string) Sparse {
	s := newScratch(t.dim)
	dense := make([]float32, t.dim)
	t.vector(s, text, dense)
	var sp Sparse
	for i, v := range dense {
		if v != 0 {
			sp.Idx = append(sp.Idx, int32(i))
			sp.Val = append(sp.Val, v)
		}
	}
	return sp
}

const chunk = 256

// parallel runs fn(worker, lo, hi) over [0, n) in chunks on all workers,
// stopping early when ctx is done.
func (t *TFIDF) parallel(ctx context.Context, n int, fn func(w, lo, hi int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := max(1, min(t.workers, (n+chunk-1)/chunk))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				fn(w, lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (t *TFIDF) fit(ctx context.Context, corpus []string) error {
	workers := max(1, t.workers)
	dfs := make([][]int32, workers)
	scr := make([]*scratch, workers)
	for w := range dfs {
		dfs[w] = make([]int32, t.dim)
		scr[w] = newScratch(t.dim)
	}
	err := t.parallel(ctx, len(corpus), func(w, lo, hi int) {
		s, df := scr[w], dfs[w]
		for _, text := range corpus[lo:hi] {
			s.count(text, t.dim)
			for _, b := range s.touched {
				if s.acc[b] != 0 {
					df[b]++
				}
			}
		}
	})
	if err != nil {
		return err
	}
	idf := make([]float32, t.dim)
	n := float64(len(corpus))
	for b := range idf {
		var df int32
		for w := range dfs {
			df += dfs[w][b]
		}
		idf[b] = float32(math.Log((1+n)/(1+float64(df))) + 1)
	}
	t.idf, t.docs = idf, len(corpus)
	return nil
}

func (t *TFIDF) transform(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	slab := make([]float32, len(texts)*t.dim) // one allocation for all vectors
	scr := make([]*scratch, max(1, t.workers))
	for w := range scr {
		scr[w] = newScratch(t.dim)
	}
	err := t.parallel(ctx, len(texts), func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			v := slab[i*t.dim : (i+1)*t.dim : (i+1)*t.dim]
			t.vector(scr[w], texts[i], v)
			out[i] = v
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// vector writes the unit TF-IDF vector of text into v (len dim, zeroed).
func (t *TFIDF) vector(s *scratch, text string, v []float32) {
	s.count(text, t.dim)
	var norm float64
	for _, b := range s.touched {
		c := s.acc[b]
		if c == 0 {
			continue // opposite signs cancelled
		}
		w := float32(1)
		if c < 0 {
			w, c = -1, -c
		}
		if c > 1 {
			w *= 1 + float32(math.Log(float64(c)))
		}
		if t.idf != nil {
			w *= t.idf[b]
		}
		v[b] = w
		norm += float64(w) * float64(w)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for _, b := range s.touched {
			v[b] *= inv
		}
	}
}

// scratch is one worker's per-document state.
type scratch struct {
	acc     []float32 // signed counts per bucket, valid where mark == gen
	mark    []uint32
	gen     uint32
	touched []int32
	feats   []uint64
}

func newScratch(dim int) *scratch {
	return &scratch{acc: make([]float32, dim), mark: make([]uint32, dim)}
}

// count hashes text's features into acc, listing the buckets touched.
func (s *scratch) count(text string, dim int) {
	s.gen++
	s.touched = s.touched[:0]
	s.feats = features(text, s.feats[:0])
	for _, h := range s.feats {
		b := int32(h % uint64(dim))
		if s.mark[b] != s.gen {
			s.mark[b] = s.gen
			s.acc[b] = 0
			s.touched = append(s.touched, b)
		}
		if h>>63 == 1 {
			s.acc[b]--
		} else {
			s.acc[b]++
		}
	}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	bigramKey = 0x9e3779b97f4a7c15
)

// Fmix64 is MurmurHash3's 64-bit finaliser: spreads FNV's output over all
// bits, since both the bucket (low bits) and the sign (top bit) are used.
// The leakage audit's hashes use it too.
func Fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hashLower(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(lower(s[i]))
		h *= fnvPrime
	}
	return h
}

// features appends the hashed features of text to dst: each token of two or
// more bytes (lowercased), the parts of identifiers split at '_', case
// changes and letter/digit boundaries, and bigrams of consecutive tokens.
func features(text string, dst []uint64) []uint64 {
	var prev uint64
	havePrev := false
	for i := 0; i < len(text); {
		if !isTokenByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isTokenByte(text[j]) {
			j++
		}
		tok := text[i:j]
		i = j
		if len(tok) < 2 {
			continue
		}
		h := hashLower(tok)
		dst = append(dst, Fmix64(h))
		if havePrev {
			dst = append(dst, Fmix64((prev^bigramKey)*fnvPrime^h))
		}
		prev, havePrev = h, true
		dst = identParts(tok, dst)
	}
	return dst
}

// identParts appends the hashed parts of an identifier-like token when it
// has more than one part.
func identParts(tok string, dst []uint64) []uint64 {
	start := 0
	parts := 0
	first := len(dst)
	emit := func(end int) {
		if end-start >= 2 {
			dst = append(dst, Fmix64(hashLower(tok[start:end])))
		}
		if end > start && tok[start] != '_' {
			parts++
		}
	}
	for k := 1; k < len(tok); k++ {
		a, b := tok[k-1], tok[k]
		switch {
		case b == '_':
			emit(k)
			start = k + 1
		case a == '_':
			start = k
		case isLower(a) && isUpper(b), isDigit(a) != isDigit(b) && a < 0x80 && b < 0x80,
			isUpper(a) && isUpper(b) && k+1 < len(tok) && isLower(tok[k+1]): // HTTPServer -> HTTP|Server
			emit(k)
			start = k
		}
	}
	emit(len(tok))
	if parts < 2 {
		return dst[:first] // a plain word: already counted whole
	}
	return dst
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
