package filter

import (
	"hash/fnv"
	"math/bits"

	"github.com/codefeedback/codefeedback/schema"
)

// numHashes is the MinHash signature length. With 128 hashes the Jaccard
// estimate has a standard error of at most 0.045.
const numHashes = 128

// Dedup finds exact and near-duplicate texts in a stream, keeping the first
// of each group. Exact duplicates are equal after schema.NormalizeText;
// near-duplicates have an estimated Jaccard similarity of their character
// shingle sets of at least Threshold, found through MinHash signatures and
// locality-sensitive hashing (bands of rows), so each text is compared only
// with the few kept texts sharing a band with it. Not safe for concurrent
// use.
type Dedup struct {
	threshold float64
	shingle   int
	bands     int
	rows      int
	a, b      [numHashes]uint64

	exact   map[uint64]int      // normalised-text hash -> index of the kept text
	buckets map[uint64][]int32  // band hash -> kept texts (indexes into sigs)
	sigs    [][numHashes]uint32 // signatures of kept texts
	keptIdx []int               // input index of each kept signature
	n       int
}

// Verdict is what Dedup says about one text.
type Verdict struct {
	// Kind is "" for a kept text, "exact" or "near" for a duplicate.
	Kind string
	// Of is the input index of the kept text it duplicates (-1 when kept).
	Of int
	// Jaccard is the estimated similarity to Of (1 for exact duplicates).
	Jaccard float64
}

// NewDedup returns a Dedup. threshold <= 0 turns near-duplicate detection
// off; shingle is the character n-gram length (default 5).
func NewDedup(threshold float64, shingle int) *Dedup {
	if shingle <= 0 {
		shingle = 5
	}
	d := &Dedup{threshold: threshold, shingle: shingle, exact: map[uint64]int{}, buckets: map[uint64][]int32{}}
	// Banding: the probability that a pair with Jaccard s shares a band is
	// 1-(1-s^r)^b, an S-curve rising at about (1/b)^(1/r): 16x8 rises near
	// 0.71 (catching pairs >= 0.8 with p > 0.94), 32x4 near 0.42 for
	// lower thresholds.
	d.bands, d.rows = 16, 8
	if threshold < 0.6 {
		d.bands, d.rows = 32, 4
	}
	// Fixed seeds: results must not depend on the run.
	x := uint64(0x9e3779b97f4a7c15)
	for i := range numHashes {
		x = splitmix(x)
		d.a[i] = x | 1
		x = splitmix(x)
		d.b[i] = x
	}
	return d
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Add classifies the next text (input index = number of earlier Add calls).
func (d *Dedup) Add(text string) Verdict {
	idx := d.n
	d.n++
	norm := schema.NormalizeText(text)
	h := fnv.New64a()
	h.Write([]byte(norm))
	key := h.Sum64()
	if of, dup := d.exact[key]; dup {
		return Verdict{Kind: "exact", Of: of, Jaccard: 1}
	}
	d.exact[key] = idx
	if d.threshold <= 0 {
		return Verdict{Of: -1}
	}
	sig := d.signature(norm)
	bandKeys := make([]uint64, d.bands)
	best, bestJ := -1, 0.0
	seen := map[int32]bool{}
	for band := range d.bands {
		bh := uint64(band)*0x9e3779b97f4a7c15 + 1
		for _, v := range sig[band*d.rows : (band+1)*d.rows] {
			bh = splitmix(bh ^ uint64(v))
		}
		bandKeys[band] = bh
		for _, c := range d.buckets[bh] {
			if seen[c] {
				continue
			}
			seen[c] = true
			if j := similarity(&sig, &d.sigs[c]); j >= d.threshold && (j > bestJ || best < 0) {
				best, bestJ = int(c), j
			}
		}
	}
	if best >= 0 {
		return Verdict{Kind: "near", Of: d.keptIdx[best], Jaccard: bestJ}
	}
	c := int32(len(d.sigs))
	d.sigs = append(d.sigs, sig)
	d.keptIdx = append(d.keptIdx, idx)
	for _, bh := range bandKeys {
		d.buckets[bh] = append(d.buckets[bh], c)
	}
	return Verdict{Of: -1}
}

// signature is the MinHash signature of the text's character shingles.
// Texts shorter than one shingle are one shingle.
func (d *Dedup) signature(norm string) [numHashes]uint32 {
	var mins [numHashes]uint64
	for i := range mins {
		mins[i] = ^uint64(0)
	}
	add := func(s string) {
		h := fnv.New64a()
		h.Write([]byte(s))
		x := splitmix(h.Sum64())
		for i := range numHashes {
			// a*x+b over 64 bits, keeping the high half of the product so
			// every permutation uses the well-mixed upper bits.
			hi, lo := bits.Mul64(d.a[i], x)
			v := (hi ^ lo) + d.b[i]
			if v < mins[i] {
				mins[i] = v
			}
		}
	}
	if len(norm) <= d.shingle {
		add(norm)
	} else {
		for i := 0; i+d.shingle <= len(norm); i++ {
			add(norm[i : i+d.shingle])
		}
	}
	var sig [numHashes]uint32
	for i, m := range mins {
		sig[i] = uint32(m >> 32)
	}
	return sig
}

// similarity estimates the Jaccard similarity of two shingle sets from
// their signatures: the fraction of equal minimums.
func similarity(a, b *[numHashes]uint32) float64 {
	eq := 0
	for i := range a {
		if a[i] == b[i] {
			eq++
		}
	}
	return float64(eq) / numHashes
}

// Jaccard is the exact Jaccard similarity of two texts' character shingle
// sets after normalisation (for tests and diagnostics).
func Jaccard(a, b string, shingle int) float64 {
	set := func(s string) map[string]bool {
		s = schema.NormalizeText(s)
		m := map[string]bool{}
		if len(s) <= shingle {
			m[s] = true
			return m
		}
		for i := 0; i+shingle <= len(s); i++ {
			m[s[i:i+shingle]] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	inter := 0
	for k := range sa {
		if sb[k] {
			inter++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}
