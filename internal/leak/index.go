package leak

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/codefeedback/codefeedback/schema"
)

// Benchmark is a named set of problems to audit against.
type Benchmark struct {
	Name     string
	Problems []schema.Problem
}

// winRef locates a line window in a benchmark task: the task and the
// position of the window's first line among the task's code lines.
type winRef struct {
	task, pos int32
}

// taskInfo is what the index keeps of one problem.
type taskInfo struct {
	id string
	// Code lines after normalisation and filtering: the solution's occupy
	// positions [0, solLines), the tests' and setup's [solLines, lines).
	solLines, lines int
	// positions counts every indexed line, the docstring lines after lines
	// included (the size of a task's coverage bitset).
	positions int
	// grams counts the task's distinct statement n-grams.
	grams int
	// texts are what the n-gram measure read (taskText), kept to check
	// which sentences a dialogue's shared n-grams cover.
	texts []string
}

// Index is the lookup structure of one benchmark, built once and read by
// many goroutines: after NewIndex returns it is never written, so it is safe
// for concurrent use.
type Index struct {
	name       string
	tasks      []taskInfo
	statements []string // each task's statement without code, for the paraphrase check
	// windows maps the hash of w consecutive code lines of a task block to
	// every place it occurs (winRefs[windows.get(h)]).
	windows *hashTable
	winRefs [][]winRef
	// lineText maps a code line's hash to its text, for the shared-lines list.
	lineText map[uint64]string
	// grams maps a token n-gram hash to the tasks holding it (each task
	// once, gramTasks[grams.get(h)]); a statement shorter than n tokens is
	// one gram of its length.
	grams     *hashTable
	gramTasks [][]int32
	shortLens []int // lengths of the short statements indexed whole
	// shortHeads are the hashes of the first minShortTokens tokens of
	// every short statement: a dialogue's user turn is tried at every
	// length of shortLens only where one of these starts.
	shortHeads []uint64
	// gramVocab holds the word tokens of the texts grams is built from:
	// an n-gram with another word is in no index (see tokVocab).
	gramVocab tokVocab
	// Code fingerprints (see FingerprintOptions): fpIndex maps a salted
	// k-gram hash to its entry in fpEntries.
	fpOpts    FingerprintOptions
	fpIndex   *hashTable
	fpEntries []fpEntry
	fpTotals  []fpTotals
	// Solution statements and literals (see StatementOptions): stIndex
	// maps a statement hash to its entry in stEntries, stTotal is each
	// task's statement weight, litIndex maps a literal key to the one
	// task holding it.
	stOpts    StatementOptions
	stIndex   *hashTable
	stEntries []stEntry
	stTotal   []float32
	stList    [][]uint64 // each task's statement hashes, sorted (imports left out)
	// Whole solutions (see wholeMatches): fnIndex maps the order-free
	// key of a solution's statements to the tasks with that solution
	// (fnTasks), fnFirst holds the solutions' first statements, fnLens
	// their lengths in statements and fnTok each task's tokens.
	fnIndex *hashTable
	fnTasks [][]int32
	fnFirst *hashTable
	fnLens  [maxWholeStatements + 1]bool // lengths of the solutions keyed
	fnTok   []int32
	fnInfo  []float32 // fnTok with textbook statements at genericWeight
	// fnTextbook marks a solution made only of textbook statements
	// (generic.py): whole, it is what unrelated programs hold, evidence
	// only with a request for the task (a weak whole match).
	fnTextbook []bool
	litIndex   *hashTable
	// stSig and litStarts feed the statement gate (gate.go).
	stSig     []uint64
	litStarts []uint64
}

// keyFilter is a blocked Bloom filter over the keys of every index
// (windows, n-grams, fingerprints): a key sets three bits, chosen by its
// low bits, in one 64-bit word chosen by its top bits. Nearly every
// dialogue window, n-gram and k-gram is absent from the benchmarks, and a
// test reads one word of a table small enough to stay in cache, much
// cheaper than a table probe.
type keyFilter struct {
	words []uint64
	shift uint
}

func filterMask(h uint64) uint64 {
	return 1<<(h&63) | 1<<(h>>6&63) | 1<<(h>>12&63)
}

// mayHold reports whether h may be a key of some index (false means
// certainly not).
func (f *keyFilter) mayHold(h uint64) bool {
	m := filterMask(h)
	return f.words[h>>f.shift]&m == m
}

// filterBitsPerKey sizes the filter: at 16 to 32 bits a key and three bits
// a key, well under 1% of absent keys pass (256 KiB for HumanEval and
// MBPP, which stays in a core's L2). At 8 to 16 bits (128 KiB), 2.5% of
// a corpus's n-grams and a third of the code k-grams that passed were
// absent, each then a table probe that missed the cache.
const filterBitsPerKey = 16

// newKeyFilter builds the filter of the indexes' keys.
func newKeyFilter(xs []*Index) keyFilter {
	keys := 0
	for _, x := range xs {
		keys += x.windows.Len() + x.grams.Len()
		for _, t := range []*hashTable{x.fpIndex, x.stIndex, x.litIndex, x.fnIndex} {
			if t != nil {
				keys += t.Len()
			}
		}
	}
	n := uint(4) // log2 of the number of words
	for 64<<n < filterBitsPerKey*keys && n < 26 {
		n++
	}
	f := keyFilter{shift: 64 - n, words: make([]uint64, 1<<n)}
	set := func(h uint64) { f.words[h>>f.shift] |= filterMask(h) }
	for _, x := range xs {
		x.windows.each(set)
		x.grams.each(set)
		for _, t := range []*hashTable{x.fpIndex, x.stIndex, x.litIndex, x.fnIndex} {
			if t != nil {
				t.each(set)
			}
		}
	}
	return f
}

// Name returns the benchmark name.
func (x *Index) Name() string { return x.name }

// Tasks returns the number of problems indexed.
func (x *Index) Tasks() int { return len(x.tasks) }

// taskSolution returns a problem's solution code, with the prompt in front
// when the prompt is a HumanEval-style signature of the entry point (the
// canonical solution is then only the body). The prompt's docstring is
// left out: it is the statement (the n-gram and paraphrase measures read
// it), and counting its lines as code let a copy without it score low.
func taskSolution(p *schema.Problem) string {
	if p.Prompt != "" && p.EntryPoint != "" && strings.Contains(p.Prompt, "def "+p.EntryPoint) &&
		!strings.Contains(p.Solution, "def "+p.EntryPoint) {
		return stripDocstrings(p.Prompt) + p.Solution
	}
	return p.Solution
}

// taskTests returns a problem's test code as one block, so consecutive
// asserts form windows, followed by any setup code as a second block.
func taskTests(p *schema.Problem) []string {
	blocks := []string{strings.Join(p.Tests, "\n")}
	if p.Setup != "" {
		blocks = append(blocks, p.Setup)
	}
	return blocks
}

// taskText returns the texts of a problem the n-gram measure reads: its
// statement and its prompt, each tokenised on its own. Its code (solution,
// tests, setup) is the fingerprints' job: as word n-grams, code was either
// generic (a tree Node class two tasks share) or, short and numeric, left
// out by the informative filter.
func taskText(p *schema.Problem) []string {
	out := []string{p.Text}
	if p.Prompt != "" && p.Prompt != p.Text {
		out = append(out, p.Prompt)
	}
	return out
}

// promptDocstrings returns the docstrings taskSolution leaves out.
func promptDocstrings(p *schema.Problem) string {
	if p.Prompt == "" || p.EntryPoint == "" || !strings.Contains(p.Prompt, "def "+p.EntryPoint) ||
		strings.Contains(p.Solution, "def "+p.EntryPoint) {
		return ""
	}
	var b strings.Builder
	rest := p.Prompt
	for {
		i := strings.Index(rest, `"""`)
		j := strings.Index(rest, `'''`)
		if i < 0 || j >= 0 && j < i {
			i = j
		}
		if i < 0 {
			return b.String()
		}
		q := rest[i : i+3]
		k := strings.Index(rest[i+3:], q)
		if k < 0 {
			return b.String()
		}
		b.WriteString(rest[i+3 : i+3+k])
		b.WriteByte('\n')
		rest = rest[i+3+k+3:]
	}
}

// minShortTokens is the shortest statement indexed whole: shorter than N
// tokens, a statement has no N-gram, so it is matched as one sequence of
// all its tokens (in user turns, where a statement is pasted).
const minShortTokens = 6

// newIndex builds the line-window, n-gram, code-fingerprint, statement
// and literal index of a benchmark with o's settings (defaults applied).
func newIndex(b Benchmark, o Options) (*Index, error) {
	lo, window, n, fo := o.Lines, o.Window, o.N, o.Fingerprints
	if window < 1 || n < 1 {
		return nil, fmt.Errorf("audit: index %s: window %d and n %d must be >= 1", b.Name, window, n)
	}
	if len(b.Problems) == 0 {
		return nil, fmt.Errorf("audit: index %s: benchmark has no problems", b.Name)
	}
	x := &Index{
		name:     b.Name,
		tasks:    make([]taskInfo, len(b.Problems)),
		lineText: make(map[uint64]string),
	}
	windows := map[uint64][]winRef{}
	grams := map[uint64][]int32{}
	var lh, wh, th, gh []uint64
	var toks []span
	for ti := range b.Problems {
		p := &b.Problems[ti]
		pos, solLines, testEnd := 0, 0, 0
		blocks := append([]string{taskSolution(p)}, taskTests(p)...)
		// The prompt's docstring lines come last: a dialogue that pastes
		// them shares them, but they are not code and count in neither
		// the solution's nor the tests' denominator.
		blocks = append(blocks, promptDocstrings(p))
		for bi, block := range blocks {
			if bi == 1 {
				solLines = pos
			}
			if bi == len(blocks)-1 {
				testEnd = pos
			}
			lh = lh[:0]
			for _, l := range lo.CodeLines(block) {
				h := hashString(l)
				lh = append(lh, h)
				x.lineText[h] = l
			}
			wh = rollingHashes(lh, window, wh[:0])
			for i, h := range wh {
				refs := windows[h]
				if k := len(refs); k > 0 && refs[k-1].task == int32(ti) {
					continue // a repeated window inside one task adds nothing
				}
				windows[h] = append(refs, winRef{task: int32(ti), pos: int32(pos + i)})
			}
			pos += len(lh)
		}
		x.tasks[ti] = taskInfo{id: p.ID, solLines: solLines, lines: testEnd, positions: pos, texts: taskText(p)}
		x.statements = append(x.statements, statementText(p))
		for _, t := range taskText(p) {
			toks = tokenize(t, toks)
			th = tokenHashes(toks, th[:0])
			for _, h := range th {
				x.gramVocab.add(h)
			}
			gl := n
			if len(toks) < n && len(toks) >= minShortTokens && informative(t, toks, minInformative) {
				gl = len(toks)
				if !slices.Contains(x.shortLens, gl) {
					x.shortLens = append(x.shortLens, gl)
				}
				x.shortHeads = append(x.shortHeads, rollingHashes(th[:minShortTokens], minShortTokens, nil)[0])
			}
			gh = rollingHashes(th, gl, gh[:0])
			for gi, h := range gh {
				if gl == n && !informative(t, toks[gi:gi+n], minInformative) {
					continue
				}
				ts := grams[h]
				if k := len(ts); k > 0 && ts[k-1] == int32(ti) {
					continue
				}
				grams[h] = append(ts, int32(ti))
				x.tasks[ti].grams++
			}
		}
	}
	x.windows, x.winRefs = freeze(windows)
	x.grams, x.gramTasks = freeze(grams)
	if !fo.Off {
		parts := make([][nParts]string, len(b.Problems))
		for ti := range b.Problems {
			p := &b.Problems[ti]
			parts[ti] = [nParts]string{taskSolution(p), strings.Join(p.Tests, "\n"), p.Setup}
		}
		x.buildFingerprints(parts, fo.withDefaults())
	}
	if !o.Statements.Off {
		sols := make([]string, len(b.Problems))
		for ti := range b.Problems {
			sols[ti] = taskSolution(&b.Problems[ti])
		}
		x.buildStatements(sols, o.Statements)
	}
	return x, nil
}

// sentenceCovered reports whether the n-grams in seen cover a whole
// sentence (of at least minShortTokens tokens) of one of task t's texts. A
// copied statement holds its sentences whole; text that only shares a
// stock phrase or a textbook definition with a task ("a natural number
// greater than 1 that is not a product of two smaller natural numbers",
// "write a function that takes a string as input and returns the sum")
// covers part of the task's sentence, and is no evidence of the task.
func (x *Index) sentenceCovered(t int32, seen map[uint64]bool, n int) bool {
	for _, text := range x.tasks[t].texts {
		toks := tokenize(text, nil)
		if len(toks) < n {
			continue
		}
		covered := make([]bool, len(toks))
		for gi, h := range rollingHashes(tokenHashes(toks, nil), n, nil) {
			if seen[h] {
				for k := gi; k < gi+n; k++ {
					covered[k] = true
				}
			}
		}
		start := 0
		for i := 1; i <= len(toks); i++ {
			if i < len(toks) && !sentenceBreak(text[toks[i-1].end:toks[i].start]) {
				continue
			}
			if i-start >= minShortTokens && !slices.Contains(covered[start:i], false) {
				return true
			}
			start = i
		}
	}
	return false
}

// sentenceBreak reports whether the text between two tokens ends a
// sentence: a full stop, question or exclamation mark, or a colon before
// white space, a blank line, or a doctest prompt.
func sentenceBreak(gap string) bool {
	for i := 0; i < len(gap); i++ {
		switch gap[i] {
		case '.', '?', '!', ':':
			if i+1 == len(gap) || gap[i+1] == ' ' || gap[i+1] == '\n' || gap[i+1] == '\t' {
				return true
			}
		case '\n':
			if strings.Contains(gap[i+1:], "\n") || strings.Contains(gap[i+1:], ">>>") {
				return true
			}
		}
	}
	return false
}

// tokVocab is a one-bit-per-hash set of the word tokens an index's
// n-grams are built from (32,768 bits, 4 KiB): an n-gram holding a token
// it lacks is in no index (but by a 64-bit hash collision), so it is not
// looked up. 94% of a dialogue's n-grams hold such a token (a name in
// its code, a word no task uses), and the bit tests, in L1, spare their
// probes of the key filter (256 KiB). (For the code k-grams the same
// test cost more than the probes it spared: 41% of the renamed-form
// k-grams hold a token no task has.)
type tokVocab [1 << 9]uint64

func (v *tokVocab) add(h uint64)      { v[h>>55] |= 1 << (h >> 49 & 63) }
func (v *tokVocab) has(h uint64) bool { return v[h>>55]&(1<<(h>>49&63)) != 0 }
func (v *tokVocab) union(o *tokVocab) {
	for i := range v {
		v[i] |= o[i]
	}
}

// tokenHashes appends the hashes of toks to out.
func tokenHashes(toks []span, out []uint64) []uint64 {
	for _, t := range toks {
		out = append(out, t.hash)
	}
	return out
}

// minInformative is the number of distinct informative tokens an n-gram
// needs to be indexed. Runs of numbers ("1 2 3 ... 13", "0 0 0 ..."), of
// letters ("a b c ...") and of loop boilerplate ("for i in range 1 n 1 for j
// in range ...") occur in unrelated code everywhere; with 13 tokens and this
// rule, the n-grams left are specific text (a docstring sentence, a test call
// with its arguments).
const minInformative = 3

// commonTokens are programming keywords and builtins that do not make an
// n-gram specific.
var commonTokens = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`for in range if else elif return def while and or not is true false
		none null self this int len print assert class __init__ import from as with try except
		new var let const function public static void string str list dict float bool char double
		long auto std cout cin endl include using namespace main args the to of`) {
		commonTokens[w] = true
	}
}

// informative reports whether the tokens of an n-gram hold at least min
// distinct tokens of two or more characters, with a letter, that are not
// common programming words.
func informative(text string, toks []span, min int) bool {
	var seen [16]uint64
	n := 0
	for _, t := range toks {
		w := text[t.start:t.end]
		if len(w) < 2 || !hasLetter(w) || commonTokens[strings.ToLower(w)] {
			continue
		}
		dup := false
		for _, h := range seen[:n] {
			if h == t.hash {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		if n < len(seen) {
			seen[n] = t.hash
		}
		n++
		if n >= min {
			return true
		}
	}
	return false
}

func hasLetter(w string) bool {
	for _, r := range w {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}
