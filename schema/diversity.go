package schema

import (
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Diversity counts how varied a corpus of dialogues reads: distinct first
// user turns, distinct closing turns, distinct code-less assistant turns,
// the share of dialogues built without a model (templates), and the most
// repeated openings of assistant turns. Memory is bounded whatever the
// corpus: texts are kept as 64-bit hashes, exactly up to maxExact distinct
// ones per set and then as a HyperLogLog estimate (about 1% error; the
// summary says Estimated); openings (the first words) are kept as text,
// and past maxOpenings distinct ones those seen once so far are dropped,
// so a repeated opening keeps (nearly) its count and a rare one may be
// undercounted. Nothing it keeps holds a pointer (hashes, counts, one text
// arena), so the collector does not scan it and merging two is a few passes
// over flat slices. Not safe for concurrent use.
type Diversity struct {
	dialogues, modelFree, codeless  int
	firstUser, closing, codelessSet distinct
	openings                        openingCounts
	scratch                         []byte // the opening being read
}

// Bounds of Diversity's memory: about 16 bytes per exact hash, 80 per
// opening (variables for the tests). Openings are few enough to stay in the
// processor's cache: a corpus's most repeated openings come back far more
// often than once in 16,384 turns.
var (
	maxExact    = 1 << 20
	maxOpenings = 1 << 14
)

// distinct counts distinct 64-bit hashes: exactly while there are few
// (hashes appended to a slice, sorted and deduplicated whenever it doubles:
// cheaper than a hash set, whose inserts miss the cache once it outgrows
// it), then in a HyperLogLog sketch (2^14 registers).
type distinct struct {
	hs     []uint64 // hs[:sorted] sorted and unique, then appended
	sorted int
	hll    []uint8
}

func (d *distinct) add(h uint64) {
	if d.hll != nil {
		d.hllAdd(h)
		return
	}
	d.hs = append(d.hs, h)
	if len(d.hs) >= max(2*d.sorted, 1<<12) {
		d.compact()
	}
}

// compact sorts and deduplicates the hashes, and turns them into a sketch
// once more than maxExact are distinct.
func (d *distinct) compact() {
	if d.hll != nil || d.sorted == len(d.hs) {
		return
	}
	sortHashes(d.hs[d.sorted:])
	d.hs = mergeUnique(d.hs[:d.sorted], d.hs[d.sorted:])
	d.sorted = len(d.hs)
	if len(d.hs) > maxExact {
		d.hll = make([]uint8, 1<<hllBits)
		for _, h := range d.hs {
			d.hllAdd(h)
		}
		d.hs, d.sorted = nil, 0
	}
}

// sortHashes sorts uniformly distributed hashes: a counting pass on their
// top bits, then each small bucket in place (linear in practice).
func sortHashes(hs []uint64) {
	if len(hs) < 256 {
		slices.Sort(hs)
		return
	}
	shift := 64 - bits.Len(uint(len(hs)/8))
	nb := 1 << (64 - shift)
	starts := make([]int, nb+1)
	for _, h := range hs {
		starts[h>>shift+1]++
	}
	for i := 1; i <= nb; i++ {
		starts[i] += starts[i-1]
	}
	out := make([]uint64, len(hs))
	next := slices.Clone(starts[:nb])
	for _, h := range hs {
		b := h >> shift
		out[next[b]] = h
		next[b]++
	}
	for b := 0; b < nb; b++ {
		slices.Sort(out[starts[b]:starts[b+1]])
	}
	copy(hs, out)
}

// mergeUnique merges two sorted runs that sit next to each other in one
// slice (a then b) into one sorted run without repeats; b may repeat.
func mergeUnique(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	push := func(h uint64) {
		if n := len(out); n == 0 || out[n-1] != h {
			out = append(out, h)
		}
	}
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			push(a[i])
			i++
		} else {
			push(b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		push(a[i])
	}
	for ; j < len(b); j++ {
		push(b[j])
	}
	return out
}

const hllBits = 14

func (d *distinct) hllAdd(h uint64) {
	idx := h >> (64 - hllBits)
	rank := uint8(bits.LeadingZeros64(h<<hllBits|1<<(hllBits-1)) + 1)
	if rank > d.hll[idx] {
		d.hll[idx] = rank
	}
}

// count is the exact count, or the sketch's estimate (est true).
func (d *distinct) count() (n int, est bool) {
	d.compact()
	if d.hll == nil {
		return len(d.hs), false
	}
	m := float64(len(d.hll))
	sum, zeros := 0.0, 0
	for _, r := range d.hll {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // small range correction
	}
	return int(e + 0.5), true
}

func (d *distinct) merge(o *distinct) {
	if o.hll == nil {
		if d.hll != nil {
			for _, h := range o.hs {
				d.hllAdd(h)
			}
			return
		}
		d.hs = append(d.hs, o.hs...)
		if len(d.hs) >= max(2*d.sorted, 1<<12) {
			d.compact()
		}
		return
	}
	if d.hll == nil {
		d.hll = make([]uint8, 1<<hllBits)
		for _, h := range d.hs {
			d.hllAdd(h)
		}
		d.hs, d.sorted = nil, 0
	}
	for i, r := range o.hll {
		d.hll[i] = max(d.hll[i], r)
	}
}

// openingCounts counts openings by the hash of their text; each text is
// kept once, in an arena.
type openingCounts struct {
	index map[uint64]int32 // hash -> entry
	ents  []openingEntry
	text  []byte
}

type openingEntry struct {
	hash    uint64
	n       int
	off, ln uint32 // the text in the arena
}

func (oc *openingCounts) len() int { return len(oc.ents) }

func (oc *openingCounts) textOf(e *openingEntry) []byte { return oc.text[e.off : e.off+e.ln] }

// add counts n more of the opening text, whose hash is h.
func (oc *openingCounts) add(h uint64, text []byte, n int) {
	if i, ok := oc.index[h]; ok {
		oc.ents[i].n += n
		return
	}
	if oc.index == nil {
		// Sized for the bound at once: no growing (and copying) later.
		oc.index = make(map[uint64]int32, maxOpenings+1)
		oc.ents = make([]openingEntry, 0, maxOpenings+1)
		oc.text = make([]byte, 0, 48*maxOpenings)
	}
	oc.index[h] = int32(len(oc.ents))
	oc.ents = append(oc.ents, openingEntry{hash: h, n: n, off: uint32(len(oc.text)), ln: uint32(len(text))})
	oc.text = append(oc.text, text...)
	if len(oc.ents) > maxOpenings {
		oc.prune()
	}
}

// prune drops the openings seen once so far (lossy counting): the counts
// stay bounded, and an opening that repeats often survives every prune.
func (oc *openingCounts) prune() {
	cut := 1
	if kept := len(oc.ents) - oc.countAtMost(1); kept > maxOpenings/2 {
		// Nearly everything repeats: drop the least frequent half.
		ns := make([]int, 0, len(oc.ents))
		for _, e := range oc.ents {
			if e.n > 1 {
				ns = append(ns, e.n)
			}
		}
		slices.Sort(ns)
		cut = ns[len(ns)/2]
	}
	// Compacted in place: entries and their texts lie in the same order,
	// so a kept text only moves down.
	ents, text := oc.ents[:0], oc.text[:0]
	clear(oc.index)
	for _, e := range oc.ents {
		if e.n <= cut {
			continue
		}
		t := oc.textOf(&e)
		e.off = uint32(len(text))
		text = append(text, t...)
		oc.index[e.hash] = int32(len(ents))
		ents = append(ents, e)
	}
	oc.ents, oc.text = ents, text
}

func (oc *openingCounts) countAtMost(n int) int {
	k := 0
	for _, e := range oc.ents {
		if e.n <= n {
			k++
		}
	}
	return k
}

// DiversitySummary is Diversity's figures.
type DiversitySummary struct {
	Dialogues         int     `json:"dialogues"`
	DistinctFirstUser int     `json:"distinct_first_user"`
	DistinctClosings  int     `json:"distinct_closings"`
	CodelessTurns     int     `json:"codeless_assistant_turns"`
	DistinctCodeless  int     `json:"distinct_codeless_assistant_turns"`
	TemplateShare     float64 `json:"template_share"` // dialogues made without a model
	// Estimated: a distinct count is a sketch's estimate (more than
	// 1,048,576 distinct texts), within about 1%.
	Estimated   bool      `json:"estimated,omitempty"`
	TopOpenings []Opening `json:"top_openings,omitempty"`
}

// Opening is the first words of assistant turns and how many turns begin so.
type Opening struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// hashSeed: the hashes only count distinct texts within one process.
var hashSeed = maphash.MakeSeed()

func hash64(s string) uint64 { return maphash.String(hashSeed, strings.TrimSpace(s)) }

// opening is the first six words of a turn's first line (what strings.Fields
// on that line would give, joined by single spaces), reading no further.
func opening(s string) string { return string(appendOpening(nil, s)) }

// appendOpening appends s's opening to b.
func appendOpening(b []byte, s string) []byte {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	words := 0
	for i := 0; i < len(s) && words < 6; {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		j := i
		for j < len(s) {
			r, size := rune(s[j]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[j:])
			}
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		if words > 0 {
			b = append(b, ' ')
		}
		b = append(b, s[i:j]...)
		words++
		i = j
	}
	return b
}

func hasFence(s string) bool { return strings.Contains(s, "```") || strings.Contains(s, "~~~") }

// Add counts one dialogue. It keeps nothing of d's strings (the Parquet
// reader passes views of its page buffers).
func (dv *Diversity) Add(d *Dialogue) {
	dv.dialogues++
	if d.Model == "" {
		dv.modelFree++
	}
	firstUser, lastAssistant := true, ""
	for _, m := range d.Messages {
		switch m.Role {
		case RoleUser:
			if firstUser {
				dv.firstUser.add(hash64(m.Content))
				firstUser = false
			}
		case RoleAssistant:
			lastAssistant = m.Content
			if dv.scratch = appendOpening(dv.scratch[:0], m.Content); len(dv.scratch) > 0 {
				dv.openings.add(maphash.Bytes(hashSeed, dv.scratch), dv.scratch, 1)
			}
			if !hasFence(m.Content) {
				dv.codeless++
				dv.codelessSet.add(hash64(m.Content))
			}
		}
	}
	if lastAssistant != "" {
		dv.closing.add(hash64(lastAssistant))
	}
}

// Summary returns the figures with the top openings repeated at least twice.
func (dv *Diversity) Summary(top int) DiversitySummary {
	s := DiversitySummary{Dialogues: dv.dialogues, CodelessTurns: dv.codeless}
	var e1, e2, e3 bool
	s.DistinctFirstUser, e1 = dv.firstUser.count()
	s.DistinctClosings, e2 = dv.closing.count()
	s.DistinctCodeless, e3 = dv.codelessSet.count()
	s.Estimated = e1 || e2 || e3
	if dv.dialogues > 0 {
		s.TemplateShare = float64(dv.modelFree) / float64(dv.dialogues)
	}
	for i := range dv.openings.ents {
		if e := &dv.openings.ents[i]; e.n > 1 {
			s.TopOpenings = append(s.TopOpenings, Opening{string(dv.openings.textOf(e)), e.n})
		}
	}
	sort.Slice(s.TopOpenings, func(i, j int) bool {
		a, b := s.TopOpenings[i], s.TopOpenings[j]
		return a.Count > b.Count || a.Count == b.Count && a.Text < b.Text
	})
	if len(s.TopOpenings) > top {
		s.TopOpenings = s.TopOpenings[:top]
	}
	return s
}

// Merge adds the dialogues o counted (o is left as it was).
func (dv *Diversity) Merge(o *Diversity) {
	dv.dialogues += o.dialogues
	dv.modelFree += o.modelFree
	dv.codeless += o.codeless
	dv.firstUser.merge(&o.firstUser)
	dv.closing.merge(&o.closing)
	dv.codelessSet.merge(&o.codelessSet)
	for i := range o.openings.ents {
		e := &o.openings.ents[i]
		dv.openings.add(e.hash, o.openings.textOf(e), e.n)
	}
}
