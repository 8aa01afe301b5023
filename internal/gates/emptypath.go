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
// tests for empty input (EmptyCases). A function with no collection
// argument has no empty input, and saying so answers the request.
func NoEmptyPath(after, request string) bool {
	return AsksForExplicitEmpty(request) && CollectionArg(after, "") != "" && EmptyCases(after) == 0
}
