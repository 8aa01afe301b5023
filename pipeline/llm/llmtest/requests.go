package llmtest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/internal/gates"
)

// Three requests the persona answers from what the code does: a
// companion function is added and called, so the run shows it; a type
// guard goes on the function the request names and checks each argument
// against the type the example passes for it; a call a loop computes
// twice per pass is stored in a variable.

// exampleArgs returns the arguments of the first call of fn on a line of
// code outside any function (the example the code prints, or a test), as
// written there; ok is false when there is none.
func exampleArgs(code, fn string) (string, bool) {
	call := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\s*\(`)
	for _, l := range strings.Split(code, "\n") {
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "def ") {
			continue
		}
		loc := call.FindStringIndex(l)
		if loc == nil {
			continue
		}
		// the closing parenthesis: the first ")" outside brackets and
		// quotes (splitTop counts it as closing a bracket)
		rest := l[loc[1]:]
		if args, ok := closeParen(rest); ok {
			return strings.TrimSpace(args), true
		}
	}
	return "", false
}

// insertDef puts def (a whole top-level function) after the body of the
// last top-level function of code, before the statements that follow it
// (the example's print, the tests).
func insertDef(code, def string) string {
	lines := strings.Split(strings.TrimRight(code, "\n"), "\n")
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "def ") {
			last = i
		}
	}
	if last < 0 {
		return strings.TrimRight(code, "\n") + "\n\n\n" + def
	}
	end := last + 1
	for end < len(lines) && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(lines[end], " ") || strings.HasPrefix(lines[end], "\t")) {
		end++
	}
	body := end // the blank lines before what follows stay after the new def
	for body > last+1 && strings.TrimSpace(lines[body-1]) == "" {
		body--
	}
	out := append(append([]string{}, lines[:body]...), "", "", def)
	if end < len(lines) {
		out = append(append(out, "", ""), lines[end:]...)
	}
	return strings.Join(out, "\n")
}

// companionAnswer adds fn_all, which applies fn to a list of argument
// tuples, and a print of it on the example's arguments, so the run shows
// what the new function returns; uncalled leaves that print out (the
// UncalledClaim misbehaviour).
func companionAnswer(code, examples, name, fn string, uncalled bool) string {
	all := fn + "_all"
	def := fmt.Sprintf("def %s(cases):\n    \"\"\"Apply %s to each tuple of arguments in cases, in order.\"\"\"\n    return [%s(*args) for args in cases]", all, fn, fn)
	revised := insertDef(code, def)
	// the example's arguments: the code's own call, else the task's
	// asserts (code that only defines fn still gets a call of f_all)
	args, ok := exampleArgs(code+"\n"+examples, fn)
	if uncalled || !ok {
		text := fmt.Sprintf("To extend the functionality I keep %s as it is, so existing callers are unaffected, and add a companion `%s` that applies it to a list of argument tuples and returns the results in the same order.", name, all)
		if !ok && !uncalled {
			// No example to call it on: say so rather than let the run
			// look like a check of it.
			return text + "\n\n" + block(revised) + fmt.Sprintf("\n\nThe run below does not call `%s`, since the code has no example call of %s to reuse; call it with a list of argument tuples to get their results.", all, name)
		}
		return text + "\n\n" + block(revised) + fmt.Sprintf("\n\nThe new function only delegates to %s, so both give the same answer for the same arguments.", name)
	}
	revised = strings.TrimRight(revised, "\n") + fmt.Sprintf("\nprint(%s([(%s,)]))", all, args)
	return fmt.Sprintf("To extend the functionality I keep %s as it is, so existing callers are unaffected, and add a companion `%s` that applies it to a list of argument tuples and returns the results in the same order. The last line calls it on the example's arguments, so the run shows it.", name, all) +
		"\n\n" + block(revised) + fmt.Sprintf("\n\n`%s` only delegates to %s, so the list it prints should hold the same value as the example's own line above it.", all, name)
}

// literalType is the Python type of a literal as the example writes it,
// or "".
func literalType(lit string) string {
	lit = strings.TrimSpace(lit)
	switch {
	case lit == "":
		return ""
	case strings.HasPrefix(lit, "["):
		return "list"
	case strings.HasPrefix(lit, "(") && strings.HasSuffix(lit, ")"):
		inner, ok := closeParen(lit[1:])
		if ok && len(inner) == len(lit)-2 && strings.TrimSpace(inner) != "" {
			if _, commas := splitArgs(inner); len(commas) == 0 {
				return literalType(inner) // ([1, 2]) is the list in parentheses
			}
		}
		return "tuple"
	case strings.HasPrefix(lit, "{}"):
		return "dict"
	case strings.HasPrefix(lit, "{"):
		if _, seps := splitTop(lit[1:len(lit)-1], func(r string) int {
			if r[0] == ':' {
				return 1
			}
			return 0
		}); len(seps) > 0 {
			return "dict"
		}
		return "set"
	case strings.HasPrefix(lit, "'") || strings.HasPrefix(lit, `"`):
		return "str"
	case lit == "True" || lit == "False":
		return "bool"
	case regexp.MustCompile(`^-?\d+$`).MatchString(lit):
		return "int"
	case regexp.MustCompile(`^-?\d*\.\d+(e-?\d+)?$`).MatchString(lit):
		return "float"
	}
	return ""
}

// calledName is the last function code defines that a run of it calls,
// in backticks, or "".
func calledName(code string) string {
	reached := gates.Reached(code)
	ms := defNameRe.FindAllStringSubmatch(code, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		if reached[ms[i][1]] {
			return "`" + ms[i][1] + "`"
		}
	}
	return ""
}

// typeGuard is the check for fn's arguments in code: each argument the
// example call passes a literal for must be of that literal's type (an
// int may also be a float where the example passes an int to arithmetic;
// isinstance(x, int) would refuse 2.0, which the code handles just as
// well only when it never indexes or ranges over it). ok is false when
// no argument's type shows in an example.
func typeGuard(code, examples, fn string) (check []string, said []string, ok bool) {
	args := argNames(code, fn)
	call, found := exampleArgs(code+"\n"+examples, fn)
	if !found && len(args) == 1 && args[0] == "cases" && strings.Contains(code, "def "+fn+"(cases):\n    \"\"\"Apply ") {
		// the persona's own companion: a list (or tuple) of argument tuples
		return []string{"if not isinstance(cases, (list, tuple)):", "    raise TypeError(f\"cases must be a list or tuple of argument tuples, not {type(cases).__name__}\")"},
			[]string{"`cases` must be a list or tuple of argument tuples"}, true
	}
	if !found || len(args) == 0 {
		return nil, nil, false
	}
	vals, _ := splitArgs(call)
	for i, a := range args {
		if i >= len(vals) || strings.Contains(vals[i], "=") {
			break
		}
		typ := literalType(vals[i])
		if typ == "" {
			continue
		}
		desc := map[string]string{"list": "a list", "tuple": "a tuple", "dict": "a dict", "set": "a set", "str": "a str", "bool": "a bool", "int": "an int", "float": "a float"}[typ]
		if typ == "float" {
			typ, desc = "(int, float)", "a number"
		}
		if shadowed[a] {
			// an argument named list or str hides the type: the type is
			// named by a literal of it
			typ = shadowedTypes.Replace(typ)
		}
		check = append(check,
			fmt.Sprintf("if not isinstance(%s, %s):", a, typ),
			fmt.Sprintf("    raise TypeError(f\"%s must be %s, not {type(%s).__name__}\")", a, desc, a))
		said = append(said, fmt.Sprintf("`%s` must be %s", a, desc))
	}
	return check, said, len(check) > 0
}

// shadowed are the type names an argument can hide; shadowedTypes names
// each type by a literal of it instead.
var (
	shadowed      = map[string]bool{"list": true, "tuple": true, "dict": true, "set": true, "str": true, "bool": true, "int": true, "float": true}
	shadowedTypes = strings.NewReplacer("list", "type([])", "tuple", "type(())", "dict", "type({})", "set", "type(set())", "str", `type("")`, "bool", "type(True)", "int", "type(0)", "float", "type(0.0)")
)

// guardAnswer is the persona's reply to "guard fn against inputs of the
// wrong type" or "validate its arguments": isinstance checks at the top of
// fn for the types its example passes (in code, or in examples: the
// task's asserts); ok is false when the example shows none.
func guardAnswer(code, examples, name, fn string) (string, bool) {
	check, said, ok := typeGuard(code, examples, fn)
	if !ok {
		return "", false
	}
	list := said[0]
	if len(said) > 1 {
		list = strings.Join(said[:len(said)-1], ", ") + " and " + said[len(said)-1]
	}
	return fmt.Sprintf("%s now checks the types of its arguments before using them, against the types its example passes: %s. Anything else raises a TypeError that names the argument and the type it got, instead of failing later inside the function.", name, list) +
		"\n\n" + block(addChecks(code, fn, check)) + "\n\nThe example passes those types, so it takes the same path as before and prints the same result.", true
}

// storeRepeated rewrites the first loop of fn whose body computes the
// same call twice per pass (gates.RepeatedCall) to compute it once, into
// a variable set at the top of the loop's body; ok is false when there is
// none, or when the call sits in a while condition (storing it there
// would need the loop rewritten).
func storeRepeated(code, fn string) (out, call, v string, ok bool) {
	lines, defined := ownLines(code, fn)
	if !defined {
		return "", "", "", false
	}
	call = gates.RepeatedCall("def " + fn + "():\n" + strings.Join(lines, "\n"))
	if call == "" {
		return "", "", "", false
	}
	all := strings.Split(code, "\n")
	compact := func(s string) string { return strings.Join(strings.Fields(s), "") }
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	// the first line inside fn that computes call, and the loop around it
	at, in := -1, false
	for i, l := range all {
		if strings.HasPrefix(l, "def ") {
			in = isDef(l, fn)
		}
		if in && strings.Contains(compact(l), call) && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			at = i
			break
		}
	}
	if at < 0 || strings.HasPrefix(strings.TrimSpace(all[at]), "while ") {
		return "", "", "", false
	}
	loop := enclosingLoop(all, at)
	if loop < 0 {
		return "", "", "", false
	}
	first := loop + 1 // the first statement of the loop's body
	for first < len(all) && strings.TrimSpace(all[first]) == "" {
		first++
	}
	if first >= len(all) || indent(all[first]) <= indent(all[loop]) {
		return "", "", "", false // a one-line loop
	}
	// the name: what is called and on what ("len(i)" -> "len_i")
	v = strings.Trim(regexp.MustCompile(`\W+`).ReplaceAllString(strings.TrimPrefix(call, "math."), "_"), "_")
	for regexp.MustCompile(`\b` + v + `\b`).MatchString(code) {
		v += "_"
	}
	var pat []string // call with any spacing between its characters
	for _, r := range call {
		pat = append(pat, regexp.QuoteMeta(string(r)))
	}
	esc := regexp.MustCompile(`\b` + strings.Join(pat, `\s*`))
	body := all[first][:indent(all[first])]
	res := append(append([]string{}, all[:first]...), body+v+" = "+call)
	end := first
	for ; end < len(all) && (strings.TrimSpace(all[end]) == "" || indent(all[end]) > indent(all[loop])); end++ {
		res = append(res, esc.ReplaceAllLiteralString(all[end], v))
	}
	return strings.Join(append(res, all[end:]...), "\n"), call, v, true
}

// enclosingLoop is the index of the for or while line whose body holds
// line at, through ifs and elses only (not a def), or -1.
func enclosingLoop(lines []string, at int) int {
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	cur := indent(lines[at])
	for i := at - 1; i >= 0; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || indent(l) >= cur {
			continue
		}
		cur = indent(l)
		switch t := strings.TrimSpace(l); {
		case loopRe.MatchString(l):
			return i
		case strings.HasPrefix(t, "if ") || strings.HasPrefix(t, "elif ") || strings.HasPrefix(t, "else"):
			continue
		default:
			return -1
		}
	}
	return -1
}

// asksGuard reports a request to check the arguments' types or validate
// them (low: in lower case).
func asksGuard(low string) bool {
	return strings.Contains(low, "validat") || strings.Contains(low, "guard") || strings.Contains(low, "wrong type")
}

// stepRe: a statement that names an intermediate value.
var stepRe = regexp.MustCompile(`^\s+[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*(=|\+=|-=|\*=|/=|//=|%=)[^=]`)

// namedSteps counts the statements of fn's own lines that keep a value in
// a name.
func namedSteps(code, fn string) int {
	lines, _ := ownLines(code, fn)
	n := 0
	for _, l := range lines {
		if stepRe.MatchString(l) {
			n++
		}
	}
	return n
}

// closeParen returns s up to the ")" that closes a call whose "(" came
// just before s, outside brackets and quotes; ok is false when none does.
func closeParen(s string) (string, bool) {
	parts, seps := splitTop(s, func(rest string) int {
		if rest[0] == ')' {
			return 1
		}
		return 0
	})
	return parts[0], len(seps) > 0
}

// explicitEmptyRe: a path of fn's own for an empty argument, as an
// earlier round adds it: `if len(xs) == 0:` then a return or a raise.
var explicitEmptyRe = regexp.MustCompile(`(?m)^\s+if len\(([A-Za-z_]\w*)\) == 0:\s*\n\s+(return (.+?)|raise (\w+)\(.*\))\s*$`)

// edgeTest is a test of fn on an empty argument whose expected outcome
// the code's own lines settle without running it: an explicit path for
// it (a return of a literal or a raise), or a loop over the argument that
// never runs before the return of a value set before it. The other
// arguments are the example's (found in code or in examples, the task's
// asserts). why says, in prose, where the expected outcome comes from;
// ok is false when no such test can be written.
func edgeTest(code, examples, fn string) (test []string, why string, ok bool) {
	arg := gates.CollectionArg(code, fn)
	args := argNames(code, fn)
	pos := slices.Index(args, arg)
	call, found := exampleArgs(code+"\n"+examples, fn)
	if arg == "" || pos < 0 || !found {
		return nil, "", false
	}
	vals, _ := splitArgs(call)
	if pos >= len(vals) {
		return nil, "", false
	}
	empty := map[string]string{"list": "[]", "str": "''", "tuple": "()", "dict": "{}", "set": "set()"}[literalType(vals[pos])]
	if empty == "" {
		return nil, "", false
	}
	vals[pos] = empty
	for i := range vals {
		vals[i] = strings.TrimSpace(vals[i])
	}
	expr := fmt.Sprintf("%s(%s)", fn, strings.Join(vals, ", "))
	lines, _ := ownLines(code, fn)
	value, raises := "", ""
	if m := explicitEmptyRe.FindStringSubmatch(strings.Join(lines, "\n")); m != nil && m[1] == arg {
		value, raises = m[3], m[4]
		why = fmt.Sprintf("its first lines return `%s` for an empty `%s`", value, arg)
		if raises != "" {
			why = fmt.Sprintf("its first lines raise %s for an empty `%s`", raises, arg)
		}
	} else if v, via, ok := emptyResult(code, fn, arg); ok {
		value = v
		why = fmt.Sprintf("for an empty `%s`, %s", arg, emptyWhy(arg, "`"+fn+"`", v, via))
	}
	switch {
	case raises != "":
		return []string{"try:", "    " + expr, fmt.Sprintf("except %s:", raises), "    pass", "else:",
			fmt.Sprintf("    raise AssertionError(\"%s should raise %s\")", strings.ReplaceAll(expr, `"`, `'`), raises)}, why, true
	case value == "None":
		return []string{fmt.Sprintf("assert %s is None", expr)}, why, true
	case literalRe.MatchString(value):
		return []string{fmt.Sprintf("assert %s == %s", expr, value)}, why, true
	}
	return nil, "", false
}
