package leetcode

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/strlit"
	"github.com/codefeedback/codefeedback/schema"
)

// Gates of the alternatives mode (issue 16): an alternative solution must
// differ from the first after normalising, state its complexity, and be
// executed and judged in its own language.

// Reasons an alternatives dialogue is rejected (label "rejected").
const (
	RejectSame         = "same_as_first"     // the optimal code equals the brute force after normalising
	RejectNoComplexity = "no_complexity"     // an answer states no O(...) complexity
	RejectUnjudged     = "language_unjudged" // no other-language turn could be judged
	RejectLangFailed   = "language_failed"   // an other-language solution failed its tests
)

var (
	reLineComment  = regexp.MustCompile(`(?m)(#|//).*$`)
	reBlockComment = regexp.MustCompile(`(?s)/\*.*?\*/|"""(?:.*?)"""|'''(?:.*?)'''`)
	reSpace        = regexp.MustCompile(`\s+`)
	reComplexity   = regexp.MustCompile(`O\(\s*[^()\s][^()]*(?:\([^()]*\))?[^()]*\)`)
)

// normalizeCode drops comments, docstrings and all whitespace, so two
// solutions that differ only there compare equal. (A "#" or "//" inside a
// string literal is dropped too; this errs towards calling code the same.)
func normalizeCode(code string) string {
	code = reBlockComment.ReplaceAllString(code, "")
	code = reLineComment.ReplaceAllString(code, "")
	return reSpace.ReplaceAllString(code, "")
}

// statesComplexity reports whether text names a complexity in big-O form.
func statesComplexity(text string) bool { return reComplexity.MatchString(text) }

// turnAnswers splits a dialogue at its user turns and returns, for each
// user turn, the last assistant message with a code block before the next
// user turn (the loop closes a turn with a message without code).
func turnAnswers(msgs []schema.Message) []schema.Message {
	var out []schema.Message
	var last *schema.Message
	for i := range msgs {
		switch msgs[i].Role {
		case schema.RoleUser:
			if last != nil {
				out = append(out, *last)
			}
			last = nil
		case schema.RoleAssistant:
			if strings.Contains(msgs[i].Content, "```") {
				last = &msgs[i]
			}
		}
	}
	if last != nil {
		out = append(out, *last)
	}
	return out
}

var (
	reAssertCall = regexp.MustCompile(`^\s*assert\s+candidate\((.*)\)\s*==\s*(.+?)\s*$`)
)

// leetcodeAssert is one `assert candidate(...) == want` of a check block:
// its arguments as written (name "" when positional) and the expected value.
type leetcodeAssert struct {
	args [][2]string
	want string
}

var reKwName = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*=\s*`)

// leetcodeAsserts collects the simple asserts of p's check blocks.
func leetcodeAsserts(p schema.Problem) []leetcodeAssert {
	var out []leetcodeAssert
	for _, t := range p.Tests {
		for _, line := range strings.Split(t, "\n") {
			m := reAssertCall.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			a := leetcodeAssert{want: strings.TrimSpace(m[2])}
			for _, arg := range splitArgs(m[1]) {
				name := ""
				if km := reKwName.FindStringSubmatch(arg); km != nil && !strings.HasPrefix(arg[len(km[0]):], "=") {
					name, arg = km[1], arg[len(km[0]):]
				}
				a.args = append(a.args, [2]string{name, strings.TrimSpace(arg)})
			}
			out = append(out, a)
		}
	}
	return out
}

// translateTests turns a LeetCode check(candidate) block's simple asserts
// (`assert candidate(a = [1, 2], b = 3) == [0, 1]`) into asserts in lang
// calling method: JavaScript and TypeScript as is (on new Solution() when
// code declares that class), Java, C++, Go and Rust with literals of the
// types the candidate's signature declares (translate.go). Asserts it
// cannot translate (tuples, helpers such as list_node, sorted(...), values
// that do not fit the types) are left out; none translated means the turn
// cannot be judged.
func translateTests(p schema.Problem, lang executors.Language, code string) []string {
	method := p.EntryPoint
	if i := strings.LastIndexByte(method, '.'); i >= 0 {
		method = method[i+1:]
	}
	if method == "" {
		return nil
	}
	var out []string
	switch lang {
	case executors.JavaScript, executors.TypeScript:
		call := method
		if regexp.MustCompile(`\bclass\s+Solution\b`).MatchString(code) {
			call = "new Solution()." + method
		}
		for _, a := range leetcodeAsserts(p) {
			var args []string
			ok := true
			for _, arg := range a.args {
				js, good := pyLiteralToJS(arg[1])
				if !good {
					ok = false
					break
				}
				args = append(args, js)
			}
			want, good := pyLiteralToJS(a.want)
			if !ok || !good {
				continue
			}
			out = append(out, "assert.deepStrictEqual("+call+"("+strings.Join(args, ", ")+"), "+want+");")
		}
	case executors.Java, executors.CPP, executors.Go, executors.Rust:
		name := method
		if lang == executors.Rust {
			name = snakeCase(method)
		}
		params, result, ok := signature(lang, code, name)
		if !ok {
			return nil
		}
		for _, a := range leetcodeAsserts(p) {
			if t, ok := typedTest(lang, method, params, result, a.args, a.want); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// splitArgs splits an argument or parameter list at its top-level commas;
// a blank last part (no arguments, or a trailing comma) is dropped.
func splitArgs(s string) []string {
	parts := strlit.SplitTop(s, ",")
	if strings.TrimSpace(parts[len(parts)-1]) == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// pyLiteralToJS converts a Python literal of numbers, strings, booleans,
// None, lists and dicts to JavaScript; anything else (calls, tuples,
// names) fails.
func pyLiteralToJS(s string) (string, bool) {
	var b strings.Builder
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			lit, end, ok := pyString(s, i)
			if !ok {
				return "", false
			}
			enc, _ := json.Marshal(lit)
			b.Write(enc)
			i = end
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			switch s[i:j] {
			case "True":
				b.WriteString("true")
			case "False":
				b.WriteString("false")
			case "None":
				b.WriteString("null")
			default:
				if j > i && i > 0 && (s[i-1] >= '0' && s[i-1] <= '9' || s[i-1] == '.') && (s[i:j] == "e" || strings.HasPrefix(s[i:j], "e")) {
					b.WriteString(s[i:j]) // an exponent: 1e9
				} else {
					return "", false
				}
			}
			i = j
		case strings.ContainsRune("0123456789.-+[]{}:, \t\n", rune(c)):
			b.WriteByte(c)
			i++
		default:
			return "", false
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}
