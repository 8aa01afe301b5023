package leak

import (
	"slices"
	"strings"
	"testing"
)

// TestMessageCodeTokens holds messageCodeTokens to the whole-text scan:
// without a fenced block it is codeAndWordTokens; with blocks its code
// tokens and marks are those of the text with everything outside the
// blocks (from each opening fence line to the block's end) blanked, line
// breaks kept, and its words those of the whole text.
func TestMessageCodeTokens(t *testing.T) {
	texts := append(scanTexts(t),
		"Use x = f(a) here.\n```python\ny = g(b)\n```\nthen z = h(c)",
		"```\nunclosed = '''doc\n```\nprose after, x = 1\n```py\nz = 2\n",
		"a.\n```\n.b = 1\n```\ntext\n```python\nreturn -1\n```\n\n```\narr = [3, 1]\n```",
		"~~~ruby\nputs 1\n~~~\nand `inline(code)` in prose",
		"```\n```\nempty block, then prose",
	)
	fenced, crossing := 0, 0
	for _, text := range texts {
		pre, preWords := []ctok{{start: 1}}, []span{{start: 2}}
		marks := tokMarks{names: []int32{-1}, lits: []int32{-2}}
		code, words := messageCodeTokens(text, pre, preWords, &marks)
		if code[0] != pre[0] || words[0] != preWords[0] {
			t.Fatalf("messageCodeTokens(%q) changed what the buffers held", text)
		}
		if want := refAppendTokens(nil, text); !slices.Equal(words[1:], want) {
			t.Fatalf("messageCodeTokens(%q) words:\n got %v\nwant %v", text, words[1:], want)
		}
		ref, bodies := blankOutsideBlocks(text)
		if len(bodies) > 0 {
			fenced++
		}
		var wantMarks tokMarks
		want, _ := codeAndWordTokens(ref, nil, nil, &wantMarks)
		// Only a triple-quoted string can run past a block's end (a
		// single-quoted one ends at the line's end, and a block ends at
		// one), where messageCodeTokens cuts it: skip those texts.
		if slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, "'''") || strings.Contains(b, `"""`) }) {
			crossing++
			continue
		}
		if !slices.Equal(code[1:], want) {
			t.Fatalf("messageCodeTokens(%q) code tokens:\n got %v\nwant %v", text, code[1:], want)
		}
		for _, c := range []struct {
			name      string
			got, want []int32
		}{{"names", marks.names[1:], wantMarks.names}, {"lits", marks.lits[1:], wantMarks.lits}, {"cuts", marks.cuts, wantMarks.cuts}, {"binds", marks.binds, wantMarks.binds}} {
			if !slices.Equal(c.got, c.want) {
				t.Fatalf("messageCodeTokens(%q) marks %s:\n got %v\nwant %v", text, c.name, c.got, c.want)
			}
		}
	}
	if fenced-crossing < 1000 {
		t.Errorf("got %d texts with blocks compared (%d skipped: a triple quote in a block), want at least 1,000", fenced-crossing, crossing)
	}
	t.Logf("%d texts, %d with blocks, %d skipped (a triple quote in a block)", len(texts), fenced, crossing)
}

// TestMessageCodeTokensCases pins what is read as code.
func TestMessageCodeTokensCases(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"x = f(a)", "x = f ( a )"},
		{"Use x = f(a) here.\n```python\ny = g(b)\n```\nthen z = h(c)", "python y = g ( b )"},
		{"a.\n```\n.b = 1\n```\nthen\n```py\nc\n", ". b = 1 py c"},
		{"```\nunclosed = 'x\n```\ny = 1", "unclosed = 'x"},
	} {
		code, _ := messageCodeTokens(c.text, nil, nil, nil)
		var got []string
		for _, tk := range code {
			got = append(got, c.text[tk.start:tk.end])
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("messageCodeTokens(%q) = %q, want %q", c.text, g, c.want)
		}
	}
}

// blankOutsideBlocks returns text with every byte outside the fenced
// blocks (each from its opening fence line to the end of its body) a
// space, line breaks kept, and the blocks (opening fence line and body).
func blankOutsideBlocks(text string) (string, []string) {
	b := []byte(text)
	keep := make([]bool, len(text))
	var bodies []string
	for f := (fenceScanner{text: text}); ; {
		body, ok := f.next()
		if !ok {
			break
		}
		for i := f.open; i < f.at+len(body); i++ {
			keep[i] = true
		}
		bodies = append(bodies, text[f.open:f.at+len(body)])
	}
	if len(bodies) == 0 {
		return text, nil
	}
	for i := range b {
		if !keep[i] && b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b), bodies
}

// TestIdentCacheChangesNothing holds the scan with a worker's identifier
// cache (identCache) to the scan without one, over every scan text with
// one cache (so identifiers met before are hits, and slots are
// overwritten),
// and identifiers at the cache's length limits: code tokens, words and
// marks.
func TestIdentCacheChangesNothing(t *testing.T) {
	texts := scanTexts(t)
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24} {
		id := strings.Repeat("aZ_9", 6)[:n]
		texts = append(texts, id, id+" ", "x = "+id+"\n", id+"é = 1", id+"日本 + 1\n  ", "r"+id+"'s'", id[:min(n, 2)]+"'s'  ", "def "+id+"(a):\n    return "+id+".x\n")
	}
	ids := new(identCache)
	read := 0 // texts with an identifier the cache reads
	for _, text := range texts {
		var m0, m1 tokMarks
		f := appendFences(text, nil)
		want, wantWords := fencedCodeTokens(text, f, nil, nil, &m0, nil)
		got, gotWords := fencedCodeTokens(text, f, nil, nil, &m1, ids)
		if !slices.Equal(got, want) || !slices.Equal(gotWords, wantWords) {
			t.Fatalf("fencedCodeTokens(%q) with the cache:\n got %v %v\nwant %v %v", text, got, gotWords, want, wantWords)
		}
		for _, c := range [][2][]int32{{m1.names, m0.names}, {m1.lits, m0.lits}, {m1.cuts, m0.cuts}, {m1.binds, m0.binds}} {
			if !slices.Equal(c[0], c[1]) {
				t.Fatalf("fencedCodeTokens(%q) marks with the cache: got %v, want %v", text, c[0], c[1])
			}
		}
		for i := 0; i+8 <= len(text); i++ {
			if end, h, _, _, ok := ids.ident(text, i); ok && h == fpHash(text[i:end]) {
				read++
				break
			}
		}
	}
	if read < 1000 {
		t.Errorf("only %d texts have an identifier the cache reads, want at least 1,000", read)
	}
}

// TestNumberHashFastPath holds numberHash's digits-only path and table
// to the general hash (otherNumberHash) on every one-byte text and on
// numbers of every shape the scanner reads.
func TestNumberHashFastPath(t *testing.T) {
	nums := []string{"00", "10", "42", "007", "1234567890", "99999999999999999999", "1_000", "0x1F", "0X1f", "1e9", "1E9", "3.14", "2j", "1_0.5e-3"}
	for c := range 256 {
		nums = append(nums, string([]byte{byte(c)}), "1"+string([]byte{byte(c)}))
	}
	for _, s := range nums {
		if got, want := numberHash(s), otherNumberHash(s); got != want {
			t.Errorf("numberHash(%q) = %x, want %x", s, got, want)
		}
	}
	if numberHash("1_000") != numberHash("1000") || numberHash("0X1F") != numberHash("0x1f") {
		t.Error("digit separators or capitals change a number's hash")
	}
}
