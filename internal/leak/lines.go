package leak

import (
	"encoding/binary"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/codefeedback/codefeedback/schema"
)

// LineOptions decide which code lines count for the line-overlap measure.
type LineOptions struct {
	// MinChars drops normalised lines shorter than this many bytes
	// ("i+=1", "x=0"): such lines occur everywhere and prove nothing.
	MinChars int `json:"min_chars"`
	// KeepImports keeps import lines; by default "import x" and
	// "from x import y" are dropped because they are shared by unrelated code.
	KeepImports bool `json:"keep_imports"`
}

// DefaultLineOptions are the documented defaults: lines of at least 6 bytes
// after normalisation, imports dropped.
var DefaultLineOptions = LineOptions{MinChars: 6}

// trivialLines are normalised lines that carry no evidence of copying.
// Lines made only of punctuation (lone brackets, "});") and comment-only
// lines are dropped by rule in Keep, not listed here.
var trivialLines = map[string]bool{
	"return": true, "else:": true, "pass": true, "try:": true, "finally:": true,
	"except:": true, "break": true, "continue": true, "else": true, "end": true,
	"return True": true, "return False": true, "return None": true,
	"return 0": true, "return 1": true, "return -1": true, "return result": true,
	"return res": true, "return ans": true, "return count": true,
	"except Exception as e:": true, "if __name__==\"__main__\":": true,
	"if __name__=='__main__':": true, "main()": true, "else{": true, "}else{": true,
	"do{": true, "default:": true, "break;": true, "continue;": true, "return;": true,
	"return 0;": true, "@staticmethod": true, "@classmethod": true, "@property": true,
}

// maxTrivialLen is the length of the longest trivial line: longer lines
// skip the map lookup.
var maxTrivialLen = func() int {
	m := 0
	for l := range trivialLines {
		m = max(m, len(l))
	}
	return m
}()

// NormalizeLine canonicalises the whitespace of one code line: leading and
// trailing space is removed, and inner runs of space are removed entirely
// except between two word characters (letters, digits, '_'), where they become
// one space. So "x = a+b" and "x=a + b" both give "x=a+b", while
// "return x" stays "return x".
func NormalizeLine(s string) string {
	return string(normalizeAppend(nil, s))
}

// normalizeAppend appends NormalizeLine(s) to dst without allocating when
// dst has room.
func normalizeAppend(dst []byte, s string) []byte {
	// The output is never longer than s: grow once (and 8 bytes more, as
	// runs are stored eight bytes at a time), then write by index.
	dst = slices.Grow(dst, len(s)+8)
	out := dst[len(dst) : len(dst)+len(s)+8]
	o := 0
	var prevWord, pendingSpace, started bool
	i := 0
	n := len(s)
	// ASCII text eight bytes at a time: the run of non-space bytes up to
	// the first space is copied at once, and a run of spaces skipped.
	for i+8 <= n {
		v := load64(s, i)
		if v&hi8 != 0 {
			break
		}
		sp := spaceMask(v)
		k := 8
		if sp != 0 {
			k = firstByte(sp)
		}
		if k > 0 {
			if pendingSpace && prevWord && asciiWord[byte(v)] {
				out[o] = ' '
				o++
			}
			binary.LittleEndian.PutUint64(out[o:o+8], v)
			o += k
			prevWord, pendingSpace, started = asciiWord[byte(v>>(8*(k-1)))], false, true
			i += k
			if k == 8 {
				continue
			}
		}
		// Spaces from s[i]: skip to the chunk's next non-space byte.
		pendingSpace = started
		if rest := ^sp & hi8 &^ (1<<(8*k+8) - 1); rest != 0 {
			i += firstByte(rest) - k
		} else {
			i += 8 - k
		}
	}
	for i < n {
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
	for i < n {
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

var asciiSpace = func() (t [utf8.RuneSelf]bool) {
	for _, c := range " \t\r\n\v\f" {
		t[c] = true
	}
	return t
}()

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Keep reports whether a normalised line counts as a code line: it is not
// blank, not trivial, not punctuation only, not a comment, long enough, and
// not an import unless imports are kept.
func (o LineOptions) Keep(n string) bool {
	if len(n) < o.MinChars || n == "" {
		return false
	}
	if len(n) <= maxTrivialLen && trivialFirst[n[0]] && trivialLines[n] {
		return false
	}
	switch n[0] {
	case '#', '*':
		return false
	case '/':
		if strings.HasPrefix(n, "//") || strings.HasPrefix(n, "/*") {
			return false
		}
	case '-':
		if strings.HasPrefix(n, "--") {
			return false
		}
	case 'i', 'f', 'u':
		if !o.KeepImports && (strings.HasPrefix(n, "import ") || strings.HasPrefix(n, "from ") && strings.Contains(n, " import ") ||
			strings.HasPrefix(n, "using ")) {
			return false
		}
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c >= utf8.RuneSelf {
			for _, r := range n[i:] {
				if isWord(r) {
					return true
				}
			}
			return false
		} else if asciiWord[c] {
			return true
		}
	}
	return false
}

// trivialFirst marks the first bytes of the trivial lines: most lines
// skip the map lookup.
var trivialFirst = func() (t [256]bool) {
	for l := range trivialLines {
		t[l[0]] = true
	}
	return t
}()

// CodeLines normalises every line of a code block and returns the ones Keep
// accepts, in order.
func (o LineOptions) CodeLines(code string) []string {
	var out []string
	var buf []byte
	for rest := code; rest != ""; {
		var l string
		l, rest = nextLine(rest)
		buf = normalizeAppend(buf[:0], l)
		if n := unsafe.String(unsafe.SliceData(buf), len(buf)); o.Keep(n) {
			out = append(out, string(buf))
		}
	}
	return out
}

// codeLineHashes appends the hashes of a block's kept code lines to out,
// reusing buf; the allocation-free twin of CodeLines for the hot path.
func (o LineOptions) codeLineHashes(code string, buf []byte, out []uint64) ([]uint64, []byte) {
	for rest := code; rest != ""; {
		var l string
		l, rest = nextLine(rest)
		out, buf = o.lineHash(l, buf, out)
	}
	return out, buf
}

// nextLine cuts the first logical line off code: a line ending in a
// backslash continues on the next (Python), and the two are one line,
// the backslash and line break read as a space.
func nextLine(code string) (line, rest string) {
	line, rest, _ = strings.Cut(code, "\n")
	if rest == "" || !continued(line) {
		return line, rest
	}
	t := strings.TrimRight(line, " \t\r")
	var b strings.Builder
	for {
		b.WriteString(strings.TrimSuffix(t, "\\"))
		b.WriteByte(' ')
		line, rest, _ = strings.Cut(rest, "\n")
		t = strings.TrimRight(line, " \t\r")
		if !strings.HasSuffix(t, "\\") || rest == "" {
			b.WriteString(line)
			return b.String(), rest
		}
	}
}

// continued reports whether line ends in a backslash, trailing spaces,
// tabs and carriage returns aside: strings.TrimRight's generic set costs
// more than the rest of a line's work, and nearly every line ends
// otherwise.
func continued(line string) bool {
	for i := len(line) - 1; i >= 0; i-- {
		switch line[i] {
		case ' ', '\t', '\r':
		case '\\':
			return true
		default:
			return false
		}
	}
	return false
}

// FencedBlocks returns the bodies of the Markdown fenced code blocks (``` or
// ~~~, three or more, optionally followed by a language tag) in text, in
// order. An unclosed fence runs to the end of the text, as Markdown renders it.
func FencedBlocks(text string) []string {
	var blocks []string
	for f := (fenceScanner{text: text}); ; {
		body, ok := f.next()
		if !ok {
			return blocks
		}
		blocks = append(blocks, body)
	}
}

// fenceScanner finds the fenced blocks of a text one at a time, for
// FencedBlocks and for the check, which hashes each block's lines without
// building the list.
type fenceScanner struct {
	text string
	pos  int // start of the next line
	// open and at are where the last block's opening fence line and its
	// body start in text.
	open, at int
}

// next returns the body of the next fenced block, or ok false when there
// is none. A fence line holds '`' or '~' (a block's closing line, its own
// fence character), so next jumps from one such byte to the next
// (IndexByte is vectorised) and reads only their lines, not every line.
func (f *fenceScanner) next() (body string, ok bool) {
	text, pos := f.text, f.pos
	tilde := -2 // the next '~' at or after pos: -2 not looked for yet, -1 none
	for pos < len(text) {
		c := strings.IndexByte(text[pos:], '`')
		if c >= 0 {
			c += pos
		}
		// '~' is rare: look for it again only once pos has passed it.
		if tilde != -1 && tilde < pos {
			if tilde = strings.IndexByte(text[pos:], '~'); tilde >= 0 {
				tilde += pos
			}
		}
		if tilde >= 0 && (c < 0 || tilde < c) {
			c = tilde
		}
		if c < 0 {
			break
		}
		start, end, next := lineAround(text, pos, c)
		pos = next
		fence := fenceOf(strings.TrimSpace(text[start:end]))
		if fence == "" {
			continue
		}
		bodyStart := pos
		f.open, f.at = start, bodyStart
		for {
			c := strings.IndexByte(text[pos:], fence[0])
			if c < 0 {
				f.pos = len(text)
				return text[bodyStart:], bodyStart < len(text)
			}
			start, end, next := lineAround(text, pos, pos+c)
			pos = next
			if t := strings.TrimSpace(text[start:end]); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				f.pos = pos
				return strings.TrimSuffix(text[bodyStart:start], "\n"), true
			}
		}
	}
	f.pos = len(text)
	return "", false
}

// fence is one fenced block of a text: its opening fence line starts at
// open, its body is text[at:end].
type fence struct{ open, at, end int }

// appendFences appends the fenced blocks of text to out, in order.
func appendFences(text string, out []fence) []fence {
	for f := (fenceScanner{text: text}); ; {
		body, ok := f.next()
		if !ok {
			return out
		}
		out = append(out, fence{open: f.open, at: f.at, end: f.at + len(body)})
	}
}

// lineAround returns the bounds of the line of text holding byte c, which
// lies at or after from, a line start, and the start of the line after it.
func lineAround(text string, from, c int) (start, end, next int) {
	start = from + strings.LastIndexByte(text[from:c], '\n') + 1
	if end = strings.IndexByte(text[c:], '\n'); end < 0 {
		return start, len(text), len(text)
	}
	return start, c + end, c + end + 1
}

// fenceOf returns the fence run ("```", "~~~~") that opens a code block on
// trimmed line t, or "".
func fenceOf(t string) string {
	if len(t) < 3 {
		return ""
	}
	c := t[0]
	if c != '`' && c != '~' {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return ""
	}
	// A backtick fence's info string may not contain backticks (CommonMark).
	if c == '`' && strings.ContainsRune(t[n:], '`') {
		return ""
	}
	return t[:n]
}

// DialogueCode returns the code blocks of a dialogue: the fenced blocks of
// user and assistant turns; for a turn without fences, the code of its
// execution record if it has one (so the same code is not counted twice),
// else the turn's code-like lines (codeLikeLines), since code is often
// pasted without fences.
// Execution turns hold program output, not code, and are skipped.
func DialogueCode(d *schema.Dialogue) []string {
	var blocks []string
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.Role != schema.RoleUser && m.Role != schema.RoleAssistant {
			continue
		}
		fb := FencedBlocks(m.Content)
		if len(fb) == 0 {
			if m.Exec != nil && m.Exec.Code != "" {
				fb = append(fb, m.Exec.Code)
			} else if c := codeLikeLines(m.Content); c != "" {
				fb = append(fb, c)
			}
		}
		blocks = append(blocks, fb...)
	}
	return blocks
}

// codeLikeLines returns the lines of an unfenced turn that look like code
// (brackets, '=', ';', a trailing ':', or a leading keyword), so prose
// does not count as code lines in the corpus ratio.
func codeLikeLines(text string) string {
	var b strings.Builder
	for rest := text; rest != ""; {
		var l string
		l, rest = nextLine(rest)
		if codeLike(l) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// codeLike reports whether one line of an unfenced turn looks like code.
func codeLike(l string) bool {
	t := strings.TrimSpace(l)
	return t != "" && (hasCodePunct(t) || strings.HasSuffix(t, ":") || hasCodeKeyword(t)) && !proseLike(t)
}

// dialogueLines fills s.lh with the hashes of the kept code lines of
// DialogueCode(d), block after block, s.wh with the hashes of their
// w-line windows inside a block and s.blockStart with each window's first
// line, without building DialogueCode's list of blocks.
func (o LineOptions) dialogueLines(d *schema.Dialogue, w int, s *scratch) {
	s.lh, s.wh, s.blockStart = s.lh[:0], s.wh[:0], s.blockStart[:0]
	for i := range d.Messages {
		if m := &d.Messages[i]; m.Role == schema.RoleUser || m.Role == schema.RoleAssistant {
			o.messageLines(m, w, s)
		}
	}
}

// messageLines appends to s.lh, s.wh and s.blockStart what dialogueLines
// does for one user or assistant turn m.
func (o LineOptions) messageLines(m *schema.Message, w int, s *scratch) {
	o.fencedMessageLines(m, appendFences(m.Content, nil), w, s)
}

// fencedMessageLines is messageLines with m's blocks found already
// (appendFences).
func (o LineOptions) fencedMessageLines(m *schema.Message, fences []fence, w int, s *scratch) {
	first := len(s.lh)
	endBlock := func() {
		before := len(s.wh)
		s.wh = rollingHashes(s.lh[first:], w, s.wh)
		for i := before; i < len(s.wh); i++ {
			s.blockStart = append(s.blockStart, first+i-before)
		}
		first = len(s.lh)
	}
	if o.blockLines(m.Content, fences, s, endBlock) {
		return
	}
	if m.Exec != nil && m.Exec.Code != "" {
		s.lh, s.nbuf = o.codeLineHashes(m.Exec.Code, s.nbuf, s.lh)
		endBlock()
		return
	}
	// The code-like lines of the turn are one block.
	for rest := m.Content; rest != ""; {
		var l string
		l, rest = nextLine(rest)
		if codeLike(l) {
			s.lh, s.nbuf = o.lineHash(l, s.nbuf, s.lh)
		}
	}
	endBlock()
}

// fencedLines hashes the lines of each fenced block of text and calls
// endBlock after each block. It reports whether text had a block.
func (o LineOptions) fencedLines(text string, s *scratch, endBlock func()) bool {
	return o.blockLines(text, appendFences(text, nil), s, endBlock)
}

// blockLines is fencedLines with text's blocks found already.
func (o LineOptions) blockLines(text string, fences []fence, s *scratch, endBlock func()) bool {
	for _, f := range fences {
		s.lh, s.nbuf = o.codeLineHashes(text[f.at:f.end], s.nbuf, s.lh)
		endBlock()
	}
	return len(fences) > 0
}

// lineHash appends the hash of line l to out when Keep accepts its
// normalised form, reusing buf.
func (o LineOptions) lineHash(l string, buf []byte, out []uint64) ([]uint64, []byte) {
	if len(l) < o.MinChars {
		// Normalising never lengthens a line: too short for Keep already
		// (blank lines, lone brackets).
		return out, buf
	}
	// A comment line (most often '#'): the normalised line starts with
	// the first byte after the leading white space, which Keep rejects
	// ('#' and '*'), so it is not normalised.
	for i := 0; i < len(l); i++ {
		if c := l[i]; !asciiSpace[c&0x7F] || c >= utf8.RuneSelf {
			if c == '#' || c == '*' {
				return out, buf
			}
			break
		}
	}
	buf = normalizeAppend(buf[:0], l)
	// The view is only read before buf is next written.
	if n := unsafe.String(unsafe.SliceData(buf), len(buf)); o.Keep(n) {
		out = append(out, hashString(n))
	}
	return out, buf
}

// codePunct marks the bytes that make a line look like code.
var codePunct = func() (t [256]bool) {
	for _, c := range []byte("=()[]{};") {
		t[c] = true
	}
	return t
}()

func hasCodePunct(t string) bool {
	for i := 0; i < len(t); i++ {
		if codePunct[t[i]] {
			return true
		}
	}
	return false
}

func hasCodeKeyword(t string) bool {
	// Most lines start with no keyword's first byte.
	if !keywordFirst[t[0]] {
		return false
	}
	for _, k := range [...]string{"def ", "return ", "class ", "import ", "from ", "for ", "while ", "if ", "elif ", "else", "assert ", "print", "yield ", "raise "} {
		if strings.HasPrefix(t, k) {
			return true
		}
	}
	return false
}

// keywordFirst marks the first bytes of hasCodeKeyword's keywords.
var keywordFirst = func() (t [256]bool) {
	for _, c := range []byte("drcifwepya") {
		t[c] = true
	}
	return t
}()

// proseLike reports a line that is mostly plain words: six or more, and at
// least 70% of its space-separated fields letters only (with trailing
// punctuation), as a sentence is and code rarely is.
//
// An ASCII line is read in one pass, each byte classed once (proseClass);
// a line with other bytes as proseLikeRunes reads it.
func proseLike(t string) bool {
	words, fields := 0, 0
	for i := 0; i < len(t); {
		if c := proseClass[t[i]]; c == pSpace {
			i++
			continue
		}
		// A field: plain if it has a plain byte and every byte is plain
		// but a trailing run of punctuation.
		fields++
		core, bad, punct := false, false, false
		for ; i < len(t); i++ {
			switch proseClass[t[i]] {
			case pPlain:
				bad, core, punct = bad || punct, true, false
				continue
			case pPunct:
				punct = true
				continue
			case pOther:
				bad = true
				continue
			case pNonASCII:
				return proseLikeRunes(t)
			}
			break // pSpace
		}
		if core && !bad {
			words++
		}
	}
	return words >= 6 && words*10 >= fields*7
}

// Byte classes of proseLike.
const (
	pPlain    = iota // plainByte
	pPunct           // trailingPunct
	pSpace           // ' ', '\t': separates fields
	pOther           // any other ASCII byte
	pNonASCII        // from 0x80
)

var proseClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = pNonASCII
		case c == ' ' || c == '\t':
			t[c] = pSpace
		case plainByte[c]:
			t[c] = pPlain
		case trailingPunct[c]:
			t[c] = pPunct
		default:
			t[c] = pOther
		}
	}
	return t
}()

// proseLikeRunes is proseLike for any line: fields, their trailing
// punctuation trimmed, tested by plainWord.
func proseLikeRunes(t string) bool {
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
		end := i
		for end > start && trailingPunct[t[end-1]] {
			end--
		}
		if plainWord(t[start:end]) {
			words++
		}
	}
	return words >= 6 && words*10 >= fields*7
}

// trailingPunct are the bytes proseLike trims from the end of a field.
var trailingPunct = func() (t [256]bool) {
	for _, c := range []byte(".,;:!?") {
		t[c] = true
	}
	return t
}()

// plainByte marks the ASCII bytes of a plain word: letters, apostrophe, hyphen.
var plainByte = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '\'' || c == '-'
	}
	return t
}()

// plainWord reports a non-empty field of letters, apostrophes and hyphens.
func plainWord(f string) bool {
	if f == "" {
		return false
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c >= utf8.RuneSelf {
			for _, r := range f[i:] {
				if !unicode.IsLetter(r) && r != '\'' && r != '-' {
					return false
				}
			}
			return true
		}
		if !plainByte[c] {
			return false
		}
	}
	return true
}
