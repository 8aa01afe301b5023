package llmtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// The persona writes no new algorithm for a request about a condition's
// layout, older Python versions, memory, recomputed values or speed on
// larger inputs. It keeps the code and says why, in the request's terms,
// from what the code shows: a reason it can check in the code is stated
// as a fact, otherwise it says plainly that it kept the algorithm the
// checks confirmed.

var (
	loopRe      = regexp.MustCompile(`^(\s*)(for|while)\b`)
	compForRe   = regexp.MustCompile(`[\[({][^\[\](){}]*\bfor\b`)
	condRe      = regexp.MustCompile(`^\s*(?:if|elif|while)\s+(.+?):\s*(?:#.*)?$`)
	collectRe   = regexp.MustCompile(`\[[^\]]*\bfor\b|\{[^}]*\bfor\b|\.append\(|\.extend\(|\b(list|dict|set|sorted|zip|reversed)\(|\[[^\]\[]*:[^\]]*\]|\]\s*\*|\*\s*\[|\.split\(|\.items\(\)|\bdefaultdict\(|\bCounter\(`)
	scanRe      = regexp.MustCompile(`\.(count|index|remove|insert)\(|\bnot in\b|[^r]\s+in\s+\w+\s*(?:[:)\]]|$)`)
	modernPyRe  = regexp.MustCompile(`\b[fF][rR]?["']|:=|^\s*match\s+.+:\s*$|\bmath\.(prod|isqrt|comb|perm|lcm|dist)\b|\.remove(prefix|suffix)\(|\bfunctools\.cache\b|\bbreakpoint\(`)
	keepTopicRe = regexp.MustCompile(`layout|condition|older python|python versions|memory|recomput|quickly|faster|larger inputs`)
)

// codeFacts is what keepAnswer reads from a function's code.
type codeFacts struct {
	depth      int    // deepest nesting of loops, comprehensions included
	recursive  bool   // the function calls itself
	collects   bool   // it builds a list, set, dict or slice from its input
	collection string // the first line that does
	scans      bool   // a loop body searches a sequence (in, count, index)
	cond       string // the longest condition of an if, elif or while
	conds      int
	modern     bool     // syntax or library calls newer than Python 3.5
	loops      int      // loops and comprehensions one after another, none inside another
	whiles     bool     // one of them is a while loop
	library    []string // built-in and library functions it calls that go over a collection
}

// ownLines returns the lines of fn's body in code, normalized (no
// comments, blank lines or docstrings), and whether code defines fn; when
// it does not, every line. A companion function, a print of an example or
// a block of tests around fn says nothing of fn.
func ownLines(code, fn string) (lines []string, defined bool) {
	all := strings.Split(normalize(code), "\n")
	if !defines(code, fn) {
		return all, false
	}
	in := false
	for _, l := range all {
		switch {
		case strings.HasPrefix(l, "def "):
			in = isDef(l, fn)
			continue
		case !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t"):
			in = false
		}
		if in {
			lines = append(lines, l)
		}
	}
	return lines, true
}

// isDef reports whether line starts the top-level definition of fn
// ("def f(", "def f (").
func isDef(line, fn string) bool {
	rest, ok := strings.CutPrefix(line, "def "+fn)
	return ok && strings.HasPrefix(strings.TrimLeft(rest, " "), "(")
}

// defines reports whether code defines fn at the top level.
func defines(code, fn string) bool {
	for _, l := range strings.Split(code, "\n") {
		if isDef(l, fn) {
			return true
		}
	}
	return false
}

func readFacts(code, fn string) codeFacts {
	var f codeFacts
	for _, l := range strings.Split(code, "\n") {
		f.modern = f.modern || modernPyRe.MatchString(l)
	}
	lines, defined := ownLines(code, fn)
	var loops []int // the indentation of each open loop
	for _, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		if defined && strings.Contains(l, fn+"(") {
			f.recursive = true
		}
		for len(loops) > 0 && indent <= loops[len(loops)-1] {
			loops = loops[:len(loops)-1]
		}
		comps := len(compForRe.FindAllString(l, -1))
		if loopRe.MatchString(l) {
			loops = append(loops, indent)
		} else if len(loops) > 0 && scanRe.MatchString(l) {
			f.scans = true
		}
		f.depth = max(f.depth, len(loops)+comps)
		if m := condRe.FindStringSubmatch(l); m != nil {
			f.conds++
			if len(m[1]) > len(f.cond) {
				f.cond = m[1]
			}
		}
		if strings.HasPrefix(strings.TrimSpace(l), "while ") {
			f.whiles = true
		}
		for _, m := range libCallRe.FindAllStringSubmatch(l, -1) {
			if !slices.Contains(f.library, "`"+m[1]+"`") && len(f.library) < 3 {
				f.library = append(f.library, "`"+m[1]+"`")
			}
		}
		if collectRe.MatchString(l) && !f.collects {
			f.collects, f.collection = true, l
		}
	}
	// A search of a set or dict the code builds is no scan: the
	// product's cost reads it so, and the persona's reasons must agree.
	f.scans = f.scans && gates.ScansInLoop(code)
	// The passes as the product's check counts them: comprehensions
	// that hold calls or brackets are loops too.
	if defined {
		p := gates.CountPasses("def " + fn + "():\n" + strings.Join(lines, "\n"))
		f.depth, f.loops = max(f.depth, p.Depth), p.Loops
		f.recursive = f.recursive || p.Recursive
	}
	return f
}

// libCallRe: a built-in or library function that goes over a collection
// in C.
var libCallRe = regexp.MustCompile(`\b((?:re\.)?(?:sorted|sum|max|min|set|list|tuple|dict|map|zip|filter|any|all|join|split|findall|finditer|sub|search|match|fullmatch|intersection|union|Counter|nlargest|nsmallest|heapify|merge|count|index|reverse|sort))\(`)

// keepAnswer is the persona's reply to such a request (low: the request
// in lower case, without the function's name), with the code unchanged;
// ok is false for a request of another kind. declines is the
// DeclinesMemory misbehaviour: the code is kept whatever its memory.
func keepAnswer(low, code, name, fn string, declines bool) (string, bool) {
	if !keepTopicRe.MatchString(low) {
		return "", false
	}
	f := readFacts(code, fn)
	if strings.Contains(low, "memory") || strings.Contains(low, "lighter") {
		// Less memory with the same algorithm, where the lines allow it,
		// answers "faster or lighter on memory" too.
		if out, how, ok := lessMemory(code, fn); ok && !declines {
			return memoryAnswer(name, how, code, out), true
		}
	}
	kept := func(what string) string {
		return fmt.Sprintf("I leave %s unchanged because %s would need a different algorithm from the one the checks have confirmed, and I would rather not trade that for it. If it matters for your inputs, tell me their size and I will look for one.", name, what)
	}
	var text string
	switch {
	case strings.Contains(low, "layout") || strings.Contains(low, "condition"):
		switch {
		case f.conds == 0:
			text = fmt.Sprintf("No change is needed for the layout: %s has no condition to lay out, since it computes its result without branching.", name)
		case len(f.cond) <= 60 && strings.Count(f.cond, " and ")+strings.Count(f.cond, " or ") <= 1:
			text = fmt.Sprintf("No change is needed for the layout of the condition: `%s` fits on one line and reads left to right, so splitting it would not make it clearer.", f.cond)
		default:
			if split, ok := splitCondition(code, f.cond); ok {
				return fmt.Sprintf("I laid out the longest condition in %s over several lines, one clause per line, so each test reads on its own. The logic is the same, so the results do not change.", name) +
					"\n\n" + block(split) + "\n\nThe run below checks that the earlier checks still pass.", true
			}
			text = kept("a clearer layout of its longest condition")
		}
	case strings.Contains(low, "older python") || strings.Contains(low, "python versions"):
		if f.modern {
			return "", false
		}
		text = fmt.Sprintf("No change is needed for older Python versions: %s uses no f-strings, no assignment expressions (`:=`), no `match` statement and none of the newer `math` helpers, so everything it uses exists in Python 3.5.", name)
	case strings.Contains(low, "recomput"):
		if out, call, v, ok := storeRepeated(code, fn); ok {
			return fmt.Sprintf("%s computed `%s` twice on every pass of its loop. It now computes it at the top of the loop's body into `%s` and uses that name wherever the loop needed the value, so the results do not change.", name, call, v) +
				"\n\n" + block(out) + "\n\nThe run below checks that the earlier checks still pass.", true
		}
		if out, ok := countOnce(code, fn); ok {
			return fmt.Sprintf("%s counted the occurrences of a value again for every element that holds it, with a loop inside its loop. It now counts every value once, before the loop, with `Counter`, and looks each count up, so no count is computed twice, and the result is the same.", name) +
				"\n\n" + block(out) + "\n\nThe run below checks that the earlier checks still pass.", true
		}
		own, _ := ownLines(code, fn)
		switch call := gates.RepeatedCall("def " + fn + "():\n" + strings.Join(own, "\n")); {
		case call != "":
			text = fmt.Sprintf("I leave %s unchanged, although its loop computes `%s` more than once per pass: the call sits in the loop's condition, and storing it would mean restructuring the loop the checks have confirmed. If that cost matters for your inputs, say so and I will rewrite it.", name, call)
		case f.recursive || f.depth > 1 || f.scans:
			text = kept("avoiding recomputed values")
		default:
			text = fmt.Sprintf("No change is needed to avoid recomputing values: %s has no recursion, no nested loop and no call its loop makes twice per pass, so each value it derives is computed once.", name)
		}
	case strings.Contains(low, "memory") && !strings.Contains(low, "faster"):
		if f.collects || f.recursive {
			what := "the call stack of its recursion"
			if f.collects {
				what = "`" + strings.TrimSpace(f.collection) + "`"
			}
			text = kept("keeping its memory small without " + what)
		} else {
			text = fmt.Sprintf("No change is needed for memory: %s keeps only single values as it goes and builds no list, set or dictionary from its input, so the memory it uses stays small however long the input is.", name)
		}
	default: // faster, quickly on larger inputs
		if out, ok := countOnce(code, fn); ok {
			return fmt.Sprintf("%s counted how often each element occurs with a loop inside its loop, going over the whole list once per element, so its time grew with the square of the list's length. It now counts every value once, before the loop, with `Counter`, and looks each count up: the time grows in step with the list, and every count, so the result, is the same.", name) +
				"\n\n" + block(out) + "\n\nThe run below checks that the earlier checks still pass.", true
		}
		switch {
		case f.recursive || f.depth > 1 || f.scans || f.loops > 1 && f.whiles:
			text = kept("making it faster on much larger inputs")
		case f.depth == 0 && len(f.library) > 0:
			text = fmt.Sprintf("No change is needed for speed on larger inputs: %s has no loop of its own and leaves the work over its input to %s, which Python runs in C; a loop written in Python would be slower, not faster.", name, strings.Join(f.library, ", "))
		case f.loops > 1:
			text = fmt.Sprintf("No change is needed for larger inputs: %s makes %d passes one after another, with no loop inside another and no recursion, so its time still grows in step with the size of its input.", name, f.loops)
		case f.depth == 0:
			text = fmt.Sprintf("No change is needed for speed on larger inputs: %s has no loop and no recursion, so it does the same few steps whatever the size of its input.", name)
		default:
			text = fmt.Sprintf("No change is needed for larger inputs: %s makes a single pass, one loop with no nested loop, recursion or search inside it, so its time grows in step with the size of its input.", name)
		}
	}
	return text + "\n\n" + block(code) + "\n\nThe code is the same as before, so the earlier checks still hold.", true
}

// splitCondition rewrites the if, elif or while line whose condition is
// cond with one clause per line, inside parentheses: `if a > 0 and b > 0:`
// becomes `if (a > 0` and `        and b > 0):`. ok is false when cond has
// no top-level "and" or "or" to split at.
func splitCondition(code, cond string) (string, bool) {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		m := condRe.FindStringSubmatch(l)
		if m == nil || m[1] != cond {
			continue
		}
		clauses, ops := splitTop(cond, func(rest string) int {
			for _, op := range []string{" and ", " or "} {
				if strings.HasPrefix(rest, op) {
					return len(op)
				}
			}
			return 0
		})
		if len(ops) == 0 {
			return "", false
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		kw := strings.Fields(l)[0]
		out := []string{indent + kw + " (" + strings.TrimSpace(clauses[0])}
		for k, op := range ops {
			out = append(out, indent+"        "+strings.TrimSpace(op)+" "+strings.TrimSpace(clauses[k+1]))
		}
		out[len(out)-1] += "):"
		return strings.Join(append(append(append([]string{}, lines[:i]...), out...), lines[i+1:]...), "\n"), true
	}
	return "", false
}

// explainDoc is a docstring that says how fn works, read from its own
// lines: the cases it answers at once, the values it starts from, what
// each loop goes over and updates, the call it makes of itself and what
// it returns, with a word on the library functions it relies on; or, not
// how, only what it returns.
func explainDoc(code, fn string, how bool) string {
	lines, defined := ownLines(code, fn)
	if !defined {
		lines = nil
	}
	var rets []string
	for _, l := range lines {
		if m := returnRe.FindStringSubmatch(l); m != nil && len(rets) < 2 {
			rets = append(rets, "`"+m[1]+"`")
		}
	}
	if !how {
		if len(rets) == 1 {
			// a name returned: say how it is built, where one line does
			for _, l := range lines {
				if m := assignLitRe.FindStringSubmatch(l); m != nil && "`"+m[1]+"`" == rets[0] && !strings.Contains(m[2], m[1]) {
					return fmt.Sprintf("Return %s, built as `%s`.", rets[0], m[2])
				}
			}
		}
		if len(rets) > 0 {
			return "Return " + strings.Join(rets, " or ") + ", the result the task asks for."
		}
		return "Compute the task's result from the arguments."
	}
	if len(lines) == 0 {
		return "Compute the task's result from the arguments."
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	top := indent(lines[0])
	self := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\(`)
	recursive := self.MatchString(strings.Join(lines, "\n"))
	var says, setup []string
	loops, last, guarded := 0, "", false
	var open []int // the indentation of each loop the line is in
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		ind := indent(l)
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		m := condRe.FindStringSubmatch(l)
		r := returnRe.FindStringSubmatch(next)
		switch {
		case m != nil && r != nil && indent(next) > ind && !strings.HasPrefix(strings.TrimSpace(l), "while") && ind == top:
			s := fmt.Sprintf("if `%s`, it returns `%s`", m[1], r[1])
			if strings.HasPrefix(strings.TrimSpace(l), "elif") {
				s = "if instead " + s[3:]
			}
			if loops == 0 && !guarded {
				s += " at once"
			}
			guarded = true
			switch {
			case recursive && self.MatchString(r[1]):
				s += ", calling itself"
			case recursive:
				s += ", the case that ends the recursion"
			}
			says = append(says, s)
			i++
		case ind == top && loops == 0 && assignLitRe.MatchString(l) && len(setup) < 2 && !strings.Contains(l, "=="):
			a := assignLitRe.FindStringSubmatch(l)
			setup = append(setup, fmt.Sprintf("`%s` starts as `%s`", a[1], a[2]))
		case forHeadRe.MatchString(l) || whileRe.MatchString(l):
			loops++
			if loops > 2 {
				continue
			}
			var s string
			if f := forHeadRe.FindStringSubmatch(l); f != nil {
				s = fmt.Sprintf("a loop takes `%s` from `%s`", f[1], f[2])
			} else {
				s = fmt.Sprintf("a loop repeats while `%s`", whileRe.FindStringSubmatch(l)[1])
			}
			for len(open) > 0 && ind <= open[len(open)-1] {
				open = open[:len(open)-1]
			}
			if len(open) > 0 {
				s = "inside it, " + s
			}
			open = append(open, ind)
			// what the loop's own lines (not a nested loop's) update
			var sets []string
			for j := i + 1; j < len(lines) && indent(lines[j]) > ind; j++ {
				if a := updateRe.FindStringSubmatch(lines[j]); a != nil && len(sets) < 2 && !slices.Contains(sets, "`"+a[1]+"`") {
					sets = append(sets, "`"+a[1]+"`")
				}
				if rr := returnRe.FindStringSubmatch(lines[j]); rr != nil && j > 0 {
					if c := condRe.FindStringSubmatch(lines[j-1]); c != nil {
						s += fmt.Sprintf(", returning `%s` as soon as `%s`", rr[1], c[1])
					}
				}
			}
			if len(sets) > 0 {
				s += " and updates " + strings.Join(sets, " and ")
			}
			says = append(says, s)
		case strings.TrimSpace(l) == "else:" && r != nil && indent(next) > ind && ind == top && guarded:
			last = r[1] // "otherwise it returns ..."
			i++
		case returnRe.MatchString(l) && ind == top:
			last = returnRe.FindStringSubmatch(l)[1]
		}
	}
	if len(setup) > 0 {
		says = append([]string{strings.Join(setup, " and ")}, says...)
	}
	if c := selfCall(strings.Join(lines, "\n"), fn); c != "" && !strings.Contains(last, c) && !strings.Contains(strings.Join(says, " "), "calling itself") {
		says = append(says, fmt.Sprintf("it calls itself as `%s`", c))
	}
	if last != "" {
		s := fmt.Sprintf("it returns `%s`", last)
		if guarded {
			s = "otherwise " + s
		}
		if recursive && self.MatchString(last) {
			s += ", calling itself"
		}
		says = append(says, s)
	}
	if notes := libraryNotes(strings.Join(lines, "\n")); notes != "" {
		says = append(says, notes)
	}
	if len(says) == 0 {
		return "Compute the task's result from the arguments."
	}
	for i, s := range says[1:] {
		says[i+1] = strings.ToUpper(s[:1]) + s[1:]
	}
	return "How it works: " + strings.Join(says, ". ") + "."
}

var (
	forHeadRe = regexp.MustCompile(`^\s*for\s+(.+?)\s+in\s+(.+?)\s*:\s*$`)
	whileRe   = regexp.MustCompile(`^\s*while\s+(.+?)\s*:\s*$`)
	returnRe  = regexp.MustCompile(`^\s*return\s+(.+?)[\s;]*$`)
	// updateRe: a statement that sets a name or an element
	updateRe = regexp.MustCompile(`^\s*([A-Za-z_][\w.]*(?:\[[^\]]*\])*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:[-+*/%|&^]|//)?=[^=]`)
)

// selfCall is the text of fn's first call of itself in body, or "".
func selfCall(body, fn string) string {
	i := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\(`).FindStringIndex(body)
	if i == nil {
		return ""
	}
	depth := 0
	for j := i[1] - 1; j < len(body); j++ {
		switch body[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return body[i[0] : j+1]
			}
		case '\n':
			return ""
		}
	}
	return ""
}

// libraries are what the persona says of library functions a body
// calls.
var libraries = []struct{ re, says string }{
	{`\bgcd\(`, "`gcd` is the greatest common divisor"},
	{`\bsqrt\(`, "`sqrt` bounds the search by the square root"},
	{`\bnlargest\(`, "`heapq.nlargest` keeps a heap of the largest values"},
	{`\bnsmallest\(`, "`heapq.nsmallest` keeps a heap of the smallest values"},
	{`\bCounter\(`, "`Counter` counts how often each value occurs"},
	{`\bset\(`, "a `set` keeps each value once"},
	{`\bsorted\(|\.sort\(`, "the sort puts the values in order first"},
	{`\bre\.\w+\(`, "the `re` call matches a regular expression"},
	{`\bzip\(`, "`zip` pairs up the elements by position"},
	{`\bbin\(`, "`bin` gives the binary digits"},
}

// libraryNotes says what the library functions body calls do, at most
// two of them.
func libraryNotes(body string) string {
	var notes []string
	for _, l := range libraries {
		if len(notes) < 2 && regexp.MustCompile(l.re).MatchString(body) {
			notes = append(notes, l.says)
		}
	}
	return strings.Join(notes, "; ")
}

// memoryAnswer says what lessMemory changed (how) and shows the code.
func memoryAnswer(name, how, before, after string) string {
	text := fmt.Sprintf("%s built a list only to reduce it to one value, so I hand the values to the reduction as a generator instead: they are made one at a time and never held together, and the result is the same.", name)
	if how == "iterated" {
		text = fmt.Sprintf("%s built a whole list only to go through it once, so that list is now a generator expression: its values are made one at a time as the loop asks for them, and never held together. The loop sees the same values in the same order, so the results are the same.", name)
	}
	if how == "grid" {
		text = fmt.Sprintf("Each entry of the table in %s is computed from the entries above it, to its left and diagonally above-left, so a row is needed only until the next one is done. One row now does the work of the whole table: it is updated left to right, with the entry above kept in `up` and the diagonal one in `diag` before they are overwritten. The memory grows with one side of the grid instead of its area, and the values computed are the same as before.", name)
	}
	if how == "rolling" {
		var tables []string
		for _, l := range strings.Split(before, "\n") {
			if m := tableDefRe.FindStringSubmatch(l); m != nil {
				tables = append(tables, "`"+m[2]+"`")
			}
		}
		text = fmt.Sprintf("Each step of the loop in %s reads only the two entries before it, so the table%s %s, which grew with the input, can go: two variables per table now roll forward, the last two values, and the memory stays the same however large the input is. The values computed are the same as before.",
			name, map[bool]string{true: "s", false: ""}[len(tables) > 1], strings.Join(tables, " and "))
	}
	return text + "\n\n" + block(after) + "\n\nThe run below checks that the earlier checks still pass."
}
