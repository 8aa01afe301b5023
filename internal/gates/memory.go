package gates

import (
	"regexp"
	"strings"
)

// Asked to keep memory small, a writer often keeps the code and says a
// different algorithm would be needed, over code whose memory can be cut
// without one: a list built only to be reduced to one value (a generator
// gives the same), or a table of n + 1 entries of which every step reads
// only the two before it (two variables give the same).

var (
	memoryAskRe = regexp.MustCompile(`(?i)\b(memory|lighter)\b`)
	// listReducedRe: a list comprehension handed straight to a reduction.
	listReducedRe = regexp.MustCompile(`\b(?:sum|max|min|any|all)\(\[[^\[\]]*\bfor\b[^\[\]]*\]\)`)
	// tableRe: `A = [0] * (n + 1)`.
	tableRe   = regexp.MustCompile(`(?m)^[ \t]+([A-Za-z_]\w*)\s*=\s*\[[^\[\]]+\]\s*\*\s*\(\s*([A-Za-z_]\w*)\s*\+\s*1\s*\)\s*$`)
	fromTwoRe = regexp.MustCompile(`(?m)^[ \t]+for\s+([A-Za-z_]\w*)\s+in\s+range\(\s*2\s*,\s*([A-Za-z_]\w*)\s*\+\s*1\s*\)\s*:`)
)

// AsksForLessMemory reports whether a request asks for less memory.
func AsksForLessMemory(request string) bool { return memoryAskRe.MatchString(request) }

// ReducibleMemory returns what in code holds more memory than its result
// needs, where the same result needs no other algorithm: a list
// comprehension handed to a reduction, or a table whose every entry but
// the returned one is read only by the next two steps; "" when neither
// shows.
func ReducibleMemory(code string) string {
	code = NormalizeCode(StripDocstrings(code))
	if m := listReducedRe.FindString(code); m != "" {
		return m
	}
	for _, t := range tableRe.FindAllStringSubmatch(code, -1) {
		loop := fromTwoRe.FindStringSubmatch(code)
		if loop == nil || loop[2] != t[2] {
			continue
		}
		i, n := regexp.QuoteMeta(loop[1]), regexp.QuoteMeta(t[2])
		ok := regexp.MustCompile(`^(?:0|1|` + i + `|` + i + `\s*-\s*1|` + i + `\s*-\s*2|` + n + `)$`)
		all, reads := true, 0
		for _, ix := range regexp.MustCompile(`\b`+regexp.QuoteMeta(t[1])+`\[([^\[\]]*)\]`).FindAllStringSubmatch(code, -1) {
			if !ok.MatchString(strings.TrimSpace(ix[1])) {
				all = false
				break
			}
			reads++
		}
		// every other use of the name is an index: the table as a whole
		// (returned, passed on) is needed
		uses := len(regexp.MustCompile(`\b`+regexp.QuoteMeta(t[1])+`\b`).FindAllString(code, -1))
		if all && reads > 0 && uses == reads+1 {
			return t[1]
		}
	}
	return ""
}
