package leak

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// The scanners read eight bytes at a time; these tests hold them to the
// byte-at-a-time versions they replaced (ref*, kept here as the
// specification) on the real texts of the shared data and on random text
// rich in the bytes where the two could part: word and space boundaries,
// non-ASCII and invalid UTF-8, quotes, '#', text ends.

// scanTexts are real prompts, solutions, tests and dialogue turns, plus
// random texts.
func scanTexts(t *testing.T) []string {
	var texts []string
	for _, p := range append(testHumanEval(t), testMBPP(t)...) {
		texts = append(texts, p.Text, p.Prompt, p.Solution, strings.Join(p.Tests, "\n"), p.Setup)
	}
	for _, d := range testDialogues(t, sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")) {
		for _, m := range d.Messages {
			texts = append(texts, m.Content)
		}
	}
	for _, d := range testAlpacaDialogues(t) {
		for _, m := range d.Messages {
			texts = append(texts, m.Content)
		}
	}
	return append(texts, randomTexts(3000)...)
}

// randomTexts draws texts from pieces where the scanners branch.
func randomTexts(n int) []string {
	pieces := []string{"a", "Z", "_", "0", "9", "x1", "abcdefgh", "ABCDEFGHIJ", " ", "  ", "        ", "\t", "\n", "\r\n", "\v", "\f",
		"(", ")", ":", ".", ",", "==", "'", "\"", "\"\"\"", "'''", "#", "`", "```", "~", "~~~", "````", "\n```\n", "\n~~~~ py\n", "\n~~~~\n", "@", "[", "{", "\x7f",
		"é", "ß", "—", "\u00a0", "\u2003", "日本", "\xff", "\xc3", "\x80", "r'", "b\"", "1_000", "3.14", "0x1F", "def ", "return ",
		"import os", "    x = 1", "print(x)", "# c", "if a:", "else:", "pass"}
	r := rand.New(rand.NewPCG(7, 11))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		out[i] = b.String()
	}
	return out
}

func TestAppendTokensMatchesReference(t *testing.T) {
	for _, text := range scanTexts(t) {
		checkTokens(t, text)
	}
}

func checkTokens(t *testing.T, text string) {
	t.Helper()
	got, want := appendTokens(nil, text), refAppendTokens(nil, text)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("appendTokens(%q):\n got %v\nwant %v", text, got, want)
	}
}

func FuzzScanners(f *testing.F) {
	for _, s := range randomTexts(50) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkTokens(t, text)
		checkCodeTokens(t, text)
		checkFenced(t, text)
		var got, want []byte
		for _, l := range strings.Split(text, "\n") {
			checkLine(t, l, []LineOptions{DefaultLineOptions}, &got, &want)
		}
	})
}

func TestFencedBlocksMatchReference(t *testing.T) {
	for _, text := range scanTexts(t) {
		checkFenced(t, text)
	}
}

// checkFenced holds FencedBlocks and the check's line hashing, which share
// fenceScanner, to the line-by-line reference.
func checkFenced(t *testing.T, text string) {
	t.Helper()
	want := refFencedBlocks(text)
	if got := FencedBlocks(text); !slices.Equal(got, want) {
		t.Fatalf("FencedBlocks(%q):\n got %q\nwant %q", text, got, want)
	}
	o := LineOptions{MinChars: 1}
	var wantLH []uint64
	var ends []int
	for _, b := range want {
		wantLH, _ = o.codeLineHashes(b, nil, wantLH)
		ends = append(ends, len(wantLH))
	}
	s := newScratch()
	var gotEnds []int
	found := o.fencedLines(text, s, func() { gotEnds = append(gotEnds, len(s.lh)) })
	if found != (len(want) > 0) || !slices.Equal(s.lh, wantLH) || !slices.Equal(gotEnds, ends) {
		t.Fatalf("fencedLines(%q): found %v, %d lines, blocks ending at %v; want %d blocks, %d lines ending at %v",
			text, found, len(s.lh), gotEnds, len(want), len(wantLH), ends)
	}
}

// refFencedBlocks trims every line and tests it for a fence.
func refFencedBlocks(text string) []string {
	var blocks []string
	in := false
	var fence string
	bodyStart := 0
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += pos
			next = end + 1
		}
		t := strings.TrimSpace(text[pos:end])
		if !in {
			if f := fenceOf(t); f != "" {
				in, fence, bodyStart = true, f, next
			}
		} else if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
			blocks = append(blocks, strings.TrimSuffix(text[bodyStart:pos], "\n"))
			in = false
		}
		pos = next
	}
	if in && bodyStart < len(text) {
		blocks = append(blocks, text[bodyStart:])
	}
	return blocks
}

// refAppendTokens reads text a rune at a time: a token is a maximal run
// of word runes (isWord), hashed by wordHash when ASCII.
func refAppendTokens(buf []span, text string) []span {
	var low []byte
	for i := 0; i < len(text); {
		if r, sz := utf8.DecodeRuneInString(text[i:]); !isWord(r) {
			i += sz
			continue
		}
		start, ascii := i, true
		for i < len(text) {
			r, sz := utf8.DecodeRuneInString(text[i:])
			if !isWord(r) {
				break
			}
			ascii = ascii && r < utf8.RuneSelf
			i += sz
		}
		var h uint64
		if ascii {
			h = wordHash(text, start, i)
		} else {
			low, h = unicodeWordHash(low, text[start:i])
		}
		buf = append(buf, span{start: int32(start), end: int32(i), hash: h})
	}
	return buf
}

// refNormalizeAppend reads s a rune at a time: spaces (unicode.IsSpace)
// are dropped, one kept between two word runes.
func refNormalizeAppend(dst []byte, s string) []byte {
	var prevWord, pendingSpace, started bool
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			pendingSpace = started
			i += sz
			continue
		}
		word := isWord(r)
		if pendingSpace && prevWord && word {
			dst = append(dst, ' ')
		}
		dst = append(dst, s[i:i+sz]...)
		pendingSpace, prevWord, started = false, word, true
		i += sz
	}
	return dst
}

func refKeep(o LineOptions, n string) bool {
	if len(n) < o.MinChars || n == "" {
		return false
	}
	if len(n) <= maxTrivialLen && trivialLines[n] {
		return false
	}
	if strings.HasPrefix(n, "#") || strings.HasPrefix(n, "//") || strings.HasPrefix(n, "/*") ||
		strings.HasPrefix(n, "*") || strings.HasPrefix(n, "--") {
		return false
	}
	if !o.KeepImports && (strings.HasPrefix(n, "import ") || strings.HasPrefix(n, "from ") && strings.Contains(n, " import ") ||
		strings.HasPrefix(n, "#include") || strings.HasPrefix(n, "using ")) {
		return false
	}
	hasWord := false
	for _, r := range n {
		if isWord(r) {
			hasWord = true
			break
		}
	}
	return hasWord
}
func refCodeLike(l string) bool {
	t := strings.TrimSpace(l)
	return t != "" && (hasCodePunct(t) || strings.HasSuffix(t, ":") || hasCodeKeyword(t)) && !refProseLike(t)
}
func refProseLike(t string) bool {
	words, fields := 0, 0
	for i := 0; i < len(t); {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i == len(t) {
			break
		}
		start := i
		for i < len(t) && t[i] != ' ' && t[i] != '\t' {
			i++
		}
		fields++
		f := strings.TrimRight(t[start:i], ".,;:!?")
		plain := f != ""
		for _, r := range f {
			if !unicode.IsLetter(r) && r != '\'' && r != '-' {
				plain = false
				break
			}
		}
		if plain {
			words++
		}
	}
	return words >= 6 && words*10 >= fields*7
}

func TestLineScannersMatchReference(t *testing.T) {
	opts := []LineOptions{DefaultLineOptions, {MinChars: 1}, {MinChars: 6, KeepImports: true}}
	var got, want []byte
	for _, text := range scanTexts(t) {
		for rest := text; ; {
			l, r, ok := strings.Cut(rest, "\n")
			checkLine(t, l, opts, &got, &want)
			if !ok {
				break
			}
			rest = r
		}
	}
	for _, l := range []string{"import os", "from a import b", "from a", "using x;", "#include <x>", "// c", "/* c", "-- c", "* c", "-x = 1",
		"return True", "else:", "@property", "x" + strings.Repeat(" ", 20) + "y", strings.Repeat(" ", 17) + "return   x", "é = 1", "x = 'é'"} {
		checkLine(t, l, opts, &got, &want)
	}
}

func checkLine(t *testing.T, l string, opts []LineOptions, got, want *[]byte) {
	t.Helper()
	*got, *want = normalizeAppend((*got)[:0], l), refNormalizeAppend((*want)[:0], l)
	if string(*got) != string(*want) {
		t.Fatalf("normalizeAppend(%q) = %q, want %q", l, *got, *want)
	}
	// lineHash skips lines shorter than MinChars unnormalised.
	if len(*got) > len(l) {
		t.Fatalf("normalizeAppend(%q) = %q, longer than the line", l, *got)
	}
	for _, n := range []string{l, string(*want)} {
		for _, o := range opts {
			if g, w := o.Keep(n), refKeep(o, n); g != w {
				t.Fatalf("%+v.Keep(%q) = %v, want %v", o, n, g, w)
			}
		}
	}
	if g, w := codeLike(l), refCodeLike(l); g != w {
		t.Fatalf("codeLike(%q) = %v, want %v", l, g, w)
	}
}

// TestCodeTokens lists the code tokens of small texts, the renamed ones
// (user names) marked with '$': what the fingerprints and statements see.
func TestCodeTokens(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"def f(xs):\n    return sum(xs)  # total", "def $f ( $xs ) : return sum ( $xs )"},
		{"x = a.append(1_000) ** 2", "$x = $a . append ( 1_000 ) ** 2"},
		{"s = r'a\\d+' + \"q\"", "$s = r'a\\d+' + \"q\""},
		{"total = a + \\\n    b", "$total = $a + $b"},
		{"def g():\n    \"\"\"Doc.\"\"\"\n    return 'it''s'", "def $g ( ) : return 'it' 's'"},
		{"if n >= 3 and n != 4: pass", "if $n >= 3 and $n != 4 : pass"},
		{"`code` and prose", "$code and $prose"},
	} {
		toks := codeTokens(c.text, nil)
		var got []string
		for _, tk := range toks {
			w := c.text[tk.start:tk.end]
			if tk.norm == hIdent {
				w = "$" + w
			}
			got = append(got, w)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("codeTokens(%q) = %s, want %s", c.text, g, c.want)
		}
	}
	// Equal values are equal tokens: quote style, prefixes and digit
	// separators do not matter.
	a, b := codeTokens(`x = 'ab' + 1000`, nil), codeTokens(`x = "ab" + 1_000`, nil)
	for i := range a {
		if a[i].exact != b[i].exact {
			t.Errorf("token %d: %q and %q hash apart", i, "x = 'ab' + 1000", `x = "ab" + 1_000`)
		}
	}
}

// TestFusedScanMatchesSeparate holds the one-pass scan of code and word
// tokens to the two scans it replaced.
func TestFusedScanMatchesSeparate(t *testing.T) {
	// Statements longer than maxStmtTokens, which are cut where no mark
	// is: one long line, and an unclosed bracket over many lines.
	long := []string{
		strings.Repeat("a b ", 500),
		"x = (" + strings.Repeat("y,\n", 900) + ")\nz = 1",
		strings.Repeat("if a: b; c = [1,\n", 150) + strings.Repeat("d ", 450) + "\n\n" + strings.Repeat("e.f(", 420),
	}
	for _, text := range append(scanTexts(t), long...) {
		checkCodeTokens(t, text)
	}
}

// checkCodeTokens holds the fused scan (code and word tokens in one
// pass) to codeTokens and the rune-at-a-time word reference. codeTokens
// itself is held to golden tokens (codetok tests) and to the sweeps.
func checkCodeTokens(t *testing.T, text string) {
	t.Helper()
	want := codeTokens(text, nil)
	// The fused scan gives both token lists, appended after what the
	// buffers hold.
	pre, preWords := []ctok{{start: 1}}, []span{{start: 2}}
	marks := tokMarks{names: []int32{-1}, lits: []int32{-2}}
	code, words := codeAndWordTokens(text, pre, preWords, &marks)
	if !slices.Equal(code[1:], want) || code[0] != pre[0] {
		t.Fatalf("codeAndWordTokens(%q) code tokens:\n got %v\nwant %v", text, code[1:], want)
	}
	// The marks it finds on the way are the statement stage's own
	// definitions (positions from the text's first token).
	if wantNames := bindableNames(text, want, []int32{-1}); !slices.Equal(marks.names, wantNames) {
		t.Fatalf("codeAndWordTokens(%q) bindable names:\n got %v\nwant %v", text, marks.names, wantNames)
	}
	if wantLits := literalTokens(text, want, []int32{-2}); !slices.Equal(marks.lits, wantLits) {
		t.Fatalf("codeAndWordTokens(%q) literals:\n got %v\nwant %v", text, marks.lits, wantLits)
	}
	if wantBinds := bindingTokens(want, nil); !slices.Equal(marks.binds, wantBinds) {
		t.Fatalf("codeAndWordTokens(%q) binding tokens:\n got %v\nwant %v", text, marks.binds, wantBinds)
	}
	cuts := statementCuts(text, want, nil)
	if !slices.Equal(marks.cuts, cuts) {
		t.Fatalf("codeAndWordTokens(%q) statement cuts:\n got %v\nwant %v", text, marks.cuts, cuts)
	}
	if got, want := statements(text, want, cuts, nil), refStatements(text, want); !slices.Equal(got, want) {
		t.Fatalf("statements(%q):\n got %v\nwant %v", text, got, want)
	}
	if wantWords := refAppendTokens(nil, text); !slices.Equal(words[1:], wantWords) || words[0] != preWords[0] {
		t.Fatalf("codeAndWordTokens(%q) words:\n got %v\nwant %v", text, words[1:], wantWords)
	}
}

// refStatements is the statement cutter read token by token, as it was
// before it was given the cuts (statementCuts): the reference statements
// is held to.
func refStatements(text string, toks []ctok) []stmt {
	var out []stmt
	depth, start, header := 0, 0, false
	flush := func(end int) {
		if end > start {
			out = append(out, stmt{t0: int32(start), t1: int32(end)})
		}
		start, depth, header = end, 0, false
	}
	for i := range toks {
		t := &toks[i]
		if i > start {
			if brk, blank := lineBreak(text, int(toks[i-1].end), int(t.start)); brk && (depth == 0 || blank) {
				flush(i)
			}
			if i-start >= maxStmtTokens {
				flush(i)
			}
		}
		if i == start {
			header = blockWords.has(t.exact)
		}
		switch {
		case t.exact == hLParen || t.exact == hLBrack || t.exact == hLBrace:
			depth++
		case t.exact == hRParen || t.exact == hRBrack || t.exact == hRBrace:
			depth = max(0, depth-1)
		case depth == 0 && t.exact == hSemi:
			flush(i + 1)
		case depth == 0 && header && t.exact == hColon:
			flush(i + 1)
		}
	}
	flush(len(toks))
	return out
}
