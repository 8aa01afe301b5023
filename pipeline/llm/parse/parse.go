// Package parse reads what models actually answer: scores in free text,
// JSON wrapped in fences or prose, fenced code blocks by language, refusals
// and empty answers. Every function is pure and safe for concurrent use; on
// failure they return one of the sentinel errors below so a caller (e.g.
// llm.ChatParse) can ask the model to repair its answer.
package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/internal/strlit"
)

// Sentinel errors; returned errors wrap them.
var (
	ErrEmpty   = errors.New("empty answer")
	ErrRefusal = errors.New("the model refused")
	ErrNoScore = errors.New("no score found")
	ErrNoJSON  = errors.New("no JSON found")
	ErrNoCode  = errors.New("no code block found")
)

// Check returns ErrEmpty or ErrRefusal when the answer is one, nil otherwise.
func Check(text string) error {
	switch {
	case IsEmpty(text):
		return ErrEmpty
	case IsRefusal(text):
		return ErrRefusal
	}
	return nil
}

var emptyish = strings.NewReplacer("`", "", "\"", "", "'", "", "{}", "", "[]", "", "null", "", "None", "", ".", "")

// IsEmpty reports whether text carries nothing: blank, or only fences,
// quotes, "{}", "[]" or "null".
func IsEmpty(text string) bool {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			continue // a fence line, with or without a language
		}
		b.WriteString(t)
	}
	return strings.TrimSpace(emptyish.Replace(b.String())) == ""
}

var refusalRe = regexp.MustCompile(`(?i)^\W*(?:(?:i'?m|i am)\s+(?:really\s+|very\s+)?sorry,?\s*(?:but\s+)?|sorry,?\s*(?:but\s+)?|unfortunately,?\s*|as an ai(?: language model)?,?\s*)?` +
	`(?:i|we)\s*(?:can(?:no|')t|cannot|am unable to|am not able to|'m unable to|'m not able to|won'?t|will not|must decline to|do not feel comfortable)\s*` +
	`(?:help|assist|provide|comply|do|fulfil|fulfill|complete|write|create|generate|answer|support|engage|continue)`)

var sorryRe = regexp.MustCompile(`(?i)^\W*(?:i'?m|i am)\s+sorry,?\s*(?:but\s+)?(?:i|that|this)\b.{0,40}\b(?:can(?:no|')t|cannot|unable|not able|won'?t|not allowed|against)`)

// IsRefusal reports whether the answer opens with a refusal ("I'm sorry,
// but I can't help with that", "As an AI language model, I cannot ...").
// Apologies followed by an answer ("I'm sorry for the confusion, here is
// the fix") and answers holding a code block are not refusals.
func IsRefusal(text string) bool {
	t := strings.TrimSpace(text)
	if strings.Contains(t, "```") {
		return false
	}
	head := t
	if len(head) > 300 {
		head = head[:300]
	}
	return refusalRe.MatchString(head) || sorryRe.MatchString(head)
}

// ---- scores ----

const numPat = `(\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten)`

var (
	// "on a scale of 1 to 5", "from 1-10": range descriptions, not scores.
	rangeRe  = regexp.MustCompile(`(?i)(?:scale|range)\s*(?:of|from)?\s*\d+\s*(?:to|-|–)\s*\d+|from\s+\d+\s*(?:to|-|–)\s*\d+|\(\s*\d+\s*(?:-|–|to)\s*\d+\s*\)`)
	scoreRes = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bfinal\s+(?:score|rating|answer|grade|verdict)\b[^0-9a-z\n]{0,12}(?:is\s+|of\s+|=\s*)?(?:an?\s+)?` + numPat + `\b`),
		regexp.MustCompile(`(?i)\b(?:score|rating|rated|difficulty|grade|complexity|quality|helpfulness|correctness)\b[^0-9a-z\n]{0,12}(?:is\s+|of\s+|would be\s+|=\s*)?(?:an?\s+)?` + numPat + `\b`),
		regexp.MustCompile(`(?i)\b(?:rate|give|assign|award)\s+(?:this|it|the \w+|them)?\s*(?:an?\s+|as\s+(?:an?\s+)?)?` + numPat + `\b`),
		regexp.MustCompile(`(?i)(?:^|[^\d.])` + `(\d+(?:\.\d+)?)\s*(?:/|out of)\s*(\d+)\b`),
		regexp.MustCompile(`\*\*\s*(\d+(?:\.\d+)?)\s*\*\*`),
		regexp.MustCompile(`(?m)^\W{0,3}(\d+(?:\.\d+)?)\s*(?:$|[-–—:.)]\s|/)`),
	}
)

var wordNums = map[string]float64{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}

func toNum(s string) (float64, bool) {
	if v, ok := wordNums[strings.ToLower(s)]; ok {
		return v, true
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// Score extracts an integer score in [lo, hi] from a free-text answer:
// "Score: 4", "**4**", "4/5", "4 out of 5", "Difficulty: 5 - because...",
// "I'd rate this a 3", "Final score: four", or an answer that is just "4".
// Labelled forms win over bare numbers; a "final score" wins over the
// first one; "scale of 1 to 5" is not read as a score; a fraction counts
// only when its denominator is hi; decimals are rounded to the nearest
// integer. Numbers out of range are skipped. It returns ErrNoScore (or
// ErrEmpty/ErrRefusal) when nothing fits.
func Score(text string, lo, hi int) (int, error) {
	if err := Check(text); err != nil {
		return 0, err
	}
	clean := rangeRe.ReplaceAllString(stripCode(text), " ")
	for i, re := range scoreRes {
		for _, m := range re.FindAllStringSubmatch(clean, -1) {
			if i == 3 { // fraction: the denominator must be the top of the scale
				if d, _ := strconv.Atoi(m[2]); d != hi {
					continue
				}
			}
			v, ok := toNum(m[1])
			if !ok {
				continue
			}
			n := int(math.Round(v))
			if n >= lo && n <= hi {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("%w in [%d, %d]", ErrNoScore, lo, hi)
}

// stripCode drops fenced code blocks, whose numbers are not scores.
func stripCode(text string) string {
	if !strings.Contains(text, "```") {
		return text
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ---- JSON ----

// JSON decodes the first JSON value in text that decodes into v: the whole
// text, then fenced blocks (```json first), then any balanced {...} or
// [...] inside prose. Trailing commas, a common model slip, are tolerated.
// It returns an error wrapping ErrNoJSON (or ErrEmpty/ErrRefusal).
func JSON(text string, v any) error {
	if err := Check(text); err != nil {
		return err
	}
	var last error
	try := func(s string) bool {
		s = strings.TrimSpace(s)
		if s == "" {
			return false
		}
		err := json.Unmarshal([]byte(s), v)
		if err != nil {
			if fixed, ok := dropTrailingCommas(s); ok {
				err = json.Unmarshal([]byte(fixed), v)
			}
		}
		if err != nil {
			last = err
		}
		return err == nil
	}
	if try(text) {
		return nil
	}
	blocks := CodeBlocks(text)
	for _, pass := range []func(Block) bool{
		func(b Block) bool { return b.Lang == "json" },
		func(b Block) bool { return b.Lang != "json" },
	} {
		for _, b := range blocks {
			if pass(b) && try(b.Code) {
				return nil
			}
		}
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '{' && text[i] != '[' {
			continue
		}
		if end := balanced(text, i); end > i && try(text[i:end]) {
			return nil
		}
	}
	if last != nil {
		return fmt.Errorf("%w: %v", ErrNoJSON, last)
	}
	return ErrNoJSON
}

// balanced returns the index just past the bracket matching text[start],
// honouring JSON strings, or -1.
func balanced(text string, start int) int {
	depth := 0
	for i := start; i < len(text); i++ {
		switch text[i] {
		case '"':
			i = strlit.JSONStringEnd(text, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// dropTrailingCommas removes commas directly before } or ] outside strings.
func dropTrailingCommas(s string) (string, bool) {
	var b bytes.Buffer
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' {
			j := strlit.JSONStringEnd(s, i)
			b.WriteString(s[i:j])
			i = j - 1
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				changed = true
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), changed
}

// ---- code blocks ----

// Block is one fenced code block.
type Block struct {
	// Lang is the normalised language of the fence's info string ("python"
	// for py/python3, "bash" for sh/shell/console, "javascript" for js, ...),
	// "" when unlabelled.
	Lang string
	Code string
	// Unclosed is true for a final block whose closing fence is missing,
	// typically an answer cut by max_tokens.
	Unclosed bool
}

var langAliases = map[string]string{
	"py": "python", "python3": "python", "py3": "python", "ipython": "python", "pycon": "python",
	"sh": "bash", "shell": "bash", "console": "bash", "zsh": "bash", "shellscript": "bash",
	"js": "javascript", "node": "javascript", "ts": "typescript",
	"sqlite": "sql", "sqlite3": "sql", "mysql": "sql", "postgresql": "sql", "postgres": "sql", "plsql": "sql",
	"c++": "cpp", "cc": "cpp", "cxx": "cpp", "golang": "go", "rs": "rust", "text": "", "plaintext": "", "txt": "",
}

// NormLang maps a fence info string to a canonical language name.
func NormLang(info string) string {
	f := strings.Fields(strings.ToLower(info))
	if len(f) == 0 {
		return ""
	}
	l := strings.Trim(f[0], "{}.")
	if a, ok := langAliases[l]; ok {
		return a
	}
	return l
}

// CodeBlocks returns the fenced (``` or ~~~) blocks of text in order. Fences
// may be indented (inside list items); the indentation of the opening fence
// is removed from the block's lines.
func CodeBlocks(text string) []Block {
	var out []Block
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " \t")
		fence := ""
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fence = "```"
		case strings.HasPrefix(trimmed, "~~~"):
			fence = "~~~"
		default:
			continue
		}
		indent := len(lines[i]) - len(trimmed)
		info := strings.TrimLeft(trimmed, fence[:1])
		if strings.Contains(info, fence[:1]) { // inline ```code``` on one line
			continue
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			t := strings.TrimSpace(lines[i])
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				closed = true
				break
			}
			l := lines[i]
			if n := min(indent, len(l)-len(strings.TrimLeft(l, " \t"))); n > 0 {
				l = l[n:]
			}
			body = append(body, l)
		}
		out = append(out, Block{Lang: NormLang(info), Code: strings.Join(body, "\n"), Unclosed: !closed})
	}
	return out
}

// Code returns the code of the first block in lang (normalised with
// NormLang), or else of the first unlabelled block. It returns ErrNoCode (or
// ErrEmpty/ErrRefusal) when there is none.
func Code(text, lang string) (string, error) {
	if err := Check(text); err != nil {
		return "", err
	}
	lang = NormLang(lang)
	blocks := CodeBlocks(text)
	for _, b := range blocks {
		if b.Lang == lang && strings.TrimSpace(b.Code) != "" {
			return b.Code, nil
		}
	}
	for _, b := range blocks {
		if b.Lang == "" && strings.TrimSpace(b.Code) != "" {
			return b.Code, nil
		}
	}
	return "", fmt.Errorf("%w for %s", ErrNoCode, lang)
}
