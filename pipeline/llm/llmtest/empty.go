package llmtest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// Asked to make a function's handling of empty input explicit, the
// persona adds a code path for it, read from the function's own lines:
// where the empty case already ends in a known value (a loop over the
// argument that never runs, then the return of a counter set before it),
// an early return of that value; otherwise a ValueError that names the
// argument. A function none of whose arguments is used as a collection
// has no empty input, and the persona says so.

var (
	literalRe   = regexp.MustCompile(`^(-?\d+(\.\d+)?|True|False|None|""|''|\[\]|\{\}|\(\)|set\(\)|float\(['"]-?inf['"]\))$`)
	assignLitRe = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*;?\s*$`)
)

// emptyResult is the value fn returns for an empty arg when its lines
// show it: every statement before the first loop sets a name to a
// literal, that loop goes over arg (so it never runs), and the statement
// after it returns one of those names or a literal. ok is false otherwise.
func emptyResult(code, fn, arg string) (value, via string, ok bool) {
	return emptyResultOf(code, fn, arg, false)
}

// emptyResultOf is emptyResult; withLength also reads a loop up to an
// argument that MBPP passes as the array's length (find_Product(arr, n)):
// with an empty array that length is 0 too, but a call that empties the
// array alone (an edge-case test) still runs that loop.
func emptyResultOf(code, fn, arg string, withLength bool) (value, via string, ok bool) {
	lines, defined := ownLines(code, fn)
	if !defined || len(lines) == 0 {
		return "", "", false
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	top := indent(lines[0])
	q := regexp.QuoteMeta(arg)
	// The length the loop runs to: len(arg), or another argument that
	// MBPP passes as the array's length (find_Product(arr, n)), 0 with an
	// empty array.
	size := `len\(` + q + `\)`
	for _, a := range argNames(code, fn) {
		if withLength && a != arg && (a == "n" || a == "N" || a == "size" || a == "length") {
			size += `|` + regexp.QuoteMeta(a)
		}
	}
	overArg := regexp.MustCompile(`^\s*for\s+.+?\s+in\s+(?:` + q + `|enumerate\(` + q + `\)|sorted\(` + q + `\)|range\((?:0,\s*)?(?:` + size + `)(?:,\s*1)?\)|range\(\s*(?:` + size + `)\s*-\s*1\s*,\s*-1\s*,\s*-1\s*\))\s*:\s*$`)
	// A reduction of arg alone, whose value for no elements Python fixes.
	reduced := regexp.MustCompile(`^(all|any|sum|len|list|sorted|set|tuple|re\.findall)\(\s*(?:` + q + `|[^()]*\bfor\b[^()]*\bin\s+` + q + `|r?(?:"[^"]*"|'[^']*')\s*,\s*` + q + `)\s*\)$`)
	ofNone := map[string]string{"all": "True", "any": "False", "sum": "0", "len": "0", "list": "[]", "sorted": "[]", "set": "set()", "tuple": "()", "re.findall": "[]"}
	// Steps that leave an empty argument empty and set nothing else.
	inPlace := regexp.MustCompile(`^\s*` + q + `\.(?:sort|reverse)\(\)\s*;?\s*$|^\s*` + q + `\s*=\s*(?:sorted|list|reversed)\(` + q + `\)\s*;?\s*$`)
	set := map[string]string{}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if indent(l) != top {
			return "", "", false
		}
		if inPlace.MatchString(l) {
			continue
		}
		if m := assignLitRe.FindStringSubmatch(l); m != nil && literalRe.MatchString(m[2]) {
			set[m[1]] = m[2]
			continue
		}
		if m := returnRe.FindStringSubmatch(l); m != nil && regexp.MustCompile(`^\[[^\[\]]*\bfor\b.*\bin\s+`+q+`\s*\]$`).MatchString(m[1]) {
			return "[]", "", true // a list built from arg alone is empty
		}
		if m := returnRe.FindStringSubmatch(l); m != nil {
			e := strings.TrimSpace(m[1])
			if strings.HasPrefix(e, "(") && strings.HasSuffix(e, ")") {
				e = strings.TrimSpace(e[1 : len(e)-1]) // return (x)
			}
			if r := reduced.FindStringSubmatch(e); r != nil {
				return ofNone[r[1]], "=" + r[1], true
			}
		}
		// `x = all(... for v in arg)` then `return x`
		if m := assignLitRe.FindStringSubmatch(l); m != nil && i+1 < len(lines) {
			r := reduced.FindStringSubmatch(m[2])
			ret := returnRe.FindStringSubmatch(lines[i+1])
			if r != nil && ret != nil && strings.Trim(strings.TrimSpace(ret[1]), "()") == m[1] {
				return ofNone[r[1]], "=" + r[1], true
			}
		}
		if !overArg.MatchString(l) {
			return "", "", false
		}
		j := i + 1
		for j < len(lines) && indent(lines[j]) > top {
			j++
		}
		if j >= len(lines) {
			return "", "", false
		}
		m := returnRe.FindStringSubmatch(lines[j])
		if m == nil {
			return "", "", false
		}
		ret := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(m[1], "("), ")"))
		if v, ok := set[ret]; ok {
			return v, ret, true
		}
		if literalRe.MatchString(ret) {
			return ret, "", true
		}
		return "", "", false
	}
	return "", "", false
}

// returnedRe reads, from the pipeline's repair, the value the code
// returned for empty input before a revision that raises for it.
var returnedRe = regexp.MustCompile(`before this change \S+\(.*?\) returned (.+?)\. That value`)

// emptyAnswer is the persona's reply to a request to handle empty input
// explicitly: prose that says what the code now does for it, the code,
// and a closing line. was is the value the code returned for empty input
// before, when the pipeline said so ("" when not); raise is the
// RaiseOnEmpty misbehaviour.
func emptyAnswer(code, name, fn, was string, raise bool) string {
	lines, _ := ownLines(code, fn)
	arg := gates.CollectionArg(code, fn)
	if arg != "" && was != "" && !raise {
		check := []string{fmt.Sprintf("if len(%s) == 0:", arg), "    return " + was}
		return fmt.Sprintf("For an empty `%s`, %s already returned `%s` through its general steps; that is its own answer for empty input, so I made it explicit: the function now returns `%s` for it at once, and a reader sees that case in the first lines.", arg, name, was, was) +
			"\n\n" + block(addChecks(code, fn, check)) + "\n\nNon-empty inputs take the same path as before, so the earlier checks still pass."
	}
	switch {
	case arg == "":
		args := argNames(code, fn)
		what := "takes no arguments"
		if len(args) > 0 {
			what = "uses none of its arguments (" + ticked(args) + ") as a list, string or other collection"
		}
		return fmt.Sprintf("No change is needed for empty input: %s %s, so none of them can be empty and there is no empty case to handle.", name, what) +
			"\n\n" + block(code) + "\n\nThe code is the same as before, so the earlier checks still hold."
	case gates.EmptyPaths("def "+fn+"("+strings.Join(argNames(code, fn), ", ")+"):\n"+strings.Join(lines, "\n")) > 0:
		return fmt.Sprintf("No change is needed for empty input: %s already tests for an empty `%s` in its own lines before using it, so that case has its own path.", name, arg) +
			"\n\n" + block(code) + "\n\nThe code is the same as before, so the earlier checks still hold."
	}
	if v, via, ok := emptyResultOf(code, fn, arg, true); ok && !raise {
		check := []string{fmt.Sprintf("if len(%s) == 0:", arg), "    return " + v}
		return fmt.Sprintf("For an empty `%s`, %s. I made that case explicit: the function now returns `%s` for it at once, so a reader sees that case in the first lines instead of working it out from the steps below.", arg, emptyWhy(arg, name, v, via), v) +
			"\n\n" + block(addChecks(code, fn, check)) + "\n\nNon-empty inputs take the same path as before, so the earlier checks still pass."
	}
	check := []string{fmt.Sprintf("if len(%s) == 0:", arg), fmt.Sprintf("    raise ValueError(\"%s must not be empty\")", arg)}
	return fmt.Sprintf("The task does not say what %s should give for an empty `%s`, and its lines settle no value for it, so rather than guess one I made it an error: before any other step it raises a ValueError that names the argument, and a caller learns at once that `%s` needs at least one element.", name, arg, arg) +
		"\n\n" + block(addChecks(code, fn, check)) + "\n\nNon-empty inputs take the same path as before, so the earlier checks still pass."
}

// emptyWhy says why fn (name) returns v for an empty arg, from what
// emptyResultOf read (via: the name set before the loop, or "=" and the
// reduction whose value for no elements v is).
func emptyWhy(arg, name, v, via string) string {
	switch {
	case via == "=re.findall":
		return fmt.Sprintf("`re.findall` finds no match in an empty `%s`, so %s returns `[]`", arg, name)
	case strings.HasPrefix(via, "="):
		return fmt.Sprintf("`%s` of no values is `%s`, so %s returns `%s`", via[1:], v, name, v)
	case v == "[]" && via == "":
		return fmt.Sprintf("%s builds its list from `%s` alone, so it returns `[]`", name, arg)
	case via != "":
		return fmt.Sprintf("the loop over `%s` never runs and %s returns `%s` as it was set before the loop, `%s`", arg, name, via, v)
	}
	return fmt.Sprintf("the loop over `%s` never runs and %s returns `%s`", arg, name, v)
}

// ticked joins names as code: "`a`, `b`".
func ticked(names []string) string {
	return strings.Join(mapArgs(names, func(a string) string { return "`" + a + "`" }), ", ")
}

// asksEmpty reports a request about how the code treats empty input.
func asksEmpty(request string) bool { return gates.AsksAboutEmpty(request) }

// plainShape says, from fn's own lines, how it goes over its input, as a
// verb phrase without its subject: "calls itself ...", "goes through its
// input once". It claims one pass only where there is one.
func plainShape(code, name string) string {
	fn := strings.Trim(name, "`")
	lines, defined := ownLines(code, fn)
	own := code
	if defined {
		own = "def " + fn + "():\n" + strings.Join(lines, "\n")
	}
	p := gates.CountPasses(own)
	switch {
	case p.Recursive:
		return "calls itself on its own intermediate values until it reaches a case it answers directly"
	case p.Depth > 1:
		return "runs one loop inside another, so it goes over its input more than once"
	case p.Loops > 1:
		return fmt.Sprintf("makes %d passes, one loop after another", p.Loops)
	case p.Loops == 1:
		return "goes through its input once, in a single loop"
	}
	return "computes the result directly, with no loop of its own"
}
