package schema

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
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
// undercounted. What it keeps holds no pointers inside (hashes, counts, one
// text arena), so the collector does not scan it, and merging two is a few
// passes over flat slices. Not safe for concurrent use.
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
	// spare is what compact sorts and merges into, then hands back: the
	// two buffers take turns instead of a new one per compaction.
	spare []uint64
	hll   []uint8
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
	if cap(d.spare) < len(d.hs) {
		// Room for the appends up to the next compaction, at twice
		// the hashes: none of them grows the slice.
		d.spare = make([]uint64, 0, 2*len(d.hs))
	}
	sortHashes(d.hs[d.sorted:], d.spare[:len(d.hs)-d.sorted])
	d.hs, d.spare = mergeUnique(d.spare[:0], d.hs[:d.sorted], d.hs[d.sorted:]), d.hs[:0]
	d.sorted = len(d.hs)
	if len(d.hs) > maxExact {
		d.hll = make([]uint8, 1<<hllBits)
		for _, h := range d.hs {
			d.hllAdd(h)
		}
		d.hs, d.sorted, d.spare = nil, 0, nil
	}
}

// sortHashes sorts uniformly distributed hashes: a counting pass on their
// top bits, then each small bucket in place (linear in practice). out, as
// long as hs, is its scratch.
func sortHashes(hs, out []uint64) {
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

// mergeUnique appends to out (which holds neither) the merge of the sorted
// runs a and b as one sorted run without repeats; b may repeat.
func mergeUnique(out, a, b []uint64) []uint64 {
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
		d.hs, d.sorted, d.spare = nil, 0, nil
	}
	for i, r := range o.hll {
		d.hll[i] = max(d.hll[i], r)
	}
}

// openingCounts counts openings by the hash of their text in an open
// addressing table of 16-byte slots holding the count (a hit touches one
// cache line, and the table stays within a core's cache); each text is kept
// once, in an arena, after its length. The table grows with the openings
// up to the bound, so a small corpus (or row group) touches little memory.
type openingCounts struct {
	slots []openingSlot // power of two, at most about half full
	used  int
	text  []byte // the arena
	kept  []openingSlot
}

type openingSlot struct {
	hash uint64
	n    uint32 // 0: an empty slot
	off  uint32 // the text's length (uvarint) and bytes in the arena
}

const minOpeningSlots = 1 << 10

func (oc *openingCounts) len() int { return oc.used }

func (oc *openingCounts) textOf(e *openingSlot) []byte {
	ln, k := binary.Uvarint(oc.text[e.off:])
	start := int(e.off) + k
	return oc.text[start : start+int(ln)]
}

// add counts n more of the opening text, whose hash is h; text is copied
// if new.
func (oc *openingCounts) add(h uint64, text string, n int) {
	if oc.slots == nil {
		oc.slots = make([]openingSlot, min(minOpeningSlots, maxOpeningSlots()))
	}
	e := oc.slot(h)
	if e.n > 0 {
		e.n = uint32(min(int(e.n)+n, math.MaxUint32))
		return
	}
	*e = openingSlot{hash: h, n: uint32(min(n, math.MaxUint32)), off: uint32(len(oc.text))}
	if need := len(oc.text) + binary.MaxVarintLen64 + len(text); need > cap(oc.text) {
		// Doubling: append grows a large slice by a quarter, copying
		// the arena several times over on its way up.
		oc.text = slices.Grow(oc.text, max(2*cap(oc.text), need, 16<<10)-len(oc.text))
	}
	oc.text = binary.AppendUvarint(oc.text, uint64(len(text)))
	oc.text = append(oc.text, text...)
	if oc.used++; oc.used > maxOpenings {
		oc.prune()
	} else if 2*oc.used > len(oc.slots) && len(oc.slots) < maxOpeningSlots() {
		oc.grow()
	}
}

// maxOpeningSlots is the table's size at the bound: at most half full.
func maxOpeningSlots() int { return 1 << bits.Len(uint(2*maxOpenings-1)) }

// grow doubles the table; the arena stays as it is.
func (oc *openingCounts) grow() {
	old := oc.slots
	oc.slots = make([]openingSlot, 2*len(old))
	for _, e := range old {
		if e.n > 0 {
			*oc.slot(e.hash) = e
		}
	}
}

// slot is h's slot, or the empty slot where it goes.
func (oc *openingCounts) slot(h uint64) *openingSlot {
	mask := uint64(len(oc.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if e := &oc.slots[i]; e.n == 0 || e.hash == h {
			return e
		}
	}
}

// prune drops the openings seen once so far (lossy counting): the counts
// stay bounded, and an opening that repeats often survives every prune.
func (oc *openingCounts) prune() {
	kept := oc.kept[:0]
	for _, e := range oc.slots {
		if e.n > 1 {
			kept = append(kept, e)
		}
	}
	if len(kept) > maxOpenings/2 {
		// Nearly everything repeats: drop the least frequent half.
		ns := make([]uint32, len(kept))
		for i, e := range kept {
			ns[i] = e.n
		}
		slices.Sort(ns)
		cut := ns[len(ns)/2]
		kept = slices.DeleteFunc(kept, func(e openingSlot) bool { return e.n <= cut })
	}
	// The kept texts move down the arena in arena order: each lands at or
	// before where it was, after the ones already moved, so none is
	// overwritten before it moves (and its length takes as many bytes).
	slices.SortFunc(kept, func(a, b openingSlot) int { return cmp.Compare(a.off, b.off) })
	text := oc.text[:0]
	clear(oc.slots)
	for _, e := range kept {
		t := oc.textOf(&e)
		e.off = uint32(len(text))
		text = binary.AppendUvarint(text, uint64(len(t)))
		text = append(text, t...)
		*oc.slot(e.hash) = e
	}
	oc.used, oc.kept, oc.text = len(kept), kept, text
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
func opening(s string) string {
	var b []byte
	return strings.Clone(openingOf(s, &b))
}

// openingOf is s's opening: a prefix of s when it is one, else built in
// *scratch (and then valid until scratch is next written).
func openingOf(s string, scratch *[]byte) string {
	if op, ok := openingASCII(s); ok {
		return op
	}
	*scratch = appendOpening((*scratch)[:0], s)
	return bytesView(*scratch)
}

// openingASCII is s's opening when s opens on ASCII words separated by
// single spaces, as most turns do: then it is a prefix of s, read with
// fewer branches than appendOpening takes. ok is false otherwise.
func openingASCII(s string) (op string, ok bool) {
	words := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\n':
			if i == 0 || s[i-1] == ' ' {
				return "", false // leading or repeated space
			}
			if c == '\n' {
				return s[:i], true
			}
			if words++; words == 6 {
				return s[:i], true
			}
		case c >= utf8.RuneSelf || asciiSpace[c]:
			return "", false // maybe a Unicode space; tabs, CR
		}
	}
	if len(s) > 0 && s[len(s)-1] == ' ' {
		return "", false
	}
	return s, true
}

// bytesView is b as a string without a copy: b must not change while the
// string is in use.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// appendOpening appends s's opening to b in one pass: leading space
// (newlines too) skipped, then words up to the end of that line.
func appendOpening(b []byte, s string) []byte {
	i, words := 0, 0
	for i < len(s) {
		size := spaceAt(s, i)
		if size == 0 {
			break
		}
		i += size
	}
	for i < len(s) && words < 6 {
		if s[i] == '\n' {
			break
		}
		if size := spaceAt(s, i); size > 0 {
			i += size
			continue
		}
		j := i
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if asciiSpace[c] {
					break
				}
				j++
				continue
			}
			if spaceAt(s, j) > 0 {
				break
			}
			_, size := utf8.DecodeRuneInString(s[j:])
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

// asciiSpace: the ASCII bytes unicode.IsSpace accepts.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// spaceAt is the size of the space character at s[i], or 0 when it is none.
func spaceAt(s string, i int) int {
	if c := s[i]; c < utf8.RuneSelf {
		if asciiSpace[c] {
			return 1
		}
		return 0
	}
	if r, size := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r) {
		return size
	}
	return 0
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
			if op := openingOf(m.Content, &dv.scratch); op != "" {
				dv.openings.add(maphash.String(hashSeed, op), op, 1)
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
	for i := range dv.openings.slots {
		if e := &dv.openings.slots[i]; e.n > 1 {
			s.TopOpenings = append(s.TopOpenings, Opening{string(dv.openings.textOf(e)), int(e.n)})
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
	for i := range o.openings.slots {
		if e := &o.openings.slots[i]; e.n > 0 {
			dv.openings.add(e.hash, bytesView(o.openings.textOf(e)), int(e.n))
		}
	}
}
