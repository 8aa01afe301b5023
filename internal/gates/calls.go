package gates

import (
	"regexp"
	"slices"
	"strings"
)

// Two false accounts of a run a writer gives: a closing that says the run
// confirmed a function the run never called (a companion `f_all` defined
// and left uncalled while the old example still prints), and a kept-code
// answer that says each value is computed once over a loop that computes
// the same call twice per pass.

// Reached returns the top-level functions of Python code that a run of it
// calls: those called from a top-level line, or from the body of a
// function so reached, plus the names in also (functions the harness
// calls, such as a problem's entry point under its tests).
func Reached(code string, also ...string) map[string]bool {
	bodies := map[string][]string{} // a top-level function's own lines
	var top []string                // lines outside any top-level def
	fn := ""
	for _, l := range strings.Split(NormalizeCode(StripDocstrings(code)), "\n") {
		indented := strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		switch m := defLineRe.FindStringSubmatch(l); {
		case m != nil && !indented:
			fn = m[2]
			bodies[fn] = bodies[fn][:0:0]
		case indented && fn != "":
			bodies[fn] = append(bodies[fn], l)
		default:
			fn = ""
			top = append(top, l)
		}
	}
	reached := map[string]bool{}
	work := slices.Clone(also)
	calls := func(lines []string) {
		for name := range bodies {
			if !reached[name] && slices.ContainsFunc(lines, regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\s*\(`).MatchString) {
				work = append(work, name)
			}
		}
	}
	calls(top)
	for len(work) > 0 {
		name := work[len(work)-1]
		work = work[:len(work)-1]
		if reached[name] {
			continue
		}
		reached[name] = true
		calls(bodies[name])
	}
	return reached
}

var (
	// runClaimRe: prose that says the run showed something of a function.
	runClaimRe = regexp.MustCompile(`(?i)\b(confirm\w*|shows?|showed|showing|output|pass(es|ed|ing)?|works?|worked|handles|gives|gave|produced?|produces|verif\w+|demonstrat\w+)\b`)
	// notRunRe: prose that says the code only defines something.
	notRunRe = regexp.MustCompile(`(?i)\b(nothing|only defines|not call\w*|never call\w*|not run|call it)\b`)
)

// UncalledClaim returns the first prose sentence of text that says the
// run showed something of a function code defines but its run never
// calls (Reached, with also the functions the harness calls), or "".
func UncalledClaim(text, code string, also ...string) string {
	reached := Reached(code, also...)
	defined := map[string]bool{}
	for _, l := range strings.Split(code, "\n") {
		if m := defLineRe.FindStringSubmatch(l); m != nil && m[1] == "" {
			defined[m[2]] = true
		}
	}
	for _, s := range proseSentences(text) {
		if !runClaimRe.MatchString(s) || notRunRe.MatchString(s) {
			continue
		}
		for _, m := range tickRe.FindAllStringSubmatch(s, -1) {
			if defined[m[1]] && !reached[m[1]] {
				return strings.TrimSpace(s)
			}
		}
	}
	return ""
}

var (
	// pureCallRe: a call of a built-in or math function without side
	// effects whose arguments hold no call: computed twice with the same
	// arguments, it gives the same value twice.
	pureCallRe = regexp.MustCompile(`\b(?:len|abs|min|max|sum|sorted|str|int|float|ord|chr|pow|round|bin|hex|oct|set|tuple|list|divmod|math\.\w+)\([^()]*\)`)
	// computedOnceRe: prose that says no value is computed twice.
	computedOnceRe = regexp.MustCompile(`(?i)\b(computed|calculated|derived|evaluated|worked out) (only )?once\b|\b(computes|calculates|derives|evaluates) (each|every) \w+ (only )?once\b|\bno value is (re)?computed\b|\bnothing is (re)?computed\b|\b(never|does not|doesn't) recompute`)
	assignedRe     = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:[-+*/%&|^]|//|\*\*)?=[^=]|^\s*([A-Za-z_]\w*)\.(?:append|extend|pop|insert|remove|sort|reverse|clear|update|add|discard)\(`)
	identArgRe     = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// RepeatedCall returns the first call (a built-in or math function, see
// pureCallRe) that one loop body of code computes twice with the same
// arguments, none of which the body assigns, or "". A while loop's
// condition is part of its body: it runs on every pass; a for loop's
// header runs once.
func RepeatedCall(code string) string {
	lines := strings.Split(NormalizeCode(StripDocstrings(code)), "\n")
	for i, l := range lines {
		m := pyLoopRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var body []string
		if m[2] == "while" {
			body = append(body, l)
		}
		for _, b := range lines[i+1:] {
			if len(b)-len(strings.TrimLeft(b, " \t")) <= len(m[1]) {
				break
			}
			body = append(body, b)
		}
		assigned := map[string]bool{}
		for _, b := range body {
			if a := assignedRe.FindStringSubmatch(b); a != nil {
				assigned[a[1]+a[2]] = true
			}
		}
		seen := map[string]bool{}
		for _, b := range body {
			for _, c := range pureCallRe.FindAllString(b, -1) {
				c = strings.Join(strings.Fields(c), "")
				args := c[strings.Index(c, "(")+1 : len(c)-1]
				if args == "" || slices.ContainsFunc(identArgRe.FindAllString(args, -1), func(a string) bool { return assigned[a] }) {
					continue
				}
				if seen[c] {
					return c
				}
				seen[c] = true
			}
		}
	}
	return ""
}

// FalseComputedOnce returns the prose sentence of text that says each
// value is computed once when a loop of code computes the same call twice
// per pass (RepeatedCall), or "".
func FalseComputedOnce(text, code string) string {
	if RepeatedCall(code) == "" {
		return ""
	}
	for _, s := range proseSentences(text) {
		if computedOnceRe.MatchString(s) {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// notRunSaidRe: a sentence that says a function was not run.
var notRunSaidRe = regexp.MustCompile(`(?i)\b(not (been )?(called|run|exercised|tested|checked)|never (called|run|exercised|tested)|does not call|doesn't call|only defines|untested|no call of)\b`)

// UncalledNew returns the first top-level function that after defines
// and before did not, that a run of after never calls (Reached, with
// also), or "". A sentence of text that names it in backquotes and says
// it was not run lets it pass: an answer that presents a function the run
// never exercised must say so, or the dialogue shows it as tested.
func UncalledNew(before, after, text string, also ...string) string {
	had := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		if m := defLineRe.FindStringSubmatch(l); m != nil && m[1] == "" {
			had[m[2]] = true
		}
	}
	reached := Reached(after, also...)
	for _, l := range strings.Split(NormalizeCode(StripDocstrings(after)), "\n") {
		m := defLineRe.FindStringSubmatch(l)
		if m == nil || m[1] != "" || had[m[2]] || reached[m[2]] {
			continue
		}
		said := false
		for _, s := range proseSentences(text) {
			if notRunSaidRe.MatchString(s) && strings.Contains(s, "`"+m[2]+"`") {
				said = true
			}
		}
		if !said {
			return m[2]
		}
	}
	return ""
}
