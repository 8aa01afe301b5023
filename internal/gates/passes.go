package gates

import (
	"regexp"
	"strings"
)

// A writer often sums up its code as "one pass over the input" whatever
// the code does. Said of a function that calls itself, nests loops or
// runs several loops one after the other, the sentence teaches a false
// account of the code's cost.

// onePassRe: prose that says the code goes over its input once.
var onePassRe = regexp.MustCompile(`(?i)\b((in|with|makes?|making|takes?|does|using|uses) (a |one )?(single|one) pass|(one|single)[- ]pass\b|(works?|goes|going|walks?|runs?|iterates?|loops?|reads?|scans?) (through|over) (its|the|each|every) (input|list|array|sequence|string|elements?|items?|values?)s? (just )?once|(traverses|visits|reads|scans) (its|the) (input|list|array|sequence|string) (just )?once|only once over)\b`)

// ClaimsOnePass returns the first sentence of text's prose (outside code
// blocks) that says the code goes over its input once, or "".
func ClaimsOnePass(text string) string {
	for _, s := range proseSentences(text) {
		if onePassRe.MatchString(s) {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

var (
	pyLoopRe = regexp.MustCompile(`^(\s*)(?:async\s+)?(for|while)\b.*:\s*$`)
	// compLoopRe: the "for x in" of a comprehension or generator (on a
	// line that is not a for statement).
	compLoopRe = regexp.MustCompile(`\bfor\s+[\w\s,()]+?\s+in\b`)
	defLineRe  = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(`)
)

// Passes describes how Python code goes over its input: whether a
// function calls itself (Recursive), the deepest nesting of loops,
// comprehensions counted (Depth), and the number of loops and
// comprehensions outside any other in one function (Loops, the most of
// any function).
type Passes struct {
	Recursive bool
	Depth     int
	Loops     int
}

// More reports whether the code makes more than one pass: it recurses,
// nests loops or runs two loops or more.
func (p Passes) More() bool { return p.Recursive || p.Depth > 1 || p.Loops > 1 }

// CountPasses reads code's functions (comments, docstrings and code at
// the top level left out: a demonstration call or a test block is not the
// algorithm).
func CountPasses(code string) Passes {
	var p Passes
	fn, fnIndent, top := "", -1, 0 // top: the loops outside others in fn
	var calls *regexp.Regexp       // a call of fn
	var loops []int                // the indentation of each open loop statement
	for _, l := range strings.Split(NormalizeCode(StripDocstrings(code)), "\n") {
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if m := defLineRe.FindStringSubmatch(l); m != nil && (fn == "" || indent <= fnIndent) {
			fn, fnIndent, loops, top = m[2], indent, nil, 0
			calls = regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\s*\(`)
			continue
		}
		if fn == "" || indent <= fnIndent {
			fn, fnIndent, loops = "", -1, nil
			continue
		}
		for len(loops) > 0 && indent <= loops[len(loops)-1] {
			loops = loops[:len(loops)-1]
		}
		if calls.MatchString(l) {
			p.Recursive = true
		}
		stmt := pyLoopRe.MatchString(l)
		comps := len(compLoopRe.FindAllString(l, -1))
		if stmt {
			comps = max(0, comps-1) // a for statement's own "for x in"
		}
		depth := len(loops) + comps
		if stmt {
			depth++
		}
		if len(loops) == 0 && (stmt || comps > 0) {
			top++
			p.Loops = max(p.Loops, top)
		}
		p.Depth = max(p.Depth, depth)
		if stmt {
			loops = append(loops, indent)
		}
	}
	return p
}

// FalseOnePass returns the sentence of text that says code goes over its
// input once when code makes more than one pass (CountPasses), or "".
func FalseOnePass(text, code string) string {
	s := ClaimsOnePass(text)
	if s == "" || !CountPasses(code).More() {
		return ""
	}
	return s
}
