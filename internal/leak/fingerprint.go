package leak

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// FingerprintOptions set the rename-invariant code fingerprints (measure 3,
// as MOSS and Dolos do it). Zero fields take DefaultFingerprintOptions.
type FingerprintOptions struct {
	// K is the k-gram length in code tokens.
	K int `json:"k"`
	// Window is the winnowing window: of every Window consecutive k-gram
	// hashes of a benchmark task the smallest is its fingerprint, so any
	// stretch of K+Window-1 tokens a dialogue shares with the task shares
	// at least one fingerprint.
	Window int `json:"window"`
	// Threshold: a dialogue is flagged against a task when it holds at
	// least this weighted share of the fingerprints of the task's solution,
	// or of its tests, in either form (exact or renamed).
	Threshold float64 `json:"threshold"`
	// MinMatches is the least number of distinct fingerprints behind a
	// flag in the renamed form, so a few generic tokens are not a match
	// (in the exact form, where names must agree, a task part with fewer
	// fingerprints needs all of them).
	MinMatches int `json:"min_matches"`
	// MinWeight is the least information behind a flag: the matched
	// fingerprints' weights (1/tasks holding each) must add up to this, so
	// boilerplate that many tasks share attributes to none of them.
	MinWeight float64 `json:"min_weight"`
	// RenamedThreshold is Threshold for the renamed form, higher because
	// structure alone is weaker evidence than structure and names.
	RenamedThreshold float64 `json:"renamed_threshold"`
	// MinRenamedTokens is the least length, in code tokens, of a task part
	// the renamed form may flag: a renamed copy of a shorter solution (an
	// average, a de-duplicating loop) is the textbook code many unrelated
	// dialogues hold, and only its exact form is evidence.
	MinRenamedTokens int `json:"min_renamed_tokens"`
	// Off turns the measure off.
	Off bool `json:"off,omitempty"`
}

// DefaultFingerprintOptions are the documented defaults.
var DefaultFingerprintOptions = FingerprintOptions{K: 9, Window: 4, Threshold: 0.6, MinMatches: 3, MinWeight: 1, MinRenamedTokens: 40, RenamedThreshold: 0.7}

func (o FingerprintOptions) withDefaults() FingerprintOptions {
	d := DefaultFingerprintOptions
	o.K = cmp.Or(o.K, d.K)
	o.Window = cmp.Or(o.Window, d.Window)
	o.Threshold = cmp.Or(o.Threshold, d.Threshold)
	o.MinMatches = cmp.Or(o.MinMatches, d.MinMatches)
	o.MinWeight = cmp.Or(o.MinWeight, d.MinWeight)
	o.MinRenamedTokens = cmp.Or(o.MinRenamedTokens, d.MinRenamedTokens)
	o.RenamedThreshold = cmp.Or(o.RenamedThreshold, d.RenamedThreshold)
	return o
}

// Fingerprint streams: the exact form keeps identifiers as written; the
// renamed form makes every user identifier alike.
const (
	streamExact = iota
	streamRenamed
	nStreams
)

// Task parts a fingerprint belongs to.
const (
	partSolution = iota
	partTests
	partSetup
	nParts
)

var streamName = [nStreams]string{"exact", "renamed"}
var partName = [nParts]string{"solution", "test", "test-setup"}

// streamSalt separates the two streams' hashes in one table.
var streamSalt = [nStreams]uint64{0x243F6A8885A308D3, 0x13198A2E03707344}

// fpRef is one task part holding a fingerprint.
type fpRef struct {
	task   int32
	part   uint8
	stream uint8
}

// fpEntry is a fingerprint's postings and its weight: 1/(tasks holding
// it), so a fingerprint that many tasks share (boilerplate, a common
// loop) spreads its evidence over all of them and attributes to none.
type fpEntry struct {
	refs []fpRef
	w    float32
	// named: an exact-form k-gram holding a rare token (see maxNameTasks).
	named bool
}

// maxNameTasks is the most benchmark tasks whose code may hold a token
// (a name, a literal) for it to count as rare. The exact form's extra
// evidence over the renamed form is that names and values agree; when
// only tokens many tasks use agree (arr, n, i, j, 0, 1), the match is
// structure alone, and only the renamed form, with its stricter bar, may
// flag it. So a bubble sort with arr/n/i/j is not attributed to Mbpp/101
// (a k-th element task whose solution is that bubble sort), nor
// "(n): return n * (n + 1) // 2" to Mbpp/35's "n*(n + 1)"; a copied
// HumanEval test still is, by its literals.
const maxNameTasks = 3

// fpTotals are a task's fingerprint counts and weights per stream and part.
type fpTotals struct {
	tokens [nParts]int32 // code tokens of each part
	n      [nStreams][nParts]int32
	w      [nStreams][nParts]float32
}

// winnow appends the fingerprints of hs (robust winnowing: the minimum of
// every window of w hashes, the rightmost on ties, each selection once) to
// out. A sequence shorter than a window gives its minimum.
func winnow(hs []uint64, w int, out []uint64) []uint64 {
	if len(hs) == 0 {
		return out
	}
	if len(hs) <= w {
		m := hs[0]
		for _, h := range hs[1:] {
			m = min(m, h)
		}
		return append(out, m)
	}
	last := -1
	for i := 0; i+w <= len(hs); i++ {
		mi := i
		for j := i + 1; j < i+w; j++ {
			if hs[j] <= hs[mi] {
				mi = j
			}
		}
		if mi != last {
			out = append(out, hs[mi])
			last = mi
		}
	}
	return out
}

// stripDocstrings removes the triple-quoted strings of a HumanEval prompt:
// they are the task's statement, not its code, and a copy without them is
// still a copy of the code.
func stripDocstrings(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, `"""`)
		j := strings.Index(s, `'''`)
		if i < 0 || j >= 0 && j < i {
			i = j
		}
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		q := s[i : i+3]
		k := strings.Index(s[i+3:], q)
		if k < 0 {
			b.WriteString(s[:i])
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+3+k+3:]
	}
}

// buildFingerprints fills x's fingerprint table from the task code parts.
func (x *Index) buildFingerprints(parts [][nParts]string, o FingerprintOptions) {
	x.fpOpts = o
	fpIndex := map[uint64]int32{}
	x.fpTotals = make([]fpTotals, len(parts))
	var toks []ctok
	var th, gh, sel []uint64
	var sts []stmt
	type key struct {
		h    uint64
		part uint8
	}
	// Document frequency of every token (exact hash) over the tasks:
	// keywords, operators and textbook names (arr, n, i) have high ones;
	// a function's name or a test's literal, low ones.
	tokenDF := map[uint64]int32{}
	for _, ps := range parts {
		seen := map[uint64]bool{}
		for _, code := range ps {
			for _, t := range codeTokens(code, toks[:0]) {
				seen[t.exact] = true
			}
		}
		for h := range seen {
			tokenDF[h]++
		}
	}
	var rare []bool
	namedGram := map[uint64]bool{}
	for ti, ps := range parts {
		seen := map[key]bool{}
		for p, code := range ps {
			toks = codeTokens(code, toks[:0])
			// The builtin names the code binds are renamed as in a
			// dialogue's code (see unbindNames).
			sts = codeStatements(code, toks, sts[:0])
			// namedGram: the exact k-grams of this part holding a rare token.
			clear(namedGram)
			rare = rare[:0]
			for _, t := range toks {
				rare = append(rare, tokenDF[t.exact] <= maxNameTasks)
			}
			x.fpTotals[ti].tokens[p] = int32(len(toks))
			for s := range nStreams {
				th = th[:0]
				for _, t := range toks {
					if s == streamExact {
						th = append(th, t.exact)
					} else {
						th = append(th, t.norm)
					}
				}
				gh = rollingHashes(th, o.K, gh[:0])
				if s == streamExact {
					n := 0 // rare tokens in the current k-gram
					for i := range toks {
						if rare[i] {
							n++
						}
						if i >= o.K && rare[i-o.K] {
							n--
						}
						if i >= o.K-1 && n > 0 {
							namedGram[gh[i-o.K+1]] = true
						}
					}
				}
				sel = winnow(gh, o.Window, sel[:0])
				if len(sel) < 2*o.MinMatches {
					// A short part (a one-line function, one assert) keeps
					// every k-gram: winnowing would leave one or two
					// fingerprints, too few to weigh.
					sel = append(sel[:0], gh...)
				}
				for _, h := range sel {
					h ^= streamSalt[s]
					if seen[key{h, uint8(p)}] {
						continue
					}
					seen[key{h, uint8(p)}] = true
					ei, ok := fpIndex[h]
					if !ok {
						ei = int32(len(x.fpEntries))
						fpIndex[h] = ei
						x.fpEntries = append(x.fpEntries, fpEntry{})
					}
					e := &x.fpEntries[ei]
					e.refs = append(e.refs, fpRef{task: int32(ti), part: uint8(p), stream: uint8(s)})
					if s == streamExact && namedGram[h^streamSalt[s]] {
						e.named = true
					}
				}
			}
		}
	}
	for i := range x.fpEntries {
		e := &x.fpEntries[i]
		df := 0
		for k, r := range e.refs {
			if k == 0 || r.task != e.refs[k-1].task {
				df++
			}
		}
		e.w = 1 / float32(df)
		for _, r := range e.refs {
			t := &x.fpTotals[r.task]
			t.n[r.stream][r.part]++
			t.w[r.stream][r.part] += e.w
		}
	}
	// A fingerprint that many tasks hold (a `for i in range(len(x))`
	// header) carries almost no evidence but is what dialogues hit most:
	// it stays in the tasks' totals and leaves the lookup table.
	//
	// A renamed-form fingerprint of a part too short for the renamed form
	// to flag (MinRenamedTokens) can never decide anything either: its ref
	// leaves too, and so does an entry left without refs. Renamed forms of
	// common code are what dialogues hit most.
	// The renamed k-grams of textbook code (generic.py) decide nothing:
	// a prime loop or a bubble sort is no copy of the task that uses one.
	generic := genericKGrams(o.K)
	x.fpIndex = newHashTable(len(fpIndex))
	for h, ei := range fpIndex {
		e := &x.fpEntries[ei]
		if e.w < 1/float32(maxFingerprintTasks) {
			e.refs = nil
			continue
		}
		refs := e.refs[:0]
		for _, r := range e.refs {
			if r.stream == streamRenamed && (x.fpTotals[r.task].tokens[r.part] < int32(o.MinRenamedTokens) || generic[h]) {
				continue
			}
			refs = append(refs, r)
		}
		if e.refs = refs; len(refs) == 0 {
			continue
		}
		x.fpIndex.put(h, ei)
	}
}

// maxFingerprintTasks is the most tasks a fingerprint may be shared by and
// still be looked up (its weight is then at least 1/maxFingerprintTasks).
const maxFingerprintTasks = 16

// fpHit collects what one dialogue shares with one task.
type fpHit struct {
	named [nParts]int32 // exact-form fingerprints holding a rare token
	n     [nStreams][nParts]int32
	w     [nStreams][nParts]float32
	spans []schema.Span
}

// fpState is one worker's fingerprint bookkeeping for one dialogue
// against one index, in flat arrays stamped with a generation so nothing
// is cleared or allocated per dialogue.
type fpState struct {
	gen       uint32
	entryGen  []uint32 // per fingerprint entry: gen when last counted
	taskGen   []uint32 // per task: gen when hitOf was set
	hitOf     []int32  // per task: index in hits
	hits      []fpHit
	hitTasks  []int32
	lastIndex *Index
}

// reset prepares st for a dialogue against x.
func (st *fpState) reset(x *Index) {
	st.gen++
	if st.gen == 0 || st.lastIndex != x {
		// A new index (or a wrapped generation): the stamps of the last
		// one mean nothing here.
		st.gen = 1
		st.entryGen = resize(st.entryGen, len(x.fpEntries))
		st.taskGen = resize(st.taskGen, len(x.tasks))
		if cap(st.hitOf) < len(x.tasks) {
			st.hitOf = make([]int32, len(x.tasks))
		}
		st.hitOf = st.hitOf[:len(x.tasks)]
		st.lastIndex = x
	}
	st.hits = st.hits[:0]
	st.hitTasks = st.hitTasks[:0]
}

func resize(b []uint32, n int) []uint32 {
	if cap(b) < n {
		return make([]uint32, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// hit returns the record of what the dialogue shares with task t.
func (st *fpState) hit(t int32) *fpHit {
	if st.taskGen[t] == st.gen {
		return &st.hits[st.hitOf[t]]
	}
	st.taskGen[t] = st.gen
	st.hitOf[t] = int32(len(st.hits))
	st.hitTasks = append(st.hitTasks, t)
	if len(st.hits) < cap(st.hits) {
		st.hits = st.hits[:len(st.hits)+1]
		h := &st.hits[len(st.hits)-1]
		*h = fpHit{spans: h.spans[:0]}
		return h
	}
	st.hits = append(st.hits, fpHit{})
	return &st.hits[len(st.hits)-1]
}

// matchFingerprints adds the dialogue's fingerprint findings against x,
// index bi, to r.
func (a *Auditor) matchFingerprints(bi int, x *Index, s *scratch, id string, r *Result) {
	o := x.fpOpts
	st := s.fp(x)
	nx := len(a.indexes)
	// Messages in order, then streams, as the k-grams were computed.
	for s2 := range nStreams {
		for _, c := range s.fpCand[s2] {
			ei := a.fpEnt[int(c.at)*nx+bi]
			if ei < 0 || st.entryGen[ei] == st.gen {
				continue // absent, or counted already (its refs are distinct task parts)
			}
			st.entryGen[ei] = st.gen
			e := &x.fpEntries[ei]
			m := s.ctMsgs[c.m]
			toks := s.ctoks[m.t0:m.t1]
			span := schema.Span{Message: m.msg, Start: int(toks[c.gi].start), End: int(toks[int(c.gi)+o.K-1].end)}
			for _, ref := range e.refs {
				hit := st.hit(ref.task)
				hit.n[ref.stream][ref.part]++
				hit.w[ref.stream][ref.part] += e.w
				if e.named {
					hit.named[ref.part]++
				}
				hit.spans = addSpan(hit.spans, span)
			}
		}
	}
	if len(st.hitTasks) == 0 {
		return
	}
	tasks := st.hitTasks
	slices.Sort(tasks)
	for _, t := range tasks {
		hit := st.hit(t)
		tot := &x.fpTotals[t]
		best, bs, bp := 0.0, 0, 0
		for st := range nStreams {
			for p := range nParts {
				need := int32(o.MinMatches)
				if st == streamExact {
					if hit.named[p] == 0 {
						continue // no rare token agrees: structure only
					}
					need = min(need, tot.n[st][p])
				} else if tot.tokens[p] < int32(o.MinRenamedTokens) {
					continue
				}
				if hit.n[st][p] < max(need, 1) || tot.w[st][p] == 0 || float64(hit.w[st][p]) < o.MinWeight {
					continue
				}
				sc := float64(hit.w[st][p] / tot.w[st][p])
				if st == streamRenamed && sc < o.RenamedThreshold {
					continue
				}
				if sc > best {
					best, bs, bp = sc, st, p
				}
			}
		}
		if best < o.Threshold {
			continue
		}
		r.Findings = append(r.Findings, schema.Finding{
			DialogueID: id, Benchmark: x.name, TaskID: x.tasks[t].id, Method: MethodFingerprint,
			Score: min(best, 1),
			Evidence: fmt.Sprintf("%s form: %d of %d %s fingerprints (weighted share %.2f); %s",
				streamName[bs], hit.n[bs][bp], tot.n[bs][bp], partName[bp], best, spansText(hit.spans)),
			Spans: slices.Clone(hit.spans),
		})
	}
}

// addSpan adds sp to spans, merging it with an overlapping span of the
// same message (k-gram hits overlap heavily).
func addSpan(spans []schema.Span, sp schema.Span) []schema.Span {
	for i := range spans {
		s := &spans[i]
		if s.Message == sp.Message && sp.Start <= s.End && sp.End >= s.Start {
			s.Start, s.End = min(s.Start, sp.Start), max(s.End, sp.End)
			return spans
		}
	}
	return append(spans, sp)
}

func spansText(spans []schema.Span) string {
	var b strings.Builder
	b.WriteString("spans:")
	for i, s := range spans {
		if i == 4 {
			fmt.Fprintf(&b, " +%d more", len(spans)-4)
			break
		}
		fmt.Fprintf(&b, " turn %d [%d:%d]", s.Message, s.Start, s.End)
	}
	return b.String()
}

// kgramCandidates appends to s.fpCand the k-grams of toks, the code
// tokens of message ctMsgs[mi] (appended next), whose salted hash passes
// the filter and some index holds (fpAt), both streams in one pass: the
// rolling hash of rollingHashes over each form of the tokens.
//
// sts are toks' statements, which cover them in order (statements): their
// hashes are set here too, as hashStatements would.
func (a *Auditor) kgramCandidates(s *scratch, mi int, toks []ctok, k int, sts []stmt) {
	var top uint64 = 1 // B^(k-1)
	for range k - 1 {
		top *= rollBase
	}
	var he, hn, sh uint64
	si, end := 0, int32(-1) // the statement being hashed, and its end
	if len(sts) > 0 {
		end = sts[0].t1
	}
	// stmtHash adds token i to the statement hash.
	stmtHash := func(i int, norm uint64) {
		sh = sh*rollBase + norm
		if int32(i+1) == end {
			sts[si].h = sh ^ stmtSalt
			sh, si = 0, si+1
			if si < len(sts) {
				end = sts[si].t1
			}
		}
	}
	for i, t := range toks[:k-1] {
		he = he*rollBase + t.exact
		hn = hn*rollBase + t.norm
		stmtHash(i, t.norm)
	}
	se, sn := streamSalt[streamExact], streamSalt[streamRenamed]
	for i := k - 1; i < len(toks); i++ {
		t := &toks[i]
		he = he*rollBase + t.exact
		hn = hn*rollBase + t.norm
		stmtHash(i, t.norm)
		gi := int32(i - k + 1)
		if h := he ^ se; a.filter.mayHold(h) {
			if at := s.fpRow(a, h); at >= 0 {
				s.fpCand[streamExact] = append(s.fpCand[streamExact], fpCand{m: int32(mi), gi: gi, at: at})
			}
		}
		if h := hn ^ sn; a.filter.mayHold(h) {
			if at := s.fpRow(a, h); at >= 0 {
				s.fpCand[streamRenamed] = append(s.fpCand[streamRenamed], fpCand{m: int32(mi), gi: gi, at: at})
			}
		}
		o := &toks[i-k+1]
		he -= o.exact * top
		hn -= o.norm * top
	}
}

// fpCacheBits sets the size of a worker's cache of fpAt lookups:
// 1<<fpCacheBits entries (4,096, 64 KiB).
const fpCacheBits = 12

// fpCacheEntry is a k-gram hash and its row in Auditor.fpEnt plus 2
// (1: no index holds it; 0: an empty entry).
type fpCacheEntry struct {
	h    uint64
	row2 int32
}

// fpRow returns h's row in a.fpEnt, or -1 if no index holds it. The
// k-grams that pass the filter are mostly code idioms that recur from
// one message and dialogue to the next, and fpAt (megabytes) misses the
// cache on nearly every probe: a small direct-mapped cache of the
// answers, exact as it keeps the whole hash, spares most probes.
func (s *scratch) fpRow(a *Auditor, h uint64) int32 {
	c := &s.fpCache[(h*0x9E3779B97F4A7C15)>>(64-fpCacheBits)]
	if c.h == h && c.row2 != 0 {
		return c.row2 - 2
	}
	row, ok := a.fpAt.get(h)
	if !ok {
		row = -1
	}
	*c = fpCacheEntry{h: h, row2: row + 2}
	return row
}

// genericKGrams returns the salted renamed-form k-gram hashes of
// generic.py.
func genericKGrams(k int) map[uint64]bool {
	toks := codeTokens(genericCode, nil)
	codeStatements(genericCode, toks, nil)
	th := make([]uint64, len(toks))
	for i, t := range toks {
		th[i] = t.norm
	}
	m := map[uint64]bool{}
	for _, h := range rollingHashes(th, k, nil) {
		m[h^streamSalt[streamRenamed]] = true
	}
	return m
}
