package gates

import "regexp"

// fillerRe matches stock clauses that claim an answer fits the request
// without saying anything of the code: "which is what the request asks
// for", "its result is what the task asks for". Repeated over a corpus
// they teach a model to assert fit instead of showing it.
var fillerRe = regexp.MustCompile(`(?i)\b(which|that|this) is (exactly |just )?what the (request|task|user|question|checks?) (asks?( for)?|expects?|wants?|compared)\b|\b(its|the) result is what the (task|request) asks for\b|\breturns the value the (task|request) (describes|asks for)\b|\bapplies the rule from the task\b|\bso it can be used directly from other code\b|\bkeeps the name and arguments the task gives it\b`)

// Filler returns the first sentence of text's prose that holds a stock
// fit claim, or "".
func Filler(text string) string {
	for _, s := range proseSentences(text) {
		if fillerRe.MatchString(s) {
			return s
		}
	}
	return ""
}

// Fillers lists every sentence of text's prose that holds one (for
// CutClaims).
func Fillers(text string) []string {
	var out []string
	for _, s := range proseSentences(text) {
		if fillerRe.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}
