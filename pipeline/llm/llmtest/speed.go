package llmtest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// Asked for speed, the persona makes the two changes a good model makes
// where the code's lines allow them with the same algorithm's results: a
// cache for a recursion that calls itself on the same cases again and
// again, and a set, built once, for a membership test a loop repeats
// against a list argument. The run checks the results; the product's
// no_speedup check reads the cost.

// memoize puts functools.lru_cache on fn when fn calls itself twice or
// more in one statement (gates.TreeRecursive) and its example call passes only numbers and strings
// (which a cache can hold).
func memoize(code, fn string) (string, bool) {
	if !defines(code, fn) || strings.Contains(code, "lru_cache") {
		return "", false
	}
	args, ok := exampleArgs(code, fn)
	if !gates.TreeRecursive(code, fn) || !ok || strings.ContainsAny(args, "[{") {
		return "", false
	}
	out := []string{"import functools", ""}
	for _, l := range strings.Split(code, "\n") {
		if isDef(l, fn) {
			out = append(out, "@functools.lru_cache(maxsize=None)")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), true
}

// setScan hoists a set of a list argument that a loop of fn searches with
// `in` on every pass: built once before the loop, it answers each search
// in constant time. Not when the argument's elements are lists or dicts
// (unhashable), nor when fn changes the argument.
func setScan(code, fn string) (string, string, bool) {
	params := argNames(code, fn)
	example, _ := exampleArgs(code, fn)
	args, _ := splitArgs(example)
	lines := strings.Split(code, "\n")
	start := -1
	for i, l := range lines {
		if isDef(l, fn) {
			start = i
		}
	}
	if start < 0 || len(args) != len(params) {
		return "", "", false
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	for k, p := range params {
		a := strings.TrimSpace(args[k])
		if !strings.HasPrefix(a, "[") || strings.HasPrefix(a, "[[") || strings.HasPrefix(a, "[{") || strings.HasPrefix(a, "[(") {
			continue
		}
		changed := regexp.MustCompile(`\b` + p + `\s*(\[[^\]]*\]\s*)?[-+*/]?=[^=]|\b` + p + `\.(append|extend|insert|pop|remove|sort|reverse|clear)\(`)
		search := regexp.MustCompile(`\b(not\s+in|in)\s+` + p + `\b(\s*[:)\],]|\s*$|\s+(and|or|if|else)\b)`)
		forIn := regexp.MustCompile(`\bfor\s+[\w\s,()]+?\s+in\s+` + p + `\b`)
		loop, loopIndent := -1, 0
		body := start + 1
		for ; body < len(lines) && (strings.TrimSpace(lines[body]) == "" || indent(lines[body]) > 0); body++ {
		}
		if changed.MatchString(strings.Join(lines[start+1:body], "\n")) {
			continue
		}
		for i := start + 1; i < body; i++ {
			l := lines[i]
			if loop >= 0 && strings.TrimSpace(l) != "" && indent(l) <= loopIndent {
				loop = -1
			}
			if loop < 0 && loopRe.MatchString(l) {
				loop, loopIndent = i, indent(l)
				continue
			}
			if loop >= 0 && search.MatchString(forIn.ReplaceAllString(l, "")) {
				out := append([]string{}, lines[:loop]...)
				out = append(out, lines[loop][:loopIndent]+p+"_set = set("+p+")")
				for j := loop; j < len(lines); j++ {
					m := lines[j]
					if j > loop && j < body && indent(m) > loopIndent || j > loop && j < body && strings.TrimSpace(m) == "" {
						m = search.ReplaceAllStringFunc(m, func(s string) string { return strings.Replace(s, p, p+"_set", 1) })
					}
					out = append(out, m)
				}
				return strings.Join(out, "\n"), p, true
			}
		}
	}
	return "", "", false
}

// speedAnswer is the persona's real speed-up of fn for a speed request,
// ok false when neither change fits its lines.
func speedAnswer(code, name, fn string) (string, bool) {
	if out, ok := memoize(code, fn); ok {
		return fmt.Sprintf("%s called itself more than once per call, on the same smaller cases again and again, so its time grew exponentially with its input. It now keeps each result in a cache (`functools.lru_cache`) and looks it up when the same arguments come again, so each case is computed once and it is much faster on larger inputs. Its example passes only numbers and strings, which the cache can hold, and the results are the same.", name) +
			"\n\n" + block(out) + "\n\nThe run below checks that the earlier checks still pass.", true
	}
	if out, p, ok := setScan(code, fn); ok {
		return fmt.Sprintf("%s searched the list `%s` with `in` on every pass of its loop, going over the whole list each time. It now builds `%s_set = set(%s)` once, before the loop, and searches that: each search takes constant time, so it is faster on long lists, and the results are the same.", name, p, p, p) +
			"\n\n" + block(out) + "\n\nThe run below checks that the earlier checks still pass.", true
	}
	return "", false
}

// fakeSpeedup is the FakeSpeedup misbehaviour: the last return of fn
// goes through a variable, and the answer says that makes it faster.
func fakeSpeedup(code, name, fn string) (string, bool) {
	lines := strings.Split(code, "\n")
	in := false
	last := -1
	for i, l := range lines {
		switch {
		case isDef(l, fn):
			in = true
		case strings.TrimSpace(l) != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t"):
			in = false
		}
		if in && strings.HasPrefix(strings.TrimSpace(l), "return ") {
			last = i
		}
	}
	if last < 0 {
		return "", false
	}
	l := lines[last]
	ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
	out := append(append([]string{}, lines[:last]...), ind+"result = "+strings.TrimPrefix(strings.TrimSpace(l), "return "), ind+"return result")
	out = append(out, lines[last+1:]...)
	return fmt.Sprintf("This version of %s is faster on larger inputs: it keeps the result in a variable before returning it, so no work is repeated.", name) +
		"\n\n" + block(strings.Join(out, "\n")) + "\n\nThe run below checks that the earlier checks still pass.", true
}

var (
	memoLinesRe = regexp.MustCompile(`(?m)^(import functools\n\n?|@functools\.lru_cache\(maxsize=None\)\n)`)
	setLineRe   = regexp.MustCompile(`(?m)^[ \t]*([A-Za-z_]\w*)_set = set\(([A-Za-z_]\w*)\)\n`)
)

// unSpeed undoes memoize and setScan, for the judge: the code as it was
// before the speed-up, whose results are the same.
func unSpeed(code string) string {
	code = memoLinesRe.ReplaceAllString(code, "")
	for _, m := range setLineRe.FindAllStringSubmatch(code, -1) {
		if m[1] == m[2] {
			code = strings.Replace(code, m[0], "", 1)
			code = regexp.MustCompile(`\b`+m[1]+`_set\b`).ReplaceAllString(code, m[1])
		}
	}
	return code
}
