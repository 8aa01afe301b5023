package leak

import (
	"cmp"
	"slices"
)

// The statement gate lets a message skip the statement and literal
// matching when neither can find anything in it, without losing a
// finding (TestGateLosesNothing compares the gated and ungated audits):
//
//   - A statement finding for task t needs, in one message, statements
//     holding Threshold of t's statement weight and MinInfo of evidence
//     (the share), or all of t's statements (a whole match). Only the
//     indexed statements (shared by at most maxStmtTasks tasks) count in
//     the share, so a message without any of t's heaviest indexed
//     statements, enough of them that the others weigh less than that
//     bar, cannot reach it. Those statements, over all tasks (and, for a
//     task whose share cannot reach the bar anyway, its heaviest
//     statement, for the whole match), are the signature: a message none
//     of whose statements is in it is passed over. Most messages share
//     only common, light statements (`return result`) with the
//     benchmarks, and the light statements are in no signature.
//   - A literal finding needs a literal key of the index: a long string
//     (one token, its exact hash known) or a table, whose first two
//     literals are known (litStartHash). A message with neither computes
//     no literal keys.
//
// The statements themselves are still cut and renamed: the renamed
// k-grams of the fingerprints hash the names unbindNames renames.
type stmtGate struct {
	sig *hashTable
	// sigBits has a bit per signature hash (sigBit): most statements are
	// in no signature, and a bit test spares them a table probe.
	sigBits [1 << 12]uint64
	lit     [1 << 10]uint64 // a bit per litStartHash of a literal key (65,536 bits)
}

// buildSignature sets x.stSig from the statement tables (stIdx maps a
// statement hash to its stEntries index).
func (x *Index) buildSignature(stIdx map[uint64]int32) {
	o := x.stOpts
	type weighed struct {
		h       uint64
		w       float64
		indexed bool
	}
	sig := map[uint64]bool{}
	var ws []weighed
	for t, list := range x.stList {
		ws = ws[:0]
		indexed := 0.0
		for i, h := range list { // sorted: a repeated statement counts once, as in the share
			if i > 0 && list[i-1] == h {
				continue
			}
			e := &x.stEntries[stIdx[h]]
			in := len(e.tasks) <= maxStmtTasks
			ws = append(ws, weighed{h, float64(e.w), in})
			if in {
				indexed += float64(e.w)
			}
		}
		if len(ws) == 0 {
			continue
		}
		slices.SortStableFunc(ws, func(a, b weighed) int { return cmp.Compare(b.w, a.w) })
		// The share fails below either bar; the margin covers the float32
		// sums of the matcher.
		bar := max((o.Threshold-1e-6)*float64(x.stTotal[t]), o.MinInfo)
		rest, n := indexed, 0
		for _, s := range ws {
			if rest*(1+1e-4)+1e-4 < bar {
				break
			}
			if s.indexed {
				sig[s.h] = true
				rest -= s.w
				n++
			}
		}
		if n == 0 {
			sig[ws[0].h] = true // a whole match holds every statement
		}
	}
	x.stSig = make([]uint64, 0, len(sig))
	for h := range sig {
		x.stSig = append(x.stSig, h)
	}
	slices.Sort(x.stSig)
}

func newStmtGate(xs []*Index) *stmtGate {
	g := &stmtGate{}
	n := 0
	for _, x := range xs {
		n += len(x.stSig)
	}
	g.sig = newHashTable(n)
	for _, x := range xs {
		for _, h := range x.stSig {
			g.sig.put(h, 0)
			b := sigBit(h)
			g.sigBits[b>>6] |= 1 << (b & 63)
		}
		for _, h := range x.litStarts {
			b := litBit(h)
			g.lit[b>>6] |= 1 << (b & 63)
		}
	}
	return g
}

func litBit(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> 48 }

// sigBit is the bit of stmtGate.sigBits for a statement hash.
func sigBit(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> 46 }

// statements reports whether a statement of sts is in a signature.
func (g *stmtGate) statements(sts []stmt) bool {
	for _, st := range sts {
		if b := sigBit(st.h); g.sigBits[b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		if _, ok := g.sig.get(st.h); ok {
			return true
		}
	}
	return false
}

// litStartHash is what starts a literal key of toks (its tokens): a
// string's exact hash, or a table's first two literals.
func litStartHash(toks []ctok) uint64 {
	if len(toks) == 1 {
		return toks[0].exact
	}
	return litPair(toks[0].exact, toks[tableNext(toks, 0)].exact)
}

func litPair(a, b uint64) uint64 { return fmix64(a ^ fmix64(b^litSalt)) }

// tableNext is the position of the literal after toks[k] and its ','
// or ':' in a table (after a '-' sign), as literalKeys reads a table.
func tableNext(toks []ctok, k int) int {
	if nx := k + 2; toks[nx].exact == hMinus && nx+1 < len(toks) {
		return nx + 1
	}
	return k + 2
}

// literals reports whether toks may hold a literal key of an index: a
// string or the start of a table whose litStartHash is in the set. lits
// are the positions of toks' literals (tokMarks.lits, or literalTokens).
func (g *stmtGate) literals(toks []ctok, lits []int32) bool {
	has := func(h uint64) bool { b := litBit(h); return g.lit[b>>6]&(1<<(b&63)) != 0 }
	for _, k := range lits {
		t := &toks[k]
		if has(t.exact) {
			return true
		}
		if int(k)+2 < len(toks) && (toks[k+1].exact == hComma || toks[k+1].exact == hColon) && has(litPair(t.exact, toks[tableNext(toks, int(k))].exact)) {
			return true
		}
	}
	return false
}

// isLiteral reports whether toks[k] (a code token of text) is a literal:
// a number, or a string, which starts or ends with a quote.
func isLiteral(text string, t *ctok) bool {
	c := codeClass[text[t.start]]
	return c == cDigit || c == cQuote || codeClass[text[t.end-1]] == cQuote
}

// literalTokens appends the positions of toks' literals to out.
func literalTokens(text string, toks []ctok, out []int32) []int32 {
	for k := range toks {
		if isLiteral(text, &toks[k]) {
			out = append(out, int32(k))
		}
	}
	return out
}
