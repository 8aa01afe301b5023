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

func refAppendTokens(buf []span, text string) []span {
	var low []byte
	i := 0
	for i < len(text) {
		c := text[i]
		if !wordByte[c] {
			if c < utf8.RuneSelf {
				i++
				continue
			}
			if r, sz := utf8.DecodeRuneInString(text[i:]); !isWord(r) {
				i += sz
				continue
			}
		}
		start := i
		for i < len(text) && wordByte[text[i]] {
			i++
		}
		if i == len(text) || text[i] < utf8.RuneSelf {
			buf = append(buf, span{start: int32(start), end: int32(i), hash: wordHash(text, start, i)})
			continue
		}
		ascii := true
		for i < len(text) {
			c := text[i]
			if c >= utf8.RuneSelf {
				r, sz := utf8.DecodeRuneInString(text[i:])
				if !isWord(r) {
					break
				}
				ascii = false
				i += sz
				continue
			}
			if !asciiWord[c] {
				break
			}
			i++
		}
		if ascii { // an ASCII word followed by a non-ASCII separator
			buf = append(buf, span{start: int32(start), end: int32(i), hash: wordHash(text, start, i)})
			continue
		}
		// Not ASCII: never equal to an ASCII word, so its own hash.
		low = appendLower(low[:0], text[start:i])
		h := tokSeed
		for _, c := range low {
			h = (h ^ uint64(c)) * fnvPrime
		}
		buf = append(buf, span{start: int32(start), end: int32(i), hash: fmix64(h)})
	}
	return buf
}
func refNormalizeAppend(dst []byte, s string) []byte {
	// The output is never longer than s: grow once, then write by index
	// (an append per byte was most of the line pass's time).
	dst = slices.Grow(dst, len(s))
	out := dst[len(dst) : len(dst)+len(s)]
	o := 0
	var prevWord, pendingSpace, started bool
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= utf8.RuneSelf {
			break
		}
		if asciiSpace[c] {
			pendingSpace = started
			i++
			continue
		}
		word := asciiWord[c]
		if pendingSpace && prevWord && word {
			out[o] = ' '
			o++
		}
		out[o] = c
		o++
		pendingSpace, prevWord, started = false, word, true
		i++
	}
	dst = dst[:len(dst)+o]
	// The rest of a line with non-ASCII text, rune by rune.
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				pendingSpace = started
				i++
				continue
			}
			word := asciiWord[c]
			if pendingSpace && prevWord && word {
				dst = append(dst, ' ')
			}
			dst = append(dst, c)
			pendingSpace, prevWord, started = false, word, true
			i++
			continue
		}
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
func refCodeTokens(text string, buf []ctok) []ctok {
	n := len(text)
	base := len(buf)
	prevDot := false
	for i := 0; i < n; {
		c := text[i]
		switch codeClass[c] {
		case cSpace:
			i++
			continue
		case cHash:
			for i < n && text[i] != '\n' {
				i++
			}
			continue
		case cIdent:
			start := i
			// fpHash, computed while scanning.
			h := uint64(14695981039346656037)
			for i < n && identChar[text[i]] {
				h = (h ^ uint64(text[i])) * 1099511628211
				i++
			}
			// A string prefix: r"...", b'...', f"...", rb'...'.
			if i < n && codeClass[text[i]] == cQuote && i-start <= 2 && isStrPrefix(text[start:i]) {
				end := skipString(text, i)
				buf = append(buf, ctok{start: int32(start), end: int32(end), exact: stringHash(text, i, end), norm: 0})
				buf[len(buf)-1].norm = buf[len(buf)-1].exact
				i = end
				prevDot = false
				continue
			}
			h = fmix64(h)
			nh := h
			if !prevDot && !keepSet.has(h) {
				nh = hIdent
			}
			buf = append(buf, ctok{start: int32(start), end: int32(i), exact: h, norm: nh})
			prevDot = false
			continue
		case cDigit:
			start := i
			for i < n && (codeClass[text[i]] == cIdent || codeClass[text[i]] == cDigit || text[i] == '.' && i+1 < n && codeClass[text[i+1]] == cDigit) {
				i++
			}
			h := numberHash(text[start:i])
			buf = append(buf, ctok{start: int32(start), end: int32(i), exact: h, norm: h})
			prevDot = false
			continue
		case cQuote:
			end := skipString(text, i)
			if end-i >= 6 && text[i+1] == c && text[i+2] == c && (len(buf) == base || buf[len(buf)-1].exact == hColon) {
				// A docstring (a triple-quoted string after a header's
				// ':' or first in the text) is prose, not code: the
				// tasks' solutions are indexed without theirs, and a copy
				// with it must give the same k-grams.
				i = end
				prevDot = false
				continue
			}
			h := stringHash(text, i, end)
			buf = append(buf, ctok{start: int32(i), end: int32(end), exact: h, norm: h})
			i = end
			prevDot = false
			continue
		}
		// A line continuation: a backslash, then only blanks to the line's end.
		if c == '\\' {
			rest, _, _ := strings.Cut(text[i+1:], "\n")
			if strings.Trim(rest, " \t\r") == "" {
				i += 1 + len(rest)
				continue
			}
		}
		// Operators and punctuation.
		start := i
		if i+1 < n && twoCharOps[c][text[i+1]] {
			i += 2
		} else {
			i++
		}
		h := opHash[c]
		if i-start == 2 {
			h = fpHash(text[start:i])
		}
		buf = append(buf, ctok{start: int32(start), end: int32(i), exact: h, norm: h})
		prevDot = c == '.' && i-start == 1
	}
	return buf
}

func TestCodeTokensMatchReference(t *testing.T) {
	for _, text := range scanTexts(t) {
		checkCodeTokens(t, text)
	}
}

func checkCodeTokens(t *testing.T, text string) {
	t.Helper()
	want := refCodeTokens(text, nil)
	if got := codeTokens(text, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("codeTokens(%q):\n got %v\nwant %v", text, got, want)
	}
	// The fused scan gives both token lists, appended after what the
	// buffers hold.
	pre, preWords := []ctok{{start: 1}}, []span{{start: 2}}
	code, words := codeAndWordTokens(text, pre, preWords)
	if !slices.Equal(code[1:], want) || code[0] != pre[0] {
		t.Fatalf("codeAndWordTokens(%q) code tokens:\n got %v\nwant %v", text, code[1:], want)
	}
	if wantWords := refAppendTokens(nil, text); !slices.Equal(words[1:], wantWords) || words[0] != preWords[0] {
		t.Fatalf("codeAndWordTokens(%q) words:\n got %v\nwant %v", text, words[1:], wantWords)
	}
}
