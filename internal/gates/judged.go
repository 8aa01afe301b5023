package gates

import (
	"regexp"
	"strings"
)

// A judge model's verdict on a test-less run is only as good as what it
// says: a rejection whose reason says nothing ("incorrect", "") gives the
// writer nothing to fix and, put into the dialogue, claims a fault no one
// named; an acceptance is checked against the run's own output where the
// output can contradict the task.

var (
	// verdictLeadRe: a bare verdict word in front of the reason, which the
	// "correct" field already says.
	verdictLeadRe = regexp.MustCompile(`(?i)^(false|no|incorrect|wrong|not correct|rejected)\s*[.:;,-]+\s*`)
)

// CleanReason is a judge's reason as it can stand in a dialogue: code
// blocks dropped, white space folded, quotes and a bare verdict word at
// its start removed, cut to at most about 400 characters at a sentence end.
// The words are the judge's own, case included.
func CleanReason(reason string) string {
	s := fenceBlockRe.ReplaceAllString(reason, " ")
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, `"' `)
	s = verdictLeadRe.ReplaceAllString(s, "")
	if len(s) > 400 {
		cut := s[:400]
		if i := strings.LastIndex(cut, ". "); i > 40 {
			cut = cut[:i+1]
		}
		s = strings.TrimSpace(cut)
	}
	return s
}

// genericReasonWords say that something is wrong without saying what.
var genericReasonWords = map[string]bool{
	"the": true, "a": true, "an": true, "code": true, "is": true, "not": true, "correct": true, "incorrect": true,
	"wrong": true, "it": true, "this": true, "that": true, "answer": true, "false": true, "does": true, "do": true,
	"output": true, "result": true, "function": true, "solution": true, "task": true, "work": true, "works": true,
	"right": true, "properly": true, "correctly": true, "fails": true, "bad": true, "no": true, "yes": true, "looks": true,
	"seems": true, "doesn't": true, "isn't": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"as": true, "expected": true, "asked": true, "for": true, "be": true, "fine": true, "good": true, "ok": true,
}

var reasonWordRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_']*|\d+`)

// ReadableReason reports whether a cleaned rejection reason names what is
// wrong: at least four words, one of them more than a verdict ("the code
// is incorrect" is not a reason).
func ReadableReason(reason string) bool {
	words := reasonWordRe.FindAllString(strings.ToLower(reason), -1)
	if len(words) < 4 {
		return false
	}
	for _, w := range words {
		if !genericReasonWords[w] {
			return true
		}
	}
	return false
}

var (
	// yesNoTaskRe: a task whose answer is yes or no.
	yesNoTaskRe = regexp.MustCompile(`(?i)\b(check|checks|checking|whether|if|or not|verify|determine|test|is|are|does|do|can|has|have)\b`)
	// valueTaskRe: a task that asks for a value other than yes or no (a
	// verb, or a noun of a quantity: a misspelt verb, "caluclate area",
	// still names one).
	valueTaskRe = regexp.MustCompile(`(?i)\b(find|get|count|calculate|compute|convert|sum|remove|sort|extract|return|reverse|split|join|replace|merge|generate|multiply|add|subtract|divide|concatenate|rotate|flatten|filter|compress|encode|decode|area|volume|perimeter|product|average|mean|median|maximum|minimum|largest|smallest|length|distance|nth|number of)\b`)
)

// RunContradicts says how a clean run's output contradicts its task, or ""
// when nothing in it does: the task asks for a value and the run's last
// line is a bare True or False, or None, where the task asks no yes-or-no
// question. It reads only the task's first sentence (the request, not its
// examples).
func RunContradicts(task, output string) string {
	first := strings.SplitN(strings.TrimSpace(task), "\n", 2)[0]
	if i := strings.Index(first, ". "); i > 0 {
		first = first[:i]
	}
	lines := strings.Split(strings.TrimSpace(output), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if !valueTaskRe.MatchString(first) || yesNoTaskRe.MatchString(first) {
		return ""
	}
	switch last {
	case "True", "False":
		return "the task asks for a value (" + Cut(first, 160) + "), and the run printed the bare truth value " + last
	case "None":
		return "the task asks for a value (" + Cut(first, 160) + "), and the run printed None: the function returns nothing"
	}
	return ""
}

var tickSpanRe = regexp.MustCompile("`([^`\n]+)`")

// FaultQuoted lists the spans a preface quotes in backquotes from code
// that fixed (the code that replaced it after its run failed) no longer
// has: the faulty part, described as the plan. Nothing when fixed is "".
func FaultQuoted(prose, code, fixed string) []string {
	if fixed == "" {
		return nil
	}
	var out []string
	for _, m := range tickSpanRe.FindAllStringSubmatch(prose, -1) {
		s := strings.TrimSpace(m[1])
		if len(s) > 1 && strings.Contains(code, s) && !strings.Contains(fixed, s) {
			out = append(out, "`"+s+"`")
		}
	}
	return out
}
