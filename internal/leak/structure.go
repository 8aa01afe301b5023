package leak

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/codefeedback/codefeedback/schema"

	"github.com/codefeedback/codefeedback/internal/tally"
)

// Statements and literals: the two code measures that survive what
// k-gram fingerprints do not.
//
//   - Statements (MethodStatements). Code is cut into logical statements
//     (a line break outside brackets, a ';', the ':' closing a block
//     header; a backslash continuation or a break inside brackets is no
//     cut) and each is hashed in the renamed form, with the builtin names
//     the code binds (`sum = 0`, `def f(str)`) renamed too (unbindNames).
//     A task's solution is the set of its statements, each weighing its
//     tokens / (tasks holding it); a message holding most of that weight
//     is a copy whatever its names and statement order. So renaming,
//     reordering independent statements and re-wrapping lines change
//     nothing, and short solutions are matched whole, with the evidence
//     bar (MinInfo) counted in rare tokens rather than in k-grams. A
//     short solution too common to be evidence alone (`return a * b`),
//     or made only of textbook statements (a minimum loop, an average),
//     is attributed when a user turn of the dialogue also asks for that
//     task (MinWholeAsked: its statement is among the turn's nearest by
//     the paraphrase check's lexical retriever).
//   - Literals (MethodLiteral). A table (four or more literals in a row,
//     as in a list or dict display) or a long string literal (a regex, a
//     format) that only one task's solution holds attributes a message
//     that holds it to that task, whatever code surrounds it.
//
// Generic code is no evidence: the statements and literals of textbook
// idioms (generic.py: prime tests, sorts, gcd, fibonacci, vowels) weigh
// nothing, whichever task also holds them.

// StatementOptions set the statement and literal measures. Zero fields
// take DefaultStatementOptions.
type StatementOptions struct {
	// Threshold is the least weighted share of a task's solution
	// statements one message must hold.
	Threshold float64 `json:"threshold"`
	// MinInfo is the least evidence behind a statement match: the matched
	// statements' tokens, each statement's divided by the tasks holding
	// it, must add up to this, so a two-line solution of generic
	// statements (`return a + b`) is not attributed to its task.
	MinInfo float64 `json:"min_info"`
	// MinString is the least length in bytes of a string literal that
	// attributes a message to the one task whose solution holds it.
	MinString int `json:"min_string"`
	// MinTable is the least number of literals in a row that make a table.
	MinTable int `json:"min_table"`
	// MinWhole is the least evidence behind a whole-solution match (all
	// its statements in one run, in any order): the solution's code
	// tokens (a textbook statement's at genericWeight) divided by the
	// tasks whose solutions are the same statements.
	MinWhole float64 `json:"min_whole"`
	// MinWholeAsked is the least evidence behind a whole-solution match
	// when a user turn of the dialogue also asks for that task: its
	// statement is among the AskedTopK statements nearest to the turn
	// (the lexical retriever of the paraphrase check). A short solution
	// made of common statements is evidence with the request, not alone.
	MinWholeAsked float64 `json:"min_whole_asked"`
	// AskedTopK is how near a user turn must be to the task's statement:
	// its rank among all the benchmarks' statements (default 1, the nearest).
	AskedTopK int `json:"asked_top_k"`
	// Off turns both measures off.
	Off bool `json:"off,omitempty"`
}

// DefaultStatementOptions are the documented defaults.
var DefaultStatementOptions = StatementOptions{Threshold: 0.8, MinInfo: 10, MinString: 8, MinTable: 4, MinWhole: 7, MinWholeAsked: 5, AskedTopK: 1}

func (o StatementOptions) withDefaults() StatementOptions {
	d := DefaultStatementOptions
	if o.Threshold <= 0 {
		o.Threshold = d.Threshold
	}
	if o.MinInfo <= 0 {
		o.MinInfo = d.MinInfo
	}
	if o.MinString <= 0 {
		o.MinString = d.MinString
	}
	if o.MinTable <= 0 {
		o.MinTable = d.MinTable
	}
	if o.MinWhole <= 0 {
		o.MinWhole = d.MinWhole
	}
	if o.MinWholeAsked <= 0 {
		o.MinWholeAsked = min(d.MinWholeAsked, o.MinWhole)
	}
	if o.AskedTopK <= 0 {
		o.AskedTopK = d.AskedTopK
	}
	return o
}

// Salts separating statement and literal keys from the other keys of the
// shared filter.
const (
	stmtSalt = 0x452821E638D01377
	litSalt  = 0xBE5466CF34E90C6C
)

// Token hashes the statement cutter and unbindNames look for.
var (
	hDef, hClass, hFor, hIn, hAs, hLambda = fpHash("def"), fpHash("class"), fpHash("for"), fpHash("in"), fpHash("as"), fpHash("lambda")
	hImport, hFrom, hGlobal, hNonlocal    = fpHash("import"), fpHash("from"), fpHash("global"), fpHash("nonlocal")
	hEq, hComma, hDot, hSemi, hWalrus     = fpHash("="), fpHash(","), fpHash("."), fpHash(";"), fpHash(":=")
	hLParen, hStar, hStarStar, hMinus     = fpHash("("), fpHash("*"), fpHash("**"), fpHash("-")
	hLBrack, hLBrace, hRParen, hRBrack    = fpHash("["), fpHash("{"), fpHash(")"), fpHash("]")
	hRBrace                               = fpHash("}")
	// Sets of token hashes (wordSet: a probe is far cheaper than a map's,
	// and these are asked for every code token).
	augAssign  = newWordSet(`+= -= *= /= //= %= &= |= ^= **= >>= <<=`)
	blockWords = newWordSet(`if elif else for while def class try except finally with async`)
	// cutTokens are the tokens statements acts on, bindTokens those
	// unbindNames does: every other token (most of them, in prose and
	// code) is passed over after one bit test.
	cutTokens = newTokenBits(`( [ { ) ] } ; :`)
	// bindKeywords are the keywords unbindNames binds after.
	bindKeywords = newTokenBits(`def class for as global nonlocal lambda`)
	bindTokens   = newTokenBits(`( [ { ) ] } = += -= *= /= //= %= &= |= ^= **= >>= <<= := def class for as global nonlocal lambda`)
)

// tokenBits is a one-bit-per-hash filter of a few token hashes: mayHave
// is false for most other tokens (about 1 in 10 passes with 30 words), a
// single load and bit test, cheaper than a wordSet probe.
type tokenBits [4]uint64

func newTokenBits(words string) *tokenBits {
	var b tokenBits
	for _, w := range strings.Fields(words) {
		b.add(fpHash(w))
	}
	return &b
}

func (b *tokenBits) add(h uint64)          { b[h>>6&3] |= 1 << (h & 63) }
func (b *tokenBits) mayHave(h uint64) bool { return b[h>>6&3]&(1<<(h&63)) != 0 }

// lineBreak reports whether the gap text[a:b] between two tokens holds a
// line break that is not a backslash continuation, and whether it holds a
// blank line.
func lineBreak(text string, a, b int) (brk, blank bool) {
	nl := 0
	for i := a; i < b; i++ {
		if text[i] != '\n' {
			continue
		}
		j := i - 1
		for j >= a && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r') {
			j--
		}
		if j >= a && text[j] == '\\' {
			continue
		}
		brk = true
		if nl++; nl >= 2 {
			blank = true
		}
	}
	return brk, blank
}

// stmt is one logical statement: tokens [t0, t1) of a token slice, and
// the hash of their renamed form (set by codeStatements).
type stmt struct {
	t0, t1 int32
	h      uint64
}

// maxStmtTokens cuts a statement that runs on (an unclosed bracket in
// prose) so it cannot swallow the rest of a message.
const maxStmtTokens = 400

// gapMayBreak reports whether the gap text[a:b] between two tokens may
// hold a line break: a gap of one byte other than a line break (a space,
// most gaps) breaks nothing, and lineBreak is not asked.
func gapMayBreak(text string, a, b int) bool {
	return b-a > 1 || b-a == 1 && text[a] == '\n'
}

// statementCuts appends to out the positions of the tokens of toks (the
// code tokens of text) the statement cutter acts on: those after a gap
// that may break (gapMayBreak; not the first) and the one-byte brackets,
// ';' and ':'. The tokenizer finds the same (tokMarks.cuts).
func statementCuts(text string, toks []ctok, out []int32) []int32 {
	for i := range toks {
		t := &toks[i]
		if t.end-t.start == 1 && cutByte[text[t.start]] && codeClass[text[t.start]] == cOp ||
			i > 0 && gapMayBreak(text, int(toks[i-1].end), int(t.start)) {
			out = append(out, int32(i))
		}
	}
	return out
}

// statements appends the logical statements of toks (the code tokens of
// text) to out, unhashed. cuts are the tokens that may end one
// (statementCuts): the others are passed over, but for a statement
// running past maxStmtTokens.
func statements(text string, toks []ctok, cuts []int32, out []stmt) []stmt {
	depth := 0
	start := 0
	header := len(toks) > 0 && blockWords.has(toks[0].exact)
	flush := func(end int) {
		if end > start {
			out = append(out, stmt{t0: int32(start), t1: int32(end)})
		}
		start, depth = end, 0
		// A statement is a block header by its first token.
		header = end < len(toks) && blockWords.has(toks[end].exact)
	}
	for _, c := range cuts {
		i := int(c)
		for start+maxStmtTokens < i {
			flush(start + maxStmtTokens)
		}
		t := &toks[i]
		if i > start {
			if a, b := int(toks[i-1].end), int(t.start); gapMayBreak(text, a, b) {
				if brk, blank := lineBreak(text, a, b); brk && (depth == 0 || blank) {
					flush(i)
				}
			}
			if i-start >= maxStmtTokens {
				flush(i)
			}
		}
		if !cutTokens.mayHave(t.exact) {
			continue
		}
		switch {
		case opener(t.exact):
			depth++
		case closer(t.exact):
			depth = max(0, depth-1)
		case depth == 0 && t.exact == hSemi:
			flush(i + 1)
		case depth == 0 && header && t.exact == hColon:
			flush(i + 1)
		}
	}
	for start+maxStmtTokens < len(toks) {
		flush(start + maxStmtTokens)
	}
	flush(len(toks))
	return out
}

// unbindNames renames (in the norm form) the kept names, builtins such as
// sum, str, list and max, that the code binds: a parameter, an assignment
// target, a loop or comprehension variable, an `as` or lambda name, a
// def. A solution that uses `sum` as its accumulator is renamed with it.
// Attributes (after '.') keep their names.
//
// names are the tokens it may bind or rename (bindableNames, or the
// tokenizer's tokMarks), in order: a statement without one binds nothing
// and is not read, and only they are renamed. binds are the tokens it
// binds from (bindingTokens, or tokMarks.binds), in order: a statement
// without one is not read either.
func unbindNames(text string, toks []ctok, sts []stmt, names, binds []int32) {
	if len(names) == 0 {
		return
	}
	var bound []uint64
	// odd: a bound token is no identifier but an unclosed prefixed
	// string (`b's` in prose), whose hash other strings share.
	odd := false
	bind := func(k int) {
		t := &toks[k]
		if t.norm == hIdent || t.norm != t.exact || !isName(text, t) || (k > 0 && toks[k-1].exact == hDot) {
			return
		}
		for _, b := range bound {
			if b == t.exact {
				return
			}
		}
		bound = append(bound, t.exact)
		odd = odd || strings.ContainsAny(text[t.start:t.end], `'"`)
	}
	ni, bi := 0, 0 // the first of names and of binds not before the statement
	for _, s := range sts {
		for ni < len(names) && names[ni] < s.t0 {
			ni++
		}
		if ni == len(names) {
			break
		}
		if names[ni] >= s.t1 {
			continue
		}
		for bi < len(binds) && binds[bi] < s.t0 {
			bi++
		}
		if bi == len(binds) || binds[bi] >= s.t1 {
			continue
		}
		ts := toks[s.t0:s.t1]
		first := ts[0].exact
		if first == hImport || first == hFrom {
			continue
		}
		// One pass: the top-level '=' and the binding keywords.
		depth, assignAt := 0, -1
		for k := range ts {
			e := ts[k].exact
			if !bindTokens.mayHave(e) {
				continue
			}
			switch {
			case opener(e):
				depth++
			case closer(e):
				depth = max(0, depth-1)
			case depth == 0 && assignAt < 0 && (e == hEq || augAssign.has(e)):
				assignAt = k
			case e == hWalrus && k > 0:
				bind(int(s.t0) + k - 1)
			case e == hDef || e == hClass:
				if k+1 < len(ts) {
					bind(int(s.t0) + k + 1)
				}
				if e == hDef {
					// Parameters: a name after '(' ',' '*' or '**' inside
					// the def's parentheses.
					d := 0
					for j := k + 1; j < len(ts); j++ {
						e := ts[j].exact
						if opener(e) {
							d++
						} else if closer(e) {
							if d--; d == 0 {
								break
							}
						} else if d == 1 {
							p := ts[j-1].exact
							if p == hLParen || p == hComma || p == hStar || p == hStarStar {
								bind(int(s.t0) + j)
							}
						}
					}
				}
			case e == hFor:
				for j := k + 1; j < len(ts) && ts[j].exact != hIn; j++ {
					bind(int(s.t0) + j)
				}
			case e == hAs || e == hGlobal || e == hNonlocal:
				for j := k + 1; j < len(ts) && (j == k+1 || ts[j-1].exact == hComma); j++ {
					bind(int(s.t0) + j)
				}
			case e == hLambda:
				for j := k + 1; j < len(ts) && ts[j].exact != hColon; j++ {
					bind(int(s.t0) + j)
				}
			}
		}
		// Targets: the names before a top-level '=' not called,
		// indexed or followed by an attribute.
		if assignAt > 0 && !blockWords.has(first) {
			for k := 0; k < assignAt; k++ {
				if k+1 < len(ts) && (opener(ts[k+1].exact) || ts[k+1].exact == hDot) {
					continue
				}
				bind(int(s.t0) + k)
			}
		}
	}
	if len(bound) == 0 {
		return
	}
	if odd {
		renameAll(toks, bound)
		return
	}
	// A bound identifier's other uses are names too: its text, not after
	// a '.'.
	for _, k := range names {
		t := &toks[k]
		for _, b := range bound {
			if t.exact == b {
				t.norm = hIdent
				break
			}
		}
	}
}

// isBindKeyword reports whether h is the hash of a keyword unbindNames
// binds after.
func isBindKeyword(h uint64) bool {
	return h == hDef || h == hClass || h == hFor || h == hAs || h == hGlobal || h == hNonlocal || h == hLambda
}

// isBinder reports whether a token's exact hash e is one unbindNames
// binds from.
func isBinder(e uint64) bool { return e == hEq || e == hWalrus || augAssign.has(e) || isBindKeyword(e) }

// bindingTokens appends to out the positions of the tokens of toks that
// unbindNames binds from (isBinder). The tokenizer finds the same
// (tokMarks.binds).
func bindingTokens(toks []ctok, out []int32) []int32 {
	for k := range toks {
		if isBinder(toks[k].exact) {
			out = append(out, int32(k))
		}
	}
	return out
}

// renameAll renames every token of toks whose hash is bound, except
// after a '.'.
func renameAll(toks []ctok, bound []uint64) {
	// A filter of the bound names: most tokens are passed over after one
	// bit test.
	var bits tokenBits
	for _, b := range bound {
		bits.add(b)
	}
	for k := range toks {
		t := &toks[k]
		if !bits.mayHave(t.exact) || t.norm == hIdent || k > 0 && toks[k-1].exact == hDot {
			continue
		}
		for _, b := range bound {
			if t.exact == b {
				t.norm = hIdent
				break
			}
		}
	}
}

// bindableNames appends to out the positions of the tokens of toks that
// unbindNames may bind or rename: identifiers (isName) in the norm form
// as written (kept names), not after a '.'. The tokenizer finds the same
// (tokMarks; TestTokMarks).
func bindableNames(text string, toks []ctok, out []int32) []int32 {
	for k := range toks {
		t := &toks[k]
		if t.norm != hIdent && t.norm == t.exact && isName(text, t) && (k == 0 || toks[k-1].exact != hDot) {
			out = append(out, int32(k))
		}
	}
	return out
}

// isName reports whether t is an identifier (not a keyword the tokenizer
// keeps, a literal or an operator).
func isName(text string, t *ctok) bool {
	c := text[t.start]
	if codeClass[c] != cIdent || codeClass[text[t.end-1]] == cQuote {
		return false
	}
	return !keywords.has(t.exact)
}

// keywords are Python's reserved words: never bound, never renamed.
var keywords = newWordSet(`False None True and as assert async await break class continue def del elif else except
	finally for from global if import in is lambda nonlocal not or pass raise return try while with yield`)

// literalKey is a table or a long string literal of a token slice: its
// hash and its tokens.
type literalKey struct {
	h      uint64
	t0, t1 int32
}

// literalKeys appends the tables (runs of at least minTable literals
// separated by ',' or ':', a '-' sign allowed, with at least three
// distinct values) and the string literals of at least minString bytes
// of toks to out.
func literalKeys(text string, toks []ctok, minTable, minString int, out []literalKey) []literalKey {
	isLit := func(k int) bool { return isLiteral(text, &toks[k]) }
	for k := 0; k < len(toks); k++ {
		if !isLit(k) {
			continue
		}
		t := &toks[k]
		if codeClass[text[t.end-1]] == cQuote || codeClass[text[t.start]] == cQuote {
			if strLen(text, t) >= minString && !proseString(text[t.start:t.end]) {
				out = append(out, literalKey{h: t.exact ^ litSalt, t0: int32(k), t1: int32(k + 1)})
			}
		}
		// A table starting here (only at its first literal).
		if k >= 2 && (toks[k-1].exact == hComma || toks[k-1].exact == hColon) && isLit(k-2) {
			continue
		}
		var h uint64
		var vals [3]uint64
		nv, n, j := 0, 0, k
		for j < len(toks) && isLit(j) {
			h = h*rollBase + toks[j].exact
			if nv < 3 && !containsHash(vals[:nv], toks[j].exact) {
				vals[nv] = toks[j].exact
				nv++
			}
			n++
			if j+2 < len(toks) && (toks[j+1].exact == hComma || toks[j+1].exact == hColon) {
				nx := j + 2
				if toks[nx].exact == hMinus && nx+1 < len(toks) {
					nx++
				}
				if isLit(nx) {
					j = nx
					continue
				}
			}
			break
		}
		if n >= minTable && nv >= 3 && !progression(text, toks[k:j+1]) {
			out = append(out, literalKey{h: h ^ litSalt ^ uint64(n), t0: int32(k), t1: int32(j + 1)})
		}
	}
	return out
}

func containsHash(hs []uint64, h uint64) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// proseString reports a short string literal made of letters, spaces and
// sentence punctuation only, under four words ("Valid Email", "Not
// matched!", "AEIOUaeiou"): words any program prints, no evidence of one
// task. A regex, a format, a string with digits or symbols, or a sentence
// of four or more words is not (generic.py lists the sentences every
// tutorial prints).
func proseString(lit string) bool {
	body := strings.TrimLeft(lit, "rRbBfFuU")
	body = strings.Trim(body, `"'`)
	words, inWord := 0, false
	for _, r := range body {
		if r == ' ' {
			inWord = false
			continue
		}
		if !unicode.IsLetter(r) && !strings.ContainsRune(",.!?;:'-", r) {
			return false
		}
		if !inWord {
			words++
			inWord = true
		}
	}
	return words < 4
}

// progression reports a table of numbers in arithmetic progression
// ([1, 3, 5, 7, 9], [10, 20, 30, 40]): sample data, no evidence of a task.
func progression(text string, toks []ctok) bool {
	var vals []float64
	neg := false
	for _, t := range toks {
		switch {
		case t.exact == hMinus:
			neg = true
		case t.exact == hComma || t.exact == hColon:
		default:
			v, err := strconv.ParseFloat(strings.ReplaceAll(text[t.start:t.end], "_", ""), 64)
			if err != nil {
				return false
			}
			if neg {
				v = -v
			}
			vals = append(vals, v)
			neg = false
		}
	}
	for i := 2; i < len(vals); i++ {
		if vals[i]-vals[i-1] != vals[1]-vals[0] {
			return false
		}
	}
	return len(vals) >= 3
}

// strLen is the length of a string literal's content, without its prefix
// and quotes.
func strLen(text string, t *ctok) int {
	s := text[t.start:t.end]
	s = strings.TrimLeft(s, "rRbBfFuU")
	q := 1
	if strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, `'''`) {
		q = 3
	}
	return max(0, len(s)-2*q)
}

//go:embed generic.py
var genericCode string

// genericKeys are the statement and literal keys of textbook code
// (generic.py): no evidence of any task.
var genericKeys = func() map[uint64]bool {
	m := map[uint64]bool{}
	toks := codeTokens(genericCode, nil)
	for _, s := range codeStatements(genericCode, toks, nil) {
		m[s.h] = true
	}
	for _, l := range literalKeys(genericCode, toks, DefaultStatementOptions.MinTable, DefaultStatementOptions.MinString, nil) {
		m[l.h] = true
	}
	return m
}()

// codeStatements cuts toks (the code tokens of text) into statements,
// renames the builtin names the code binds (unbindNames, which changes
// toks' norm form) and hashes the statements in that form.
func codeStatements(text string, toks []ctok, out []stmt) []stmt {
	return markedStatements(text, toks, &tokMarks{names: bindableNames(text, toks, nil), cuts: statementCuts(text, toks, nil),
		binds: bindingTokens(toks, nil)}, out)
}

// markedStatements is codeStatements given the tokens' marks (tokMarks:
// the bindable names and the cuts).
func markedStatements(text string, toks []ctok, marks *tokMarks, out []stmt) []stmt {
	base := len(out)
	out = cutStatements(text, toks, marks, out)
	hashStatements(toks, out[base:])
	return out
}

// cutStatements is markedStatements without the hashes: the check sets
// them as it hashes the k-grams (kgramCandidates), in the same pass over
// the tokens.
func cutStatements(text string, toks []ctok, marks *tokMarks, out []stmt) []stmt {
	base := len(out)
	out = statements(text, toks, marks.cuts, out)
	unbindNames(text, toks, out[base:], marks.names, marks.binds)
	return out
}

// hashStatements sets the hash of each statement of sts (of toks) from
// its tokens' norm form.
func hashStatements(toks []ctok, sts []stmt) {
	for i := range sts {
		s := &sts[i]
		var h uint64
		for _, t := range toks[s.t0:s.t1] {
			h = h*rollBase + t.norm
		}
		s.h = h ^ stmtSalt
	}
}

// stEntry is one statement of the benchmark's solutions: the tasks
// holding it and its weight, tokens / tasks.
type stEntry struct {
	tasks   []int32
	w       float32
	generic bool // a textbook statement (generic.py)
}

// genericWeight scales a textbook statement's weight: alone it is no
// evidence, but a solution's combination of them, whole, is some.
const genericWeight = 0.25

// maxStmtTasks is the most tasks a statement may be shared by and still
// be looked up (`return result`, `for i in range(len(x)):`): it stays in
// the tasks' totals.
const maxStmtTasks = 16

// buildStatements fills x's statement and literal tables from the tasks'
// solutions.
func (x *Index) buildStatements(solutions []string, o StatementOptions) {
	x.stOpts = o
	stIdx := map[uint64]int32{}
	var entries []stEntry
	var ntok []int32
	lits := map[uint64][]int32{}
	litStart := map[uint64]uint64{} // literal key -> litStartHash of its start
	var toks []ctok
	var sts []stmt
	var lks []literalKey
	for ti, code := range solutions {
		toks = codeTokens(code, toks[:0])
		sts = codeStatements(code, toks, sts[:0])
		for _, s := range sts {
			if f := toks[s.t0].exact; f == hImport || f == hFrom {
				continue
			}
			ei, ok := stIdx[s.h]
			if !ok {
				ei = int32(len(entries))
				stIdx[s.h] = ei
				entries = append(entries, stEntry{generic: genericKeys[s.h]})
				ntok = append(ntok, s.t1-s.t0)
			}
			if ts := entries[ei].tasks; len(ts) == 0 || ts[len(ts)-1] != int32(ti) {
				entries[ei].tasks = append(ts, int32(ti))
			}
		}
		for _, l := range literalKeys(code, toks, o.MinTable, o.MinString, lks[:0]) {
			if genericKeys[l.h] {
				continue
			}
			if ts := lits[l.h]; len(ts) == 0 || ts[len(ts)-1] != int32(ti) {
				lits[l.h] = append(ts, int32(ti))
			}
			litStart[l.h] = litStartHash(toks[l.t0:l.t1])
		}
	}
	x.stTotal = make([]float32, len(solutions))
	x.stList = make([][]uint64, len(solutions))
	x.fnTok = make([]int32, len(solutions))
	x.fnInfo = make([]float32, len(solutions))
	x.fnTextbook = make([]bool, len(solutions))
	wholes := map[uint64][]int32{}
	firsts := map[uint64]bool{}
	for ti, code := range solutions {
		toks = codeTokens(code, toks[:0])
		var sum uint64
		textbook := true
		for _, s := range codeStatements(code, toks, sts[:0]) {
			if f := toks[s.t0].exact; f != hImport && f != hFrom {
				if len(x.stList[ti]) == 0 {
					firsts[s.h] = true
				}
				x.stList[ti] = append(x.stList[ti], s.h)
				x.fnTok[ti] += s.t1 - s.t0
				w := float32(s.t1 - s.t0)
				if genericKeys[s.h] {
					w *= genericWeight
				} else {
					textbook = false
				}
				x.fnInfo[ti] += w
				sum += wholeHash(s.h)
			}
		}
		x.fnTextbook[ti] = textbook && len(x.stList[ti]) > 0
		if n := len(x.stList[ti]); n > 0 && n <= maxWholeStatements {
			k := sum ^ uint64(n)*rollBase
			wholes[k] = append(wholes[k], int32(ti))
			x.fnLens[n] = true
		}
		slices.Sort(x.stList[ti])
	}
	x.fnIndex, x.fnTasks = freeze(wholes)
	x.fnFirst = newHashTable(len(firsts))
	for h := range firsts {
		x.fnFirst.put(h, 0)
	}
	x.stIndex = newHashTable(len(entries))
	// The totals are float32 sums: added in entry order, not the map's,
	// so two auditors of the same benchmarks score alike to the last bit.
	for ei := range entries {
		e := &entries[ei]
		e.w = float32(ntok[ei]) / float32(len(e.tasks))
		if e.generic {
			e.w *= genericWeight
		}
		for _, t := range e.tasks {
			x.stTotal[t] += e.w
		}
	}
	for h, ei := range stIdx {
		if len(entries[ei].tasks) <= maxStmtTasks {
			x.stIndex.put(h, ei)
		}
	}
	x.stEntries = entries
	// Only a literal one task holds attributes.
	x.litIndex = newHashTable(len(lits))
	for h, ts := range lits {
		if len(ts) == 1 {
			x.litIndex.put(h, ts[0])
			x.litStarts = append(x.litStarts, litStart[h])
		}
	}
	x.buildSignature(stIdx)
}

// minStmtMsgTokens is the fewest code tokens a message needs for the
// statement measure when the fingerprints (whose k sets it otherwise)
// are off.
const minStmtMsgTokens = 9

// stHit is what one message shares with one task's statements.
type stHit struct {
	w     float32 // matched weight
	n     int     // matched statements
	msg   int     // ctMsgs index
	whole bool    // the whole solution, as one run (wholeMatches)
	weak  bool    // whole, but with less evidence than MinWhole: needs a user turn asking for the task
	asked int     // with weak: the user turn (message index) that asks for it
	spans []schema.Span
}

// newHit returns a reusable stHit of the scratch's pool (emptied by
// matchStatements for each index: the findings copy what they keep), so
// a check allocates none per task it meets. Its fields are stale.
func (s *scratch) newHit() *stHit {
	if s.hitsUsed == len(s.hitPool) {
		s.hitPool = append(s.hitPool, &stHit{})
	}
	h := s.hitPool[s.hitsUsed]
	s.hitsUsed++
	return h
}

// maxWholeStatements is the longest solution, in statements, matched
// whole by wholeMatches (longer ones have statements enough for the
// share).
const maxWholeStatements = 40

// wholeHash mixes a statement hash into the order-free sum that keys a
// whole solution.
func wholeHash(h uint64) uint64 { return fmix64(h ^ 0x3C6EF372FE94F82B) }

// wholeMatches finds the tasks whose whole solution one message holds as
// a run of statements in some order, starting where a solution starts:
// the evidence of a short solution made of common statements is their
// combination, weighed by its length in tokens over the tasks that share
// it (StatementOptions.MinWhole).
func (s *scratch) wholeMatches(x *Index, filter *keyFilter, o StatementOptions, mi int, cm ctMsg, toks []ctok) {
	body, wh, pos := s.stBody[cm.b0:cm.b1], s.stWH[cm.b0:cm.b1], s.stPos[cm.b0:cm.b1]
	sts := s.sts[cm.s0:cm.s1]
	for j := range body {
		if _, ok := x.fnFirst.get(body[j]); !ok {
			continue
		}
		var sum uint64
		for l := 1; l <= maxWholeStatements && j+l <= len(body); l++ {
			sum += wh[j+l-1]
			if !x.fnLens[l] {
				continue
			}
			k := sum ^ uint64(l)*rollBase
			if !filter.mayHold(k) {
				continue
			}
			fi, ok := x.fnIndex.get(k)
			if !ok {
				continue
			}
			ts := x.fnTasks[fi]
			for _, t := range ts {
				info := float64(x.fnInfo[t]) / float64(len(ts))
				if len(x.stList[t]) != l || info < o.MinWholeAsked {
					continue
				}
				h := s.newHit()
				*h = stHit{w: x.stTotal[t], n: l, msg: mi, whole: true, spans: h.spans[:0], weak: info < o.MinWhole || x.fnTextbook[t]}
				for k := j; k < j+l; k++ {
					st := sts[pos[k]]
					h.spans = addSpan(h.spans, schema.Span{Message: cm.msg, Start: int(toks[st.t0].start), End: int(toks[st.t1-1].end)})
				}
				// A whole match beats a share, unless it is weak (it
				// may not hold without a request): then it only fills
				// a gap.
				if b := s.stBest[t]; b == nil || !h.weak && (!b.whole || b.weak) {
					s.stBest[t] = h
				}
			}
		}
	}
}

// addBody records message cm's body (its statements, imports left out):
// their hashes, their wholeHash mixes and their positions in its
// statements, once for every index.
func (s *scratch) addBody(cm *ctMsg, toks []ctok) {
	cm.b0 = len(s.stBody)
	for i, st := range s.sts[cm.s0:cm.s1] {
		if f := toks[st.t0].exact; f != hImport && f != hFrom {
			s.stBody = append(s.stBody, st.h)
			s.stWH = append(s.stWH, wholeHash(st.h))
			s.stPos = append(s.stPos, i)
		}
	}
	cm.b1 = len(s.stBody)
}

// matchStatements adds the statement and literal findings of the
// dialogue against x to r: for each task, the message holding the largest
// share of its solution's statement weight, and the first literal only
// that task holds.
func (a *Auditor) matchStatements(bi int, x *Index, d *schema.Dialogue, id string, s *scratch, r *Result) {
	if x.stIndex == nil {
		return
	}
	o := x.stOpts
	nx := len(a.indexes)
	// Cleared only when used: clearing a map that once grew walks all
	// its slots, empty or not.
	if len(s.stBest) > 0 {
		clear(s.stBest)
	}
	s.hitsUsed = 0
	if s.litFound == nil {
		s.litFound = map[int32]bool{}
	}
	litFound := s.litFound
	if len(litFound) > 0 {
		clear(litFound)
	}
	s.stNewIndex(x)
	for mi, cm := range s.ctMsgs {
		if cm.s0 == cm.s1 && cm.l0 == cm.l1 {
			// Nothing to match (the gate passed the message over): its
			// body, a subset of its statements, is empty too. Most
			// messages; the maps below are not touched for them.
			continue
		}
		text := d.Messages[cm.msg].Content
		toks := s.ctoks[cm.t0:cm.t1]
		gen := s.stNextGen()
		for si, st := range s.sts[cm.s0:cm.s1] {
			row := s.stRow[cm.s0+si]
			if row < 0 {
				continue
			}
			ei := a.stEnt[int(row)*nx+bi]
			if ei < 0 || s.stSeen[ei] == gen {
				continue
			}
			s.stSeen[ei] = gen
			e := &x.stEntries[ei]
			sp := schema.Span{Message: cm.msg, Start: int(toks[st.t0].start), End: int(toks[st.t1-1].end)}
			for _, t := range e.tasks {
				var h *stHit
				if s.stHitGen[t] == gen {
					h = s.stHitOf[t]
				} else {
					h = s.newHit()
					*h = stHit{msg: mi, spans: h.spans[:0]}
					s.stHitGen[t], s.stHitOf[t] = gen, h
					s.stHitTasks = append(s.stHitTasks, t)
				}
				h.w += e.w
				h.n++
				h.spans = addSpan(h.spans, sp)
			}
		}
		body := s.stBody[cm.b0:cm.b1]
		s.wholeMatches(x, &a.filter, o, mi, cm, toks)
		for _, t := range s.stHitTasks {
			h := s.stHitOf[t]
			if tot := x.stTotal[t]; tot == 0 || float64(h.w/tot) < o.Threshold-1e-6 || float64(h.w) < o.MinInfo {
				continue
			}
			if !s.holdsRun(body, x.stList[t]) {
				continue
			}
			if b := s.stBest[t]; b == nil || b.weak || h.w > b.w && !b.whole {
				s.stBest[t] = h
			}
		}
		for _, l := range s.lks[cm.l0:cm.l1] {
			if !a.filter.mayHold(l.h) {
				continue
			}
			t, ok := x.litIndex.get(l.h)
			if !ok || litFound[t] {
				continue
			}
			litFound[t] = true
			lit := text[toks[l.t0].start:toks[l.t1-1].end]
			kind := "string"
			if l.t1-l.t0 > 1 {
				kind = fmt.Sprintf("table of %d literals", (l.t1-l.t0+1)/2)
			}
			r.Findings = append(r.Findings, schema.Finding{
				DialogueID: id, Benchmark: x.name, TaskID: x.tasks[t].id, Method: MethodLiteral, Score: 1,
				Evidence: fmt.Sprintf("a %s only this task's solution holds: %s", kind, clip(strings.Join(strings.Fields(lit), " "), 80)),
				Spans:    []schema.Span{{Message: cm.msg, Start: int(toks[l.t0].start), End: int(toks[l.t1-1].end)}},
			})
		}
	}
	tasks := make([]int32, 0, len(s.stBest))
	for t, h := range s.stBest {
		if h.weak {
			if h.asked = a.askedBy(bi, int(t), d, s); h.asked < 0 {
				continue
			}
		}
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	for _, t := range tasks {
		h := s.stBest[t]
		share := min(float64(h.w/x.stTotal[t]), 1)
		r.Findings = append(r.Findings, schema.Finding{
			DialogueID: id, Benchmark: x.name, TaskID: x.tasks[t].id, Method: MethodStatements, Score: share,
			Evidence: stEvidence(h, share, x.fnTok[t]),
			Spans:    slices.Clone(h.spans),
		})
	}
}

// stNewIndex sizes the statement stage's flat arrays for index x.
// stRows sets s.stRow: the statements' rows in a.stEnt, looked up once
// for all indexes.
func (s *scratch) stRows(a *Auditor) {
	s.stRow = s.stRow[:0]
	for _, st := range s.sts {
		row := int32(-1)
		if a.filter.mayHold(st.h) {
			if r, ok := a.stAt.get(st.h); ok {
				row = r
			}
		}
		s.stRow = append(s.stRow, row)
	}
}

func (s *scratch) stNewIndex(x *Index) {
	if n := len(x.stEntries); len(s.stSeen) < n {
		s.stSeen = slices.Grow(s.stSeen, n-len(s.stSeen))[:n]
	}
	if n := len(x.tasks); len(s.stHitGen) < n {
		s.stHitGen = slices.Grow(s.stHitGen, n-len(s.stHitGen))[:n]
		s.stHitOf = slices.Grow(s.stHitOf, n-len(s.stHitOf))[:n]
	}
}

// stNextGen starts a message's statement matching: a new generation, so
// every stamp of the arrays is stale, and no task met.
func (s *scratch) stNextGen() uint32 {
	if s.stGen++; s.stGen == 0 {
		// Wrapped: old stamps could match again.
		clear(s.stSeen)
		clear(s.stHitGen)
		s.stGen = 1
	}
	s.stHitTasks = s.stHitTasks[:0]
	return s.stGen
}

// wholeStatements: a task whose solution has fewer statements is matched
// only whole, all its statements (the def line and a bare `return x`
// included) one after the other in some order, as a copied function is:
// its few statements are each common enough in other code (`return
// list(set(x))`, `Counter(words)`) that the share alone is no evidence.
// A longer solution needs runShare of its statements within a run of its
// length: its statements together, not one long statement of it among
// unrelated code.
const (
	wholeStatements = 6
	runShare        = 0.7
)

// holdsRun reports whether some run of len(want) consecutive statements
// of body holds enough of want (sorted; see wholeStatements), counted as
// multisets.
func (s *scratch) holdsRun(body, want []uint64) bool {
	n := len(want)
	need := n
	if n >= wholeStatements {
		need = int(math.Ceil(runShare * float64(n)))
	}
	if len(body) < need {
		return false
	}
	for j := 0; j+need <= len(body); j++ {
		if _, ok := slices.BinarySearch(want, body[j]); !ok {
			continue
		}
		s.stWin = append(s.stWin[:0], body[j:min(j+n, len(body))]...)
		slices.Sort(s.stWin)
		if tally.Common(s.stWin, want) >= need {
			return true
		}
	}
	return false
}

func stEvidence(h *stHit, share float64, tokens int32) string {
	if h.weak {
		return fmt.Sprintf("the whole solution (%d statements, %d tokens, too common alone) in one run of one turn, renamed form, in any order, and message %d asks for the task; %s",
			h.n, tokens, h.asked, spansText(h.spans))
	}
	if h.whole {
		return fmt.Sprintf("the whole solution (%d statements, %d tokens) in one run of one turn, renamed form, in any order; %s",
			h.n, tokens, spansText(h.spans))
	}
	return fmt.Sprintf("%d solution statements in one turn, renamed form (weighted share %.2f, evidence %.1f); %s",
		h.n, share, h.w, spansText(h.spans))
}

func opener(h uint64) bool { return h == hLParen || h == hLBrack || h == hLBrace }
func closer(h uint64) bool { return h == hRParen || h == hRBrack || h == hRBrace }

// askedFloor is the least BM25 share (the turn's score against the
// statement over the statement's against itself) of a turn that asks
// for a task: a request with no word of the statement asks for nothing.
const askedFloor = 0.2

// askedBy returns the first user turn of d (its message index) whose
// prose has task t of benchmark bi among its AskedTopK nearest
// statements, or -1. The turns' nearest statements are computed once per
// dialogue, and only when a weak whole match asks for them.
func (a *Auditor) askedBy(bi, t int, d *schema.Dialogue, s *scratch) int {
	if a.ask == nil {
		return -1
	}
	if !s.askedDone {
		s.askedDone = true
		s.asked = s.asked[:0]
		for i := range d.Messages {
			m := &d.Messages[i]
			if m.Role != schema.RoleUser {
				continue
			}
			// A recurring turn's documents are kept in its memo entry.
			var e *memoEntry
			if i < len(s.entryOf) {
				e = s.entryOf[i]
			}
			if e != nil && e.askedSet {
				for _, doc := range e.asked {
					s.asked = append(s.asked, [2]int{i, doc})
				}
				continue
			}
			if s.askAcc == nil {
				s.askAcc = make([]float32, len(a.ask.docs))
			}
			from := len(s.asked)
			for _, h := range a.ask.nearest(stripCode(m.Content), a.opts.Statements.AskedTopK, s.askAcc, nil) {
				if h.rel >= askedFloor {
					s.asked = append(s.asked, [2]int{i, h.doc})
				}
			}
			if e != nil {
				e.askedSet = true
				for _, p := range s.asked[from:] {
					e.asked = append(e.asked, p[1])
				}
			}
		}
	}
	doc := a.askBase[bi] + t
	for _, p := range s.asked {
		if p[1] == doc {
			return p[0]
		}
	}
	return -1
}
