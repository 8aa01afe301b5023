package gates

import (
	"regexp"
	"strings"
)

// A request for speed is met by code that does less work, not by code
// that is merely different: a revision that says it is faster while its
// loops, scans and calls do what they did before teaches a model to claim
// speed-ups it did not make. The cost read here is structural (no timing):
// recursion that calls itself more than once per call with no cache is
// exponential; otherwise the deepest nesting of loops, one more where a
// loop body searches a sequence (`x in xs`, `xs.count(x)`).

var (
	speedAskRe   = regexp.MustCompile(`(?i)\b(faster|quick(ly|er)?|speed|performance|larger inputs|scales?)\b`)
	speedClaimRe = regexp.MustCompile(`(?i)\b(faster|quicker|speeds? (it |this )?up|sped up|less time|the time (now )?grows|in linear time|O\([^)]*\))`)
	memoRe       = regexp.MustCompile(`\blru_cache\b|\bfunctools\.cache\b|@cache\b|\bmemo\w*\[|\bcache\w*\[`)
	// scanInRe: a membership test against a name (not a for's "in").
	scanInRe    = regexp.MustCompile(`\b(?:not\s+)?in\s+([A-Za-z_]\w*)\s*(?:[:)\],]|$|\s+(?:and|or|if|else)\b)`)
	scanCallRe  = regexp.MustCompile(`\b([A-Za-z_]\w*)\.(count|index)\(`)
	forInRe     = regexp.MustCompile(`\bfor\s+[\w\s,()]+?\s+in\s+([A-Za-z_]\w*)`)
	hashedRe    = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*=\s*(set\(|frozenset\(|dict\(|Counter\(|collections\.Counter\(|\{)`)
	pyCallOfRe  = func(fn string) *regexp.Regexp { return regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\s*\(`) }
	defHeaderRe = regexp.MustCompile(`^(\s*)def\s+([A-Za-z_]\w*)\s*\(`)
)

// AsksForSpeed reports whether a request asks for faster code.
func AsksForSpeed(request string) bool { return speedAskRe.MatchString(request) }

// ClaimsSpeedup returns the first prose sentence of answer that says the
// code is now faster, or "".
func ClaimsSpeedup(answer string) string {
	for _, s := range proseSentences(answer) {
		if speedClaimRe.MatchString(s) {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// cost ranks code's work: 100 for uncached recursion that calls itself
// twice or more per call, plus the loop depth, plus one for a search of a
// sequence inside a loop.
func cost(code string) int {
	code = NormalizeCode(StripDocstrings(code))
	c := CountPasses(code).Depth
	if treeRecursive(code) && !memoRe.MatchString(code) {
		c += 100
	}
	if ScansInLoop(code) {
		c++
	}
	return c
}

// treeRecursive reports whether a function of code calls itself twice or
// more in one statement (`fib(n - 1) + fib(n - 2)`): calls on separate
// branches (`if y < 0: return -f(x, -y)` ... `return x + f(x, y - 1)`) are
// one per call, and a cache would save nothing.
func treeRecursive(code string) bool {
	lines := strings.Split(strings.ReplaceAll(code, "\\\n", " "), "\n")
	for i, l := range lines {
		m := defHeaderRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		re := pyCallOfRe(m[2])
		for _, b := range lines[i+1:] {
			if strings.TrimSpace(b) != "" && len(b)-len(strings.TrimLeft(b, " \t")) <= len(m[1]) {
				break
			}
			if len(re.FindAllString(b, -1)) >= 2 {
				return true
			}
		}
	}
	return false
}

// TreeRecursive is treeRecursive for one function, fn, of code (its
// comments and docstrings left out: a docstring that quotes two calls
// calls nothing).
func TreeRecursive(code, fn string) bool {
	lines := strings.Split(NormalizeCode(StripDocstrings(code)), "\n")
	for i, l := range lines {
		if m := defHeaderRe.FindStringSubmatch(l); m != nil && m[2] == fn {
			end := i + 1
			for ; end < len(lines) && (strings.TrimSpace(lines[end]) == "" || len(lines[end])-len(strings.TrimLeft(lines[end], " \t")) > len(m[1])); end++ {
			}
			return treeRecursive(strings.Join(lines[i:end], "\n"))
		}
	}
	return false
}

// ScansInLoop reports whether a loop body of code tests membership in, or
// counts or indexes into, a name that is not a set or dict built in code.
func ScansInLoop(code string) bool {
	hashed := map[string]bool{}
	lines := strings.Split(code, "\n")
	for _, l := range lines {
		if m := hashedRe.FindStringSubmatch(l); m != nil {
			hashed[m[1]] = true
		}
	}
	var loops []int
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " \t"))
		for len(loops) > 0 && indent <= loops[len(loops)-1] {
			loops = loops[:len(loops)-1]
		}
		loop := pyLoopRe.MatchString(l)
		inLoop := len(loops) > 0 || compLoopRe.MatchString(l) && !loop
		if inLoop {
			rest := forInRe.ReplaceAllString(l, "")
			for _, m := range scanInRe.FindAllStringSubmatch(rest, -1) {
				if !hashed[m[1]] {
					return true
				}
			}
			for _, m := range scanCallRe.FindAllStringSubmatch(rest, -1) {
				if !hashed[m[1]] {
					return true
				}
			}
		}
		if loop {
			loops = append(loops, indent)
		}
	}
	return false
}

// LowerCost reports whether after does less work than before by the
// structural measure above.
func LowerCost(before, after string) bool { return cost(after) < cost(before) }
