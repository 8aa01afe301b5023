// Package leak measures how much of a dialogue corpus leaks benchmark
// problems (HumanEval, MBPP, their EvalPlus versions, or any problem file)
// and finds the dialogues to remove.
//
// Two text measures run on every dialogue:
//
//   - Lines (the OpenCodeInterpreter paper's method). The code of a dialogue
//     (fenced blocks of user and assistant turns) and of each benchmark task
//     (solution and tests) is split into lines, whitespace-normalised
//     (NormalizeLine) and filtered (LineOptions.Keep drops blank, trivial,
//     punctuation-only, comment, import and short lines). A dialogue code line
//     is shared with a benchmark when it lies in a window of Window
//     consecutive dialogue code lines (default 2, inside one code block)
//     that also occurs as consecutive code lines of one task of that
//     benchmark. The corpus ratio is shared lines / code lines, per
//     benchmark and over all benchmarks. Against one task, a dialogue's line
//     score is the larger of two fractions: of the task's solution code
//     lines, and of its test code lines, that lie in matched windows.
//   - N-grams. Every message's text is split into lowercased word tokens
//     (runs of letters, digits and '_'; punctuation separates and is
//     dropped) and every N-token window (default 13) is hashed; a dialogue
//     and a task match when they share a hash. The task's text is its
//     statement, prompt, solution, tests and setup. Only informative n-grams
//     are indexed: at least 3 distinct tokens of 2+ characters with a letter
//     that are not common keywords (see minInformative).
//
// Three code measures run too: rename-invariant k-gram fingerprints
// (fingerprint.go), solution statements in the renamed form, matched as a
// set so renaming, reordering and re-wrapping change nothing, and tables
// and strings only one task holds (structure.go); textbook code
// (generic.py) is no evidence. The paraphrase check (embed.go) asks a
// judge that is calibrated first and fails closed.
//
// A dialogue is flagged when it shares at least MinNGrams n-grams with one
// task, its line score against one task exceeds LineThreshold, or a code
// measure attributes it to one task.
package leak

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/schema"
)

// Finding methods.
const (
	MethodLines       = "lines"
	MethodNGram       = "ngram"
	MethodEmbedding   = "embedding"
	MethodFingerprint = "fingerprint"
	MethodStatements  = "statements"
	MethodLiteral     = "literal"
)

// Options are the measures' settings. Zero fields take the defaults of
// DefaultOptions.
type Options struct {
	Lines         LineOptions        `json:"lines"`
	Fingerprints  FingerprintOptions `json:"fingerprints"`
	Statements    StatementOptions   `json:"statements"`
	Window        int                `json:"window"`         // consecutive code lines that must match (default 2)
	N             int                `json:"ngram"`          // n-gram length in word tokens (default 13)
	LineThreshold float64            `json:"line_threshold"` // flag when a task's covered-line fraction exceeds this (default 0.5)
	MinNGrams     int                `json:"min_ngrams"`     // flag when a dialogue's shared statement n-grams with a task weigh this much, each 1/(tasks holding it) (default 1)
	// EmbedThreshold is the cosine threshold of the embedding check, set by
	// EnableEmbedding (0: the check is off).
	EmbedThreshold float64 `json:"embed_threshold,omitempty"`
	// Judged is set by EnableParaphrase with a judge: the embedding check
	// proposes candidates and the judge decides.
	Judged   bool `json:"judged,omitempty"`
	Workers  int  `json:"-"` // parallel dialogue workers (default GOMAXPROCS)
	TopLines int  `json:"-"` // shared lines listed per benchmark (default 20)
	// ungated turns the statement gate (gate.go) off, for the test that
	// the gate loses nothing; unmemoized the workers' message memo
	// (memo.go), for the test that it changes nothing.
	ungated, unmemoized bool
}

// DefaultOptions are the documented defaults.
var DefaultOptions = Options{
	Lines:         DefaultLineOptions,
	Fingerprints:  DefaultFingerprintOptions,
	Statements:    DefaultStatementOptions,
	Window:        2,
	N:             DefaultN,
	LineThreshold: 0.5,
	MinNGrams:     1,
	TopLines:      20,
}

func (o Options) withDefaults() Options {
	d := DefaultOptions
	o.Lines.MinChars = cmp.Or(o.Lines.MinChars, d.Lines.MinChars)
	o.Window = cmp.Or(o.Window, d.Window)
	o.N = cmp.Or(o.N, d.N)
	o.LineThreshold = cmp.Or(o.LineThreshold, d.LineThreshold)
	o.MinNGrams = cmp.Or(o.MinNGrams, d.MinNGrams)
	o.TopLines = cmp.Or(o.TopLines, d.TopLines)
	if !o.Fingerprints.Off {
		o.Fingerprints = o.Fingerprints.withDefaults()
	}
	if !o.Statements.Off {
		o.Statements = o.Statements.withDefaults()
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Auditor checks dialogues against a fixed set of benchmark indexes. It is
// safe for concurrent use.
type Auditor struct {
	opts    Options
	indexes []*Index
	emb     *embedIndex // nil unless EnableEmbedding was called
	// filter holds the keys of every index (see keyFilter): a dialogue's
	// hashes are tested once, not once per benchmark, and only the few
	// that pass are looked up in each index.
	filter keyFilter
	// fpAt and gramAt map a k-gram or n-gram hash that some index holds
	// to its row in fpEnt or gramEnt: the key's entry in each index, in
	// New's order (-1: not in that index). A candidate is looked up once
	// for all benchmarks, as it passes the filter, not once per index
	// (each lookup is a cache miss), and one no index holds is dropped
	// there (most of those that pass the filter).
	fpAt, gramAt   *hashTable
	fpEnt, gramEnt []int32
	// gramVocab is the indexes' tokVocabs together.
	gramVocab tokVocab
	// stAt and stEnt do the same for the statement hashes (stIndex).
	stAt  *hashTable
	stEnt []int32
	// shortLens are the lengths of short statements indexed whole, over
	// all indexes, and shortHeads a bit per hash of their first tokens
	// (headBit): a user turn is tried at every length where one may
	// start, a bit test where a table probe would miss the cache.
	shortLens  []int
	shortHeads [1 << 10]uint64
	// ask ranks the task statements nearest a user turn, for the
	// statement measure's weak whole matches (askedBy); askBase[i] is
	// benchmark i's first document in it.
	ask     *lexIndex
	askBase []int
	// gate passes over the messages the statement and literal measures
	// cannot find anything in (nil: every message is matched).
	gate *stmtGate
}

// New indexes the benchmarks. It fails on a benchmark without problems and
// on duplicate benchmark names.
func New(benchmarks []Benchmark, opts Options) (*Auditor, error) {
	opts = opts.withDefaults()
	if len(benchmarks) == 0 {
		return nil, fmt.Errorf("audit: no benchmarks given")
	}
	a := &Auditor{opts: opts}
	seen := map[string]bool{}
	for _, b := range benchmarks {
		if seen[b.Name] {
			return nil, fmt.Errorf("audit: benchmark %q given twice", b.Name)
		}
		seen[b.Name] = true
	}
	// The indexes are independent: built side by side (the CLI waits for
	// them before the first dialogue), the first error in benchmark order
	// reported.
	a.indexes = make([]*Index, len(benchmarks))
	errs := make([]error, len(benchmarks))
	var wg sync.WaitGroup
	for i, b := range benchmarks {
		wg.Go(func() { a.indexes[i], errs[i] = newIndex(b, opts) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, x := range a.indexes {
		for _, l := range x.shortLens {
			if !slices.Contains(a.shortLens, l) {
				a.shortLens = append(a.shortLens, l)
			}
		}
	}
	a.filter = newKeyFilter(a.indexes)
	if !opts.Fingerprints.Off {
		a.fpAt, a.fpEnt = unionTable(a.indexes, func(x *Index) *hashTable { return x.fpIndex })
	}
	a.gramAt, a.gramEnt = unionTable(a.indexes, func(x *Index) *hashTable { return x.grams })
	for _, x := range a.indexes {
		a.gramVocab.union(&x.gramVocab)
	}
	for _, x := range a.indexes {
		for _, h := range x.shortHeads {
			b := headBit(h)
			a.shortHeads[b>>6] |= 1 << (b & 63)
		}
	}
	if !opts.Statements.Off {
		a.stAt, a.stEnt = unionTable(a.indexes, func(x *Index) *hashTable { return x.stIndex })
		var sts [][]string
		for _, x := range a.indexes {
			a.askBase = append(a.askBase, len(slices.Concat(sts...)))
			sts = append(sts, x.statements)
		}
		a.ask = newLexIndex(sts)
		if !opts.ungated {
			a.gate = newStmtGate(a.indexes)
		}
	}
	return a, nil
}

// Options returns the effective settings.
func (a *Auditor) Options() Options { return a.opts }

// Result is the audit of one dialogue.
type Result struct {
	Seq        int    // position in the input, from 0
	DialogueID string // the dialogue's id, or "#Seq" when it has none
	CodeLines  int    // code lines after normalisation and filtering
	// Shared[i] counts code lines shared with benchmark i (in New's order);
	// SharedAny counts lines shared with any benchmark.
	Shared    []int
	SharedAny int
	Findings  []schema.Finding // task matches; a Finding is a flag reason
	// Err is set when the embedder failed; Run stops with it.
	Err error
	// sharedLines[i] are the distinct shared line hashes per benchmark.
	sharedLines [][]uint64
}

// Flagged reports whether the dialogue must be removed.
func (r *Result) Flagged() bool { return len(r.Findings) > 0 }

// msgRange locates one message's tokens and n-grams in the scratch buffers.
type msgRange struct {
	text       string
	msg        int // index in the dialogue
	role       string
	tok0, tok1 int // tokens in scratch.toks
}

// scratch holds one worker's reusable buffers.
type scratch struct {
	toks       []span
	th, sh     []uint64
	msgs       []msgRange
	nbuf       []byte
	fences     []fence // of the message being scanned
	lh, wh     []uint64
	blockStart []int // per window: index of its first line in lh
	sharedAny  []bool
	shared     []bool
	cover      map[int32][]uint64 // task -> covered task-line bitset
	gramHits   map[int32]*gramHit
	// Code tokens of every message and their k-gram hashes per stream.
	ctoks    []ctok
	ctMsgs   []ctMsg
	marks    tokMarks // of the message being scanned
	ids      *identCache
	fpStates []fpState // per index
	// Hashes that passed the filter, tested against each index.
	winCand  []int32 // positions in wh
	one      []uint64
	gramCand []gramCand
	fpCand   [nStreams][]fpCand
	// fpCache holds fpCacheOwner's answers (see fpRow): a scratch may
	// serve several auditors.
	fpCache      *[1 << fpCacheBits]fpCacheEntry
	fpCacheOwner *Auditor
	// Statements and literal keys of every message (ranges in ctMsg).
	sts []stmt
	lks []literalKey
	// stSeen (per statement entry) and stHitGen (per task) hold the
	// generation stGen of the message that last met them, stHitOf the
	// task's hit and stHitTasks the tasks met: flat arrays, as fpState,
	// where maps cost a clear and a walk per message matched.
	stGen      uint32
	stSeen     []uint32
	stHitGen   []uint32
	stHitOf    []*stHit
	stHitTasks []int32
	stBest     map[int32]*stHit
	// hitPool holds the stHits of one matchStatements call (hitsUsed of
	// them in use); litFound the tasks whose literal it has reported.
	hitPool  []*stHit
	hitsUsed int
	litFound map[int32]bool
	// asked are the (user message, statement doc) pairs of askedBy, once
	// askedDone (reset per dialogue); askAcc its score buffer.
	asked     [][2]int
	askedDone bool
	askAcc    []float32
	// stBody are the messages' statement hashes, imports left out (ranges
	// b0:b1 in ctMsg), stWH their wholeHash mixes and stPos their
	// positions among the message's statements.
	stBody []uint64
	stWH   []uint64
	// stRow is each statement's row in Auditor.stEnt (-1: in no index),
	// set once per dialogue for every index.
	stRow []int32
	stWin []uint64
	stPos []int
	// memo replays the scan of messages met before (nil: every message
	// is scanned); Run's workers have one.
	memo *msgMemo
	// entryOf[i] is message i's memo entry, if it has one.
	entryOf []*memoEntry
}

// gramCand is a token n-gram (or a short statement's length of tokens) of
// message msgs[m] starting at token gi that passed the filter.
type gramCand struct {
	m, gi, n int32
	at       int32 // row in Auditor.gramEnt
	h        uint64
}

// fpCand is a code k-gram of ctMsgs[m] at k-gram gi that passed the filter.
type fpCand struct {
	m, gi int32
	at    int32 // row in Auditor.fpEnt
}

// fp returns the fingerprint state for index x, reset for a new dialogue.
func (s *scratch) fp(x *Index) *fpState {
	for i := range s.fpStates {
		if s.fpStates[i].lastIndex == x {
			s.fpStates[i].reset(x)
			return &s.fpStates[i]
		}
	}
	s.fpStates = append(s.fpStates, fpState{})
	st := &s.fpStates[len(s.fpStates)-1]
	st.reset(x)
	return st
}

// ctMsg locates one message's code tokens and k-grams in the scratch.
type ctMsg struct {
	msg    int // message index in the dialogue
	t0, t1 int // tokens in scratch.ctoks
	s0, s1 int // statements in scratch.sts (token offsets from t0)
	l0, l1 int // literal keys in scratch.lks (token offsets from t0)
	b0, b1 int // body statements in scratch.stBody, stWH and stPos
}

type gramHit struct {
	count int
	w     float64 // sum of 1/(tasks holding the gram)
	spans []schema.Span
	first string
	seen  map[uint64]bool
}

func newScratch() *scratch {
	return &scratch{cover: map[int32][]uint64{}, gramHits: map[int32]*gramHit{},
		stBest: map[int32]*stHit{}, fpCache: new([1 << fpCacheBits]fpCacheEntry), ids: new(identCache)}
}

// Check audits one dialogue. seq is its position in the input. ctx is only
// used by the embedding check.
func (a *Auditor) Check(ctx context.Context, d *schema.Dialogue, seq int) Result {
	return a.check(ctx, d, seq, newScratch())
}

func (a *Auditor) check(ctx context.Context, d *schema.Dialogue, seq int, s *scratch) Result {
	id := d.ID
	if id == "" {
		id = fmt.Sprintf("#%d", seq)
	}
	r := Result{Seq: seq, DialogueID: id, Shared: make([]int, len(a.indexes)), sharedLines: make([][]uint64, len(a.indexes))}

	// Code lines and their windows, token n-grams of every message (never
	// across messages), and the code tokens of every user, assistant and
	// system turn: its fenced blocks, or the whole turn if it has none
	// (messageCodeTokens; execution turns hold program output),
	// computed once for all benchmarks, message by message (scanMessage);
	// a message seen before is replayed from the worker's memo.
	s.lh, s.wh, s.blockStart = s.lh[:0], s.wh[:0], s.blockStart[:0]
	s.toks, s.msgs, s.gramCand = s.toks[:0], s.msgs[:0], s.gramCand[:0]
	s.ctoks, s.ctMsgs = s.ctoks[:0], s.ctMsgs[:0]
	for st := range nStreams {
		s.fpCand[st] = s.fpCand[st][:0]
	}
	s.sts, s.lks = s.sts[:0], s.lks[:0]
	s.stBody, s.stWH, s.stPos = s.stBody[:0], s.stWH[:0], s.stPos[:0]
	s.askedDone = false
	s.entryOf = s.entryOf[:0]
	if s.fpCacheOwner != a {
		clear(s.fpCache[:])
		s.fpCacheOwner = a
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		if s.memo == nil {
			a.scanMessage(s, i, m)
			continue
		}
		s.memo.scan(a, s, i, m)
	}
	r.CodeLines = len(s.lh)
	s.sharedAny = resetBools(s.sharedAny, len(s.lh))
	a.candidates(s)

	w := a.opts.Window
	stOn := !a.opts.Statements.Off
	if stOn {
		s.stRows(a)
	}
	for bi, x := range a.indexes {
		if !a.opts.Fingerprints.Off {
			a.matchFingerprints(bi, x, s, id, &r)
		}
		if stOn && (len(s.sts) > 0 || len(s.lks) > 0) {
			a.matchStatements(bi, x, d, id, s, &r)
		}
		// Lines.
		s.shared = resetBools(s.shared, len(s.lh))
		clear(s.cover)
		for _, wi := range s.winCand {
			h := s.wh[wi]
			ri, ok := x.windows.get(h)
			if !ok {
				continue
			}
			refs := x.winRefs[ri]
			start := s.blockStart[wi]
			for k := start; k < start+w; k++ {
				s.shared[k] = true
			}
			for _, ref := range refs {
				bs := s.cover[ref.task]
				if bs == nil {
					bs = make([]uint64, (x.tasks[ref.task].positions+63)/64)
					s.cover[ref.task] = bs
				}
				for k := int(ref.pos); k < int(ref.pos)+w; k++ {
					bs[k/64] |= 1 << (k % 64)
				}
			}
		}
		for k, sh := range s.shared {
			if !sh {
				continue
			}
			r.Shared[bi]++
			s.sharedAny[k] = true
			if !slices.Contains(r.sharedLines[bi], s.lh[k]) {
				r.sharedLines[bi] = append(r.sharedLines[bi], s.lh[k])
			}
		}
		tasks := make([]int32, 0, len(s.cover))
		for t := range s.cover {
			tasks = append(tasks, t)
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i] < tasks[j] })
		for _, t := range tasks {
			ti := x.tasks[t]
			solN := countBits(s.cover[t], 0, ti.solLines)
			testN := countBits(s.cover[t], ti.solLines, ti.lines)
			score := max(ratio(solN, ti.solLines), ratio(testN, ti.lines-ti.solLines))
			if score > a.opts.LineThreshold {
				r.Findings = append(r.Findings, schema.Finding{
					DialogueID: id, Benchmark: x.name, TaskID: ti.id, Method: MethodLines,
					Score: score,
					Evidence: fmt.Sprintf("%d of %d solution and %d of %d test code lines in shared %d-line windows",
						solN, ti.solLines, testN, ti.lines-ti.solLines, w),
				})
			}
		}

		// N-grams of the statements, and short statements whole (in user
		// turns). Each shared gram weighs 1/(tasks holding it), so text
		// that many tasks share attributes to none of them.
		clear(s.gramHits)
		nx := len(a.indexes)
		hitGram := func(m msgRange, gi, n int, row int32, h uint64) {
			at := a.gramEnt[int(row)*nx+bi]
			if at < 0 {
				return
			}
			ts := x.gramTasks[at]
			for _, t := range ts {
				g := s.gramHits[t]
				if g == nil {
					g = &gramHit{first: ngramText(m.text, s.toks[m.tok0:], gi, n), seen: map[uint64]bool{}}
					s.gramHits[t] = g
				}
				if !g.seen[h] {
					g.seen[h] = true
					g.count++
					g.w += 1 / float64(len(ts))
					tok := s.toks[m.tok0+gi : m.tok0+gi+n]
					g.spans = addSpan(g.spans, schema.Span{Message: m.msg, Start: int(tok[0].start), End: int(tok[n-1].end)})
				}
			}
		}
		for _, c := range s.gramCand {
			hitGram(s.msgs[c.m], int(c.gi), int(c.n), c.at, c.h)
		}
		tasks = tasks[:0]
		for t, g := range s.gramHits {
			// A statement present whole is a copy of every task that
			// states it (MBPP states some tasks twice, word for word);
			// the rarity weight is for parts of statements.
			// Shared parts must also hold a whole sentence of the task, or
			// half its n-grams: a stock phrase or a definition that a task
			// quotes attributes nothing (sentenceCovered).
			if g.count >= x.tasks[t].grams || g.w >= float64(a.opts.MinNGrams)-1e-9 &&
				(2*g.count >= x.tasks[t].grams || x.sentenceCovered(t, g.seen, a.opts.N)) {
				tasks = append(tasks, t)
			}
		}
		sort.Slice(tasks, func(i, j int) bool { return tasks[i] < tasks[j] })
		for _, t := range tasks {
			g := s.gramHits[t]
			r.Findings = append(r.Findings, schema.Finding{
				DialogueID: id, Benchmark: x.name, TaskID: x.tasks[t].id, Method: MethodNGram,
				Score:    g.w,
				Evidence: gramEvidence(g, x.tasks[t].grams),
				Spans:    g.spans,
			})
		}
	}
	if a.emb != nil {
		if err := a.emb.check(ctx, d, id, &r, a.indexes); err != nil {
			r.Err = fmt.Errorf("audit: embed dialogue %s: %w", id, err)
		}
	}
	for _, sh := range s.sharedAny {
		if sh {
			r.SharedAny++
		}
	}
	return r
}

// scanMessage appends what message i alone yields to the scratch: its
// code lines and their windows (user and assistant turns), its word
// tokens and the n-grams that pass the filter, and (all but execution
// turns) its code tokens, statements, literal keys and k-grams. The n-grams
// and code k-grams are hashed and filtered as the tokens are found, not
// stored.
func (a *Auditor) scanMessage(s *scratch, i int, m *schema.Message) {
	// The fenced blocks, found once for the line pass and the code tokens.
	s.fences = appendFences(m.Content, s.fences[:0])
	if m.Role == schema.RoleUser || m.Role == schema.RoleAssistant {
		a.opts.Lines.fencedMessageLines(m, s.fences, a.opts.Window, s)
	}
	fp, k := !a.opts.Fingerprints.Off, a.opts.Fingerprints.K
	stOn := !a.opts.Statements.Off
	if !fp {
		k = minStmtMsgTokens
	}
	t0 := len(s.toks)
	if (fp || stOn) && m.Role != schema.RoleExecution {
		c0 := len(s.ctoks)
		s.marks.reset()
		s.ctoks, s.toks = fencedCodeTokens(m.Content, s.fences, s.ctoks, s.toks, &s.marks, s.ids)
		if len(s.ctoks)-c0 < k {
			s.ctoks = s.ctoks[:c0]
		} else {
			cm := ctMsg{msg: i, t0: c0, t1: len(s.ctoks), s0: len(s.sts), l0: len(s.lks)}
			toks := s.ctoks[c0:]
			if stOn {
				// Statements first: they rename the bound builtins
				// in the norm form the renamed k-grams hash.
				s.sts = cutStatements(m.Content, toks, &s.marks, s.sts)
			}
			if fp {
				// The k-grams, and the statements' hashes in the same
				// pass over the tokens.
				a.kgramCandidates(s, len(s.ctMsgs), toks, a.opts.Fingerprints.K, s.sts[cm.s0:])
			} else {
				hashStatements(toks, s.sts[cm.s0:])
			}
			if stOn {
				if a.gate != nil && !a.gate.statements(s.sts[cm.s0:]) {
					s.sts = s.sts[:cm.s0]
				}
				if a.gate == nil || a.gate.literals(toks, s.marks.lits) {
					s.lks = literalKeys(m.Content, toks, a.opts.Statements.MinTable, a.opts.Statements.MinString, s.lks)
				}
			}
			cm.s1, cm.l1 = len(s.sts), len(s.lks)
			if stOn {
				s.addBody(&cm, s.ctoks[c0:])
			}
			s.ctMsgs = append(s.ctMsgs, cm)
		}
	} else {
		s.toks = appendTokens(s.toks, m.Content)
	}
	s.msgs = append(s.msgs, msgRange{text: m.Content, msg: i, role: m.Role, tok0: t0, tok1: len(s.toks)})
	a.gramCandidates(s, len(s.msgs)-1)
}

func gramEvidence(g *gramHit, all int) string {
	whole := ""
	if g.count >= all {
		whole = ", the whole statement"
	}
	return fmt.Sprintf("%d shared statement n-grams (weight %.2f%s), first: %q", g.count, g.w, whole, g.first)
}

// candidates keeps the dialogue's line windows that pass the filter, so
// each index is asked only about those (gramCandidates and
// kgramCandidates do the same for n-grams and code k-grams).
func (a *Auditor) candidates(s *scratch) {
	s.winCand = s.winCand[:0]
	for wi, h := range s.wh {
		if a.filter.mayHold(h) {
			s.winCand = append(s.winCand, int32(wi))
		}
	}
}

// gramCandidates appends to s.gramCand the n-grams of message msgs[mi]
// (and, in a user turn, the short statements' lengths of tokens) that
// pass the filter, in token order: the same rolling hash as
// rollingHashes, computed straight from the tokens.
func (a *Auditor) gramCandidates(s *scratch, mi int) {
	m := s.msgs[mi]
	toks := s.toks[m.tok0:m.tok1]
	if n := a.opts.N; n > 0 && len(toks) >= n {
		var top uint64 = 1 // B^(n-1)
		for k := 1; k < n; k++ {
			top *= rollBase
		}
		// The last token no index's n-grams hold (tokVocab): no n-gram
		// holding it is looked up.
		v := &a.gramVocab
		last := -1
		var h uint64
		for k := 0; k < n; k++ {
			h = h*rollBase + toks[k].hash
			if !v.has(toks[k].hash) {
				last = k
			}
		}
		for gi := 0; ; gi++ {
			if last < gi && a.filter.mayHold(h) {
				if at, ok := a.gramAt.get(h); ok {
					s.gramCand = append(s.gramCand, gramCand{m: int32(mi), gi: int32(gi), n: int32(n), at: at, h: h})
				}
			}
			if gi+n >= len(toks) {
				break
			}
			h = (h-toks[gi].hash*top)*rollBase + toks[gi+n].hash
			if !v.has(toks[gi+n].hash) {
				last = gi + n
			}
		}
	}
	if m.role != schema.RoleUser || len(a.shortLens) == 0 {
		return
	}
	// Short statements: every length, where a statement's first
	// tokens are.
	s.th = tokenHashes(toks, s.th[:0])
	s.sh = rollingHashes(s.th, minShortTokens, s.sh[:0])
	for gi, h := range s.sh {
		if b := headBit(h); a.shortHeads[b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		for _, l := range a.shortLens {
			if gi+l > len(s.th) {
				continue
			}
			if h := rollingHashes(s.th[gi:gi+l], l, s.one[:0])[0]; a.filter.mayHold(h) {
				if at, ok := a.gramAt.get(h); ok {
					s.gramCand = append(s.gramCand, gramCand{m: int32(mi), gi: int32(gi), n: int32(l), at: at, h: h})
				}
			}
		}
	}
}

// headBit is the bit of Auditor.shortHeads for a first tokens' hash.
func headBit(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> 48 }

// countBits counts the set bits of bs in [from, to).
func countBits(bs []uint64, from, to int) int {
	n := 0
	for k := from; k < to; k++ {
		if bs[k/64]&(1<<(k%64)) != 0 {
			n++
		}
	}
	return n
}

func resetBools(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// LineCount is one frequently shared code line.
type LineCount struct {
	Line      string `json:"line"`
	Dialogues int    `json:"dialogues"` // dialogues in which the line is shared
}

// BenchReport is the corpus-level result for one benchmark.
type BenchReport struct {
	Name        string  `json:"name"`
	Tasks       int     `json:"tasks"`
	SharedLines int     `json:"shared_lines"`
	LineRatio   float64 `json:"line_ratio"` // shared lines / all code lines of the corpus
	// Dialogues flagged by each method against this benchmark, and by either.
	LineFlagged  int `json:"line_flagged"`
	NGramFlagged int `json:"ngram_flagged"`
	EmbedFlagged int `json:"embedding_flagged,omitempty"`
	FPFlagged    int `json:"fingerprint_flagged"`
	StmtFlagged  int `json:"statements_flagged"`
	LitFlagged   int `json:"literal_flagged"`
	Flagged      int `json:"flagged"`
	// Tasks matched by at least one flagged dialogue.
	TasksHit int         `json:"tasks_hit"`
	TopLines []LineCount `json:"top_shared_lines"`
}

// Report is the corpus-level result.
type Report struct {
	Options     Options          `json:"settings"`
	Dialogues   int              `json:"dialogues"`
	CodeLines   int              `json:"code_lines"`
	SharedLines int              `json:"shared_lines"` // shared with any benchmark
	LineRatio   float64          `json:"line_ratio"`
	Flagged     int              `json:"flagged"`
	Benchmarks  []BenchReport    `json:"benchmarks"`
	Findings    []schema.Finding `json:"findings"` // in input order, then benchmark, method, task
	// FlaggedIDs are the flagged dialogues' ids in input order.
	FlaggedIDs []string `json:"flagged_ids"`
	// Judge is what the paraphrase judge did (nil without one).
	Judge *JudgeReport `json:"judge,omitempty"`
}

// Run audits a stream of dialogues with Options.Workers goroutines and
// returns the corpus report. each, when not nil, sees every Result in input
// order, from the calling goroutine. Run stops at the first error of the
// stream, of each, or of ctx.
func (a *Auditor) Run(ctx context.Context, dialogues iter.Seq2[*schema.Dialogue, error], each func(*Result) error) (*Report, error) {
	return a.run(ctx, func(yield func(job, error) bool) {
		for d, err := range dialogues {
			if !yield(job{d: d}, err) {
				return
			}
		}
	}, each)
}

// RunRecords is Run over raw Code-Feedback-style JSON records (such as
// RawRecords yields): the records are decoded by the workers, in parallel
// (with schema.DecodeDialogue, as the schema package reads them), which for
// a large JSONL file is most of the work. A record that does not
// decode to a valid dialogue stops the run with an error naming its
// position.
func (a *Auditor) RunRecords(ctx context.Context, recs iter.Seq2[json.RawMessage, error], each func(*Result) error) (*Report, error) {
	return a.run(ctx, func(yield func(job, error) bool) {
		for r, err := range recs {
			if !yield(job{raw: r}, err) {
				return
			}
		}
	}, each)
}

// RecordError is a raw record RunRecords could not decode. Seq is its
// 0-based position in the stream; the caller, who knows the file, can turn
// it into a line (the CLI does).
type RecordError struct {
	Seq int
	Err error
}

func (e *RecordError) Error() string { return fmt.Sprintf("audit: record %d: %v", e.Seq+1, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// job is one dialogue to audit: decoded, or a raw record to decode.
type job struct {
	seq int
	d   *schema.Dialogue
	raw json.RawMessage
}

// batchSize is the number of dialogues a worker takes at once: one channel
// hand-off (and at most one goroutine switch) per batch, not per dialogue.
const batchSize = 16

func (a *Auditor) run(ctx context.Context, src iter.Seq2[job, error], each func(*Result) error) (*Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan []job, a.opts.Workers*2)
	results := make(chan []Result, a.opts.Workers*2)
	var wg sync.WaitGroup
	for range a.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScratch()
			if !a.opts.unmemoized {
				s.memo = newMsgMemo(a.opts.Workers)
			}
			for batch := range jobs {
				rs := make([]Result, len(batch))
				for i, j := range batch {
					if j.d == nil {
						d, err := schema.DecodeDialogue(j.raw)
						if err != nil {
							rs[i] = Result{Seq: j.seq, Err: &RecordError{Seq: j.seq, Err: err}}
						} else {
							rs[i] = a.check(ctx, &d, j.seq, s)
						}
					} else {
						rs[i] = a.check(ctx, j.d, j.seq, s)
					}
				}
				select {
				case results <- rs:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var readErr error
	go func() {
		defer close(jobs)
		seq := 0
		batch := make([]job, 0, batchSize)
		send := func() bool {
			select {
			case jobs <- batch:
				batch = make([]job, 0, batchSize)
				return true
			case <-ctx.Done():
				return false
			}
		}
		for j, err := range src {
			if err != nil {
				readErr = fmt.Errorf("audit: read dialogue %d: %w", seq, err)
				cancel()
				return
			}
			j.seq = seq
			seq++
			if batch = append(batch, j); len(batch) == batchSize && !send() {
				return
			}
		}
		if len(batch) > 0 {
			send()
		}
	}()
	go func() { wg.Wait(); close(results) }()

	agg := newAggregate(a)
	// Results arrive out of order; pending holds them until their turn so
	// each and the report see input order.
	pending := map[int]Result{}
	next := 0
	var eachErr error
	for rs := range results {
		for _, r := range rs {
			pending[r.Seq] = r
		}
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if p.Err != nil {
				if eachErr == nil {
					eachErr = p.Err
					cancel()
				}
				continue
			}
			agg.add(&p)
			if each != nil && eachErr == nil {
				if err := each(&p); err != nil {
					eachErr = err
					cancel()
				}
			}
		}
	}
	// The reader goroutine has finished: results closes only after jobs is
	// closed and drained, and jobs closes when the reader returns.
	if readErr != nil {
		return nil, readErr
	}
	if eachErr != nil {
		return nil, eachErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return agg.report(), nil
}

// aggregate folds Results into a Report.
type aggregate struct {
	a        *Auditor
	rep      Report
	lineHits []map[uint64]int
	tasksHit []map[string]bool
}

func newAggregate(a *Auditor) *aggregate {
	g := &aggregate{a: a}
	g.rep.Options = a.opts
	for _, x := range a.indexes {
		g.rep.Benchmarks = append(g.rep.Benchmarks, BenchReport{Name: x.name, Tasks: x.Tasks()})
		g.lineHits = append(g.lineHits, map[uint64]int{})
		g.tasksHit = append(g.tasksHit, map[string]bool{})
	}
	return g
}

func (g *aggregate) add(r *Result) {
	g.rep.Dialogues++
	g.rep.CodeLines += r.CodeLines
	g.rep.SharedLines += r.SharedAny
	for i := range g.rep.Benchmarks {
		b := &g.rep.Benchmarks[i]
		b.SharedLines += r.Shared[i]
		for _, h := range r.sharedLines[i] {
			g.lineHits[i][h]++
		}
		var byLines, byGram, byEmb, byFP, bySt, byLit bool
		for _, f := range r.Findings {
			if f.Benchmark != b.Name {
				continue
			}
			g.tasksHit[i][f.TaskID] = true
			byLines = byLines || f.Method == MethodLines
			byGram = byGram || f.Method == MethodNGram
			byEmb = byEmb || f.Method == MethodEmbedding
			byFP = byFP || f.Method == MethodFingerprint
			bySt = bySt || f.Method == MethodStatements
			byLit = byLit || f.Method == MethodLiteral
		}
		if bySt {
			b.StmtFlagged++
		}
		if byLit {
			b.LitFlagged++
		}
		if byFP {
			b.FPFlagged++
		}
		if byEmb {
			b.EmbedFlagged++
		}
		if byLines {
			b.LineFlagged++
		}
		if byGram {
			b.NGramFlagged++
		}
		if byLines || byGram || byEmb || byFP || bySt || byLit {
			b.Flagged++
		}
	}
	if r.Flagged() {
		g.rep.Flagged++
		g.rep.FlaggedIDs = append(g.rep.FlaggedIDs, r.DialogueID)
		g.rep.Findings = append(g.rep.Findings, r.Findings...)
	}
}

func (g *aggregate) report() *Report {
	rep := g.rep
	rep.LineRatio = ratio(rep.SharedLines, rep.CodeLines)
	for i := range rep.Benchmarks {
		b := &rep.Benchmarks[i]
		x := g.a.indexes[i]
		b.LineRatio = ratio(b.SharedLines, rep.CodeLines)
		b.TasksHit = len(g.tasksHit[i])
		b.TopLines = []LineCount{}
		for h, n := range g.lineHits[i] {
			b.TopLines = append(b.TopLines, LineCount{Line: x.lineText[h], Dialogues: n})
		}
		sort.Slice(b.TopLines, func(p, q int) bool {
			if b.TopLines[p].Dialogues != b.TopLines[q].Dialogues {
				return b.TopLines[p].Dialogues > b.TopLines[q].Dialogues
			}
			return b.TopLines[p].Line < b.TopLines[q].Line
		})
		if len(b.TopLines) > g.a.opts.TopLines {
			b.TopLines = b.TopLines[:g.a.opts.TopLines]
		}
	}
	if rep.Findings == nil {
		rep.Findings = []schema.Finding{}
	}
	if rep.FlaggedIDs == nil {
		rep.FlaggedIDs = []string{}
	}
	rep.Judge = g.a.Judge()
	return &rep
}

func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// Slice adapts a slice of dialogues to the stream Run reads.
func Slice(ds []schema.Dialogue) iter.Seq2[*schema.Dialogue, error] {
	return func(yield func(*schema.Dialogue, error) bool) {
		for i := range ds {
			if !yield(&ds[i], nil) {
				return
			}
		}
	}
}

// Reason renders a dialogue's findings as one line, for the removed-dialogues
// file and the stage's "audit" label.
func Reason(fs []schema.Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s %s %s (%.3g)", f.Method, f.Benchmark, f.TaskID, f.Score)
	}
	return strings.Join(parts, "; ")
}
