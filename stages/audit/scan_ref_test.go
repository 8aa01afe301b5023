package audit

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
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
		"(", ")", ":", ".", ",", "==", "'", "\"", "\"\"\"", "'''", "#", "`", "```", "~", "@", "[", "{", "\x7f",
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
		_ = utf8.ValidString(text)
	})
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
