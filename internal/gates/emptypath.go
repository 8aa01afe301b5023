package gates

import (
	"regexp"
	"strings"
)

// Asked to make the handling of empty input explicit, a writer often adds
// a docstring and says the same path already handles it: the request
// asked for a path of its own, and the code has none. The empty-input
// probe catches the answers whose code crashes on empty input; this check
// catches the rest.

var (
	explicitRe = regexp.MustCompile(`(?i)\bexplicit\w*\b`)
	// emptyCaseRe: a line that tests for empty input (if not xs, len(xs)
	// == 0, xs == []), or catches what an empty one raises.
	emptyCaseRe = regexp.MustCompile(`^[ \t]+(?:.*\b(?:if|while|and|or)\s+(?:not\s+)?(?:[A-Za-z_]\w*|len\([^()]*\))\s*(?::|\belse\b|\band\b|\bor\b|\)|$)|.*\blen\([^()]*\)\s*(?:==\s*0|<\s*1|<=\s*0|>\s*0|>=\s*1|!=\s*0)|.*(?:==|!=)\s*(?:\[\]|""|''|\(\)|\{\}|set\(\))|assert\s+(?:len\()?[A-Za-z_]\w*\)?\s*(?:,|$)|except\s*\(?\s*(?:IndexError|ValueError|ZeroDivisionError|StopIteration|KeyError)\b)`)
	// collectionUseRe: how a function uses an argument as a collection,
	// ARG standing for the argument's name.
	collectionUse = `\bfor\s+.+?\s+in\s+(?:\w+\()?ARG\b|\blen\(ARG\)|\bARG\[|\bin\s+ARG\b|\bARG\.\w+\(|\b(?:sorted|set|sum|max|min|list|tuple|enumerate|zip|reversed|Counter|map|filter|any|all|join|iter|next|nlargest|nsmallest|heapify|combinations|permutations|product|chain|groupby|accumulate|deque|findall|finditer|search|match|fullmatch|sub|split)\((?:[^()]*,\s*)?ARG\b`
)

// AsksForExplicitEmpty reports whether a request asks for the handling of
// empty input to be made explicit ("make f handle an empty input
// explicitly").
func AsksForExplicitEmpty(request string) bool {
	return AsksAboutEmpty(request) && explicitRe.MatchString(request)
}

// EmptyCases counts the lines of code that test for empty input or catch
// what it raises.
func EmptyCases(code string) int {
	n := 0
	for _, l := range strings.Split(NormalizeCode(StripDocstrings(code)), "\n") {
		if emptyCaseRe.MatchString(l) {
			n++
		}
	}
	return n
}

// whileLineRe: a while loop's header. `while xs:` goes over the input
// until it is used up; it gives empty input no path of its own.
var whileLineRe = regexp.MustCompile(`^\s*while\b`)

// assignFromRe: a plain assignment of one name.
var assignFromRe = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*=\s*([^=].*)$`)

// EmptyPaths counts the lines of code that give empty input a path of
// its own: a test (EmptyCases) that names an argument the code uses as a
// collection (CollectionArgs), not in a while loop's header, or an except
// clause that catches what an empty one raises. `if not n:` over a number
// tests for zero, not for empty input.
func EmptyPaths(code string) int {
	args := CollectionArgs(code)
	lines := strings.Split(NormalizeCode(StripDocstrings(code)), "\n")
	// A name set from a collection argument alone (s = sorted(xs)) is
	// empty when it is: testing it tests the input.
	for _, l := range lines {
		if m := assignFromRe.FindStringSubmatch(l); m != nil && !args[m[1]] {
			for _, w := range identRe.FindAllString(m[2], -1) {
				if args[w] {
					args[m[1]] = true
					break
				}
			}
		}
	}
	n := 0
	for _, l := range lines {
		if !emptyCaseRe.MatchString(l) || whileLineRe.MatchString(l) {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "except") {
			n++
			continue
		}
		for _, w := range identRe.FindAllString(l, -1) {
			if args[w] {
				n++
				break
			}
		}
	}
	return n
}

// CollectionArgs is the set of the arguments of every function of code
// that the code uses as a collection (see CollectionArg).
func CollectionArgs(code string) map[string]bool {
	out := map[string]bool{}
	for _, d := range pyDefRe.FindAllStringSubmatch(code, -1) {
		if a := CollectionArg(code, d[1]); a != "" {
			out[a] = true
		}
		// a later argument may be the collection too (f(n, xs))
		for _, p := range strings.Split(d[2], ",") {
			m := paramName.FindStringSubmatch(strings.TrimSpace(p))
			if m == nil || out[m[1]] || m[1] == "self" || m[1] == "cls" {
				continue
			}
			if regexp.MustCompile(strings.ReplaceAll(collectionUse, "ARG", regexp.QuoteMeta(m[1]))).MatchString(StripDocstrings(code)) {
				out[m[1]] = true
			}
		}
	}
	return out
}

// CollectionArg is the first argument of function fn in code (of any
// function when fn is "") that the code uses as a collection: iterates,
// indexes, measures, searches or hands to a function that takes one. That
// argument can be empty; "" when there is none.
func CollectionArg(code, fn string) string {
	body := StripDocstrings(code)
	for _, d := range pyDefRe.FindAllStringSubmatch(code, -1) {
		if fn != "" && d[1] != fn {
			continue
		}
		for _, p := range strings.Split(d[2], ",") {
			m := paramName.FindStringSubmatch(strings.TrimSpace(p))
			if m == nil || m[1] == "self" || m[1] == "cls" {
				continue
			}
			if regexp.MustCompile(strings.ReplaceAll(collectionUse, "ARG", regexp.QuoteMeta(m[1]))).MatchString(body) {
				return m[1]
			}
		}
	}
	return ""
}

// NoEmptyPath reports whether a revision fails a request to make empty
// input explicit: the request asks for it, a function takes an argument
// that can be empty (CollectionArg), and the code after has no line that
// gives empty input a path of its own (EmptyPaths). A function with no
// collection argument has no empty input, and saying so answers the
// request.
func NoEmptyPath(after, request string) bool {
	return AsksForExplicitEmpty(request) && CollectionArg(after, "") != "" && EmptyPaths(after) == 0
}
