package schema

import (
	"hash/maphash"
	"math"
	"math/bits"
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
// undercounted. Not safe for concurrent use.
type Diversity struct {
	dialogues, modelFree, codeless  int
	firstUser, closing, codelessSet distinct
	openings                        map[string]int
}

// Bounds of Diversity's memory: about 16 bytes per exact hash, 80 per
// opening (variables for the tests).
var (
	maxExact    = 1 << 20
	maxOpenings = 1 << 17
)

// distinct counts distinct 64-bit hashes: exactly in a set while it is
// small, then in a HyperLogLog sketch (2^14 registers).
type distinct struct {
	set map[uint64]struct{}
	hll []uint8
}

func (d *distinct) add(h uint64) {
	if d.hll != nil {
		d.hllAdd(h)
		return
	}
	if d.set == nil {
		d.set = map[uint64]struct{}{}
	}
	d.set[h] = struct{}{}
	if len(d.set) > maxExact {
		d.hll = make([]uint8, 1<<hllBits)
		for k := range d.set {
			d.hllAdd(k)
		}
		d.set = nil
	}
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
	if d.hll == nil {
		return len(d.set), false
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
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	var b []byte
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
	return string(b)
}

func hasFence(s string) bool { return strings.Contains(s, "```") || strings.Contains(s, "~~~") }

// Add counts one dialogue.
func (dv *Diversity) Add(d *Dialogue) {
	if dv.openings == nil {
		dv.openings = map[string]int{}
	}
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
			if o := opening(m.Content); o != "" {
				dv.openings[o]++
				if len(dv.openings) > maxOpenings {
					dv.pruneOpenings()
				}
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
	for t, n := range dv.openings {
		if n > 1 {
			s.TopOpenings = append(s.TopOpenings, Opening{t, n})
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

// pruneOpenings drops the openings seen once so far (lossy counting): the
// map stays bounded, and an opening that repeats often survives every prune.
func (dv *Diversity) pruneOpenings() {
	for o, n := range dv.openings {
		if n <= 1 {
			delete(dv.openings, o)
		}
	}
	if len(dv.openings) > maxOpenings/2 {
		// Nearly everything repeats: drop the least frequent half.
		counts := make([]int, 0, len(dv.openings))
		for _, n := range dv.openings {
			counts = append(counts, n)
		}
		sort.Ints(counts)
		cut := counts[len(counts)/2]
		for o, n := range dv.openings {
			if n <= cut {
				delete(dv.openings, o)
			}
		}
	}
}
