package llmtest

import (
	"fmt"
	"regexp"
	"strings"
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
	depth     int    // deepest nesting of loops, comprehensions included
	recursive bool   // the function calls itself
	collects  bool   // it builds a list, set, dict or slice from its input
	scans     bool   // a loop body searches a sequence (in, count, index)
	cond      string // the longest condition of an if, elif or while
	conds     int
	modern    bool // syntax or library calls newer than Python 3.5
}

// ownLines returns the lines of fn's body in code, normalized (no
// comments, blank lines or docstrings), and whether code defines fn; when
// it does not, every line. A companion function, a print of an example or
// a block of tests around fn says nothing of fn.
func ownLines(code, fn string) (lines []string, defined bool) {
	all := strings.Split(normalize(code), "\n")
	if !strings.Contains(code, "def "+fn+"(") {
		return all, false
	}
	in := false
	for _, l := range all {
		switch {
		case strings.HasPrefix(l, "def "):
			in = strings.HasPrefix(l, "def "+fn+"(")
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
		if collectRe.MatchString(l) {
			f.collects = true
		}
	}
	return f
}

// keepAnswer is the persona's reply to such a request (low: the request
// in lower case, without the function's name), with the code unchanged;
// ok is false for a request of another kind.
func keepAnswer(low, code, name, fn string) (string, bool) {
	if !keepTopicRe.MatchString(low) {
		return "", false
	}
	f := readFacts(code, fn)
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
		if f.recursive || f.depth > 1 || f.scans {
			text = kept("avoiding recomputed values")
		} else {
			text = fmt.Sprintf("No change is needed to avoid recomputing values: %s has no recursion and no nested loop, so each value it derives is computed once.", name)
		}
	case strings.Contains(low, "memory") && !strings.Contains(low, "faster"):
		if f.collects || f.recursive {
			text = kept("keeping its memory small (it builds a list, a table or a call stack from its input)")
		} else {
			text = fmt.Sprintf("No change is needed for memory: %s keeps only single values as it goes and builds no list, set or dictionary from its input, so the memory it uses stays small however long the input is.", name)
		}
	default: // faster, quickly on larger inputs
		switch {
		case f.recursive || f.depth > 1 || f.scans:
			text = kept("making it faster on much larger inputs")
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

var (
	forHeadRe = regexp.MustCompile(`^\s*for\s+(.+?)\s+in\s+(.+?)\s*:\s*$`)
	whileRe   = regexp.MustCompile(`^\s*while\s+(.+?)\s*:\s*$`)
	returnRe  = regexp.MustCompile(`^\s*return\s+(.+?)[\s;]*$`)
)

// explainDoc is a docstring that says how fn works, read from its own
// lines: its arguments, its loops and what it returns; or, not how, only
// what it returns.
func explainDoc(code, fn string, how bool) string {
	var steps []string
	if args := argNames(code, fn); len(args) > 0 {
		steps = append(steps, "takes "+strings.Join(args, ", "))
	}
	loops, rets, recursive := 0, []string{}, false
	lines, defined := ownLines(code, fn)
	if !defined {
		lines = nil
	}
	for _, l := range lines {
		if strings.Contains(l, fn+"(") && !recursive {
			steps = append(steps, "calls "+fn+" recursively")
			recursive = true
		}
		if m := forHeadRe.FindStringSubmatch(l); m != nil && loops < 2 {
			steps = append(steps, fmt.Sprintf("goes through %s with %s", m[2], m[1]))
			loops++
		} else if m := whileRe.FindStringSubmatch(l); m != nil && loops < 2 {
			steps = append(steps, "repeats while "+m[1])
			loops++
		} else if m := returnRe.FindStringSubmatch(l); m != nil && len(rets) < 2 {
			rets = append(rets, m[1])
		}
	}
	if !how && len(rets) > 0 {
		return "Return " + strings.Join(rets, " or ") + ", the result the task asks for."
	}
	if len(rets) > 0 {
		steps = append(steps, "returns "+strings.Join(rets, " or "))
	}
	if len(steps) == 0 {
		return "Compute the task's result from the arguments."
	}
	return "How it works: it " + strings.Join(steps, ", then ") + "."
}
