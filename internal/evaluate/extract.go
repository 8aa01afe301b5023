package evaluate

import (
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
)

// Extraction says how the code was taken from an answer.
const (
	ExtractBlock     = "block"     // a closed code block defining the entry point
	ExtractFirst     = "first"     // no block defines it: the first code block
	ExtractBody      = "body"      // HumanEval: the answer is the function's body, appended to the prompt
	ExtractWhole     = "whole"     // no code block: the whole answer
	ExtractCanonical = "canonical" // the canonical solution (--model canonical)
)

// defines reports whether code defines name at any indentation as a
// function or class (a method named like the entry point also counts, which
// is what LeetCode-style entry points need).
func defines(code, name string) bool {
	if name == "" {
		return false
	}
	re := regexp.MustCompile(`(?m)^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+` + regexp.QuoteMeta(name) + `\b`)
	return re.MatchString(code)
}

// Extract takes the candidate code out of a model answer: the first
// complete (closed) Python or unlabelled code block that defines entry,
// else the first such block of any kind, else the whole answer. Import lines
// from other blocks are kept (models often put them in a block of their
// own), and the result is sanitised (see Sanitize).
func Extract(answer, entry string) (code, how string) {
	var blocks []parse.Block
	for _, b := range parse.CodeBlocks(answer) {
		if (b.Lang == "python" || b.Lang == "") && strings.TrimSpace(b.Code) != "" {
			blocks = append(blocks, b)
		}
	}
	pick := -1
	for i, b := range blocks {
		if !b.Unclosed && defines(b.Code, entry) {
			pick, how = i, ExtractBlock
			break
		}
	}
	if pick < 0 {
		for i, b := range blocks {
			if defines(b.Code, entry) { // an answer cut by max_tokens: better than nothing
				pick, how = i, ExtractBlock
				break
			}
		}
	}
	if pick < 0 && len(blocks) > 0 {
		pick, how = 0, ExtractFirst
	}
	if pick < 0 {
		return Sanitize(strings.TrimSpace(answer) + "\n"), ExtractWhole
	}
	code = blocks[pick].Code
	var imports []string
	have := map[string]bool{}
	for _, c := range chunks(code) {
		if c.kind == chunkImport {
			have[strings.TrimSpace(c.text)] = true
		}
	}
	for i, b := range blocks {
		if i == pick {
			continue
		}
		for _, c := range chunks(b.Code) {
			t := strings.TrimSpace(c.text)
			if c.kind == chunkImport && !have[t] {
				have[t] = true
				imports = append(imports, t)
			}
		}
	}
	if len(imports) > 0 {
		code = strings.Join(imports, "\n") + "\n" + code
	}
	return Sanitize(code), how
}

// HumanEvalProgram makes the program to judge for a HumanEval-style
// problem from the extracted code. When the code defines the entry point,
// the prompt's imports and helper definitions that the code does not define
// itself go first (HumanEval/32's poly, HumanEval/38's encode_cyclic); when
// it does not, the code is the function's body and is appended to the
// prompt, indented if the model wrote it flush left.
func HumanEvalProgram(prompt, entry, code string) (string, bool) {
	if defines(code, entry) {
		var pre []string
		for _, c := range chunks(prompt) {
			switch {
			case c.kind == chunkImport:
				pre = append(pre, strings.TrimRight(c.text, "\n"))
			case c.kind == chunkDef && c.name != entry && !defines(code, c.name):
				pre = append(pre, strings.TrimRight(c.text, "\n"))
			}
		}
		if len(pre) == 0 {
			return code, false
		}
		return strings.Join(pre, "\n") + "\n\n\n" + code, false
	}
	body := strings.TrimRight(code, "\n")
	if !startsIndented(body) {
		lines := strings.Split(body, "\n")
		for i, l := range lines {
			if strings.TrimSpace(l) != "" {
				lines[i] = "    " + l
			}
		}
		body = strings.Join(lines, "\n")
	}
	if !strings.HasSuffix(prompt, "\n") {
		prompt += "\n"
	}
	return prompt + body + "\n", true
}

func startsIndented(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		return l[0] == ' ' || l[0] == '\t'
	}
	return false
}

// Sanitize drops top-level statements that only demonstrate or test the
// code and would run (and may fail or block) when it loads: `if __name__ ==
// "__main__":` blocks, assert statements, print(...) calls and statements
// reading input(). Imports, definitions, assignments and everything else are
// kept verbatim.
func Sanitize(code string) string {
	var b strings.Builder
	for _, c := range chunks(code) {
		if c.kind == chunkDemo {
			continue
		}
		b.WriteString(c.text)
	}
	out := strings.TrimRight(b.String(), "\n \t")
	if out == "" {
		return ""
	}
	return out + "\n"
}

type chunkKind int

const (
	chunkOther chunkKind = iota
	chunkImport
	chunkDef  // def, async def, class, with its decorators
	chunkDemo // a top-level statement Sanitize drops
)

type chunk struct {
	kind chunkKind
	name string // for chunkDef
	text string // the statement's lines, newline-terminated
}

var (
	reDefName  = regexp.MustCompile(`^(?:@[^\n]*\n(?:[ \t]*\n|[ \t]*#[^\n]*\n|@[^\n]*\n)*)?(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)`)
	reMainGate = regexp.MustCompile(`^if[ \t(]+__name__[ \t]*==`)
	reDemoCall = regexp.MustCompile(`^(?:print|pprint)[ \t]*\(`)
	reInput    = regexp.MustCompile(`(?:^|[^\w.])input[ \t]*\(`)
)

// chunks splits Python source into top-level statements (with their
// indented bodies, continuation lines and following blank or comment lines),
// tracking strings, brackets and backslash continuations so a line inside a
// triple-quoted string or an open bracket never starts a statement.
func chunks(src string) []chunk {
	lines := strings.SplitAfter(src, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out []chunk
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		text := strings.Join(cur, "")
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		out = append(out, classify(text))
		cur = nil
	}
	var st lexState
	pendingDecorator := false
	for _, line := range lines {
		clean := st.clean()
		trimmed := strings.TrimLeft(line, " \t")
		startsTop := clean && len(line) > 0 && line[0] != ' ' && line[0] != '\t' &&
			strings.TrimSpace(line) != "" && !strings.HasPrefix(trimmed, "#") && !isClauseContinuation(trimmed)
		if startsTop && !pendingDecorator {
			flush()
		}
		if startsTop {
			pendingDecorator = strings.HasPrefix(trimmed, "@")
		}
		cur = append(cur, line)
		st.scan(line)
	}
	flush()
	return out
}

// isClauseContinuation: else/elif/except/finally at column 0 continue the
// compound statement before them.
func isClauseContinuation(t string) bool {
	for _, kw := range []string{"else", "elif", "except", "finally", "case"} {
		if strings.HasPrefix(t, kw) {
			rest := t[len(kw):]
			if rest == "" || rest[0] == ':' || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '(' || rest[0] == '*' {
				return kw != "case"
			}
		}
	}
	return false
}

func classify(text string) chunk {
	t := strings.TrimLeft(text, " \t")
	c := chunk{text: text}
	switch {
	case strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "from ") && strings.Contains(firstLine(t), " import "):
		c.kind = chunkImport
	case reDefName.MatchString(t):
		c.kind = chunkDef
		c.name = reDefName.FindStringSubmatch(t)[1]
	case reMainGate.MatchString(t),
		strings.HasPrefix(t, "assert ") || strings.HasPrefix(t, "assert("),
		reDemoCall.MatchString(t),
		reInput.MatchString(t):
		c.kind = chunkDemo
	}
	return c
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// lexState is what carries from one line to the next: an open string
// (its quote, when triple-quoted), the bracket depth and a backslash.
type lexState struct {
	triple   string // `"""` or `'''` while inside a triple-quoted string
	depth    int
	backlash bool
}

func (s *lexState) clean() bool { return s.triple == "" && s.depth <= 0 && !s.backlash }

func (s *lexState) scan(line string) {
	s.backlash = false
	i := 0
	for i < len(line) {
		if s.triple != "" {
			j := strings.Index(line[i:], s.triple)
			k := strings.IndexByte(line[i:], '\\')
			if k >= 0 && (j < 0 || k < j) {
				i += k + 2
				continue
			}
			if j < 0 {
				return
			}
			i += j + 3
			s.triple = ""
			continue
		}
		ch := line[i]
		switch {
		case ch == '#':
			return
		case ch == '"' || ch == '\'':
			q := string(ch)
			if strings.HasPrefix(line[i:], q+q+q) {
				s.triple = q + q + q
				i += 3
				continue
			}
			i++
			for i < len(line) && line[i] != ch && line[i] != '\n' {
				if line[i] == '\\' {
					i++
				}
				i++
			}
			i++
			continue
		case ch == '(' || ch == '[' || ch == '{':
			s.depth++
		case ch == ')' || ch == ']' || ch == '}':
			s.depth--
		case ch == '\\' && strings.TrimRight(line[i+1:], "\r\n") == "":
			s.backlash = true
			return
		}
		i++
	}
}
