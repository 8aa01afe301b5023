package gates

import (
	"regexp"
	"strings"
)

// An explanation that only walks through the code's structure ("a loop
// takes i from range(n) and updates t; it returns t") says what any
// reader sees in the code and nothing of what it computes. An
// explanation of a first answer says what the function is for, in the
// task's own terms: it shares a content word with the request.

// structural words, and words every task statement has: sharing them
// shows no purpose.
var structural = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`write writes written function functions python program code given return returns returned
		value values result results input inputs output outputs argument arguments element elements loop loops
		check checks task tasks number numbers list lists string strings take takes each every from with that this
		which then when into over their them there these those what will should would could have using uses used
		also only than case cases first last call calls called whether test tests line lines step steps`) {
		structural[w] = true
	}
}

// stem folds a word's common endings so "finds" meets "find", "counted"
// "count".
func stem(w string) string {
	for _, suf := range []string{"ies", "ing", "es", "ed", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			if suf == "ies" {
				return w[:len(w)-3] + "y"
			}
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// contentWords are the words of text, outside fenced code and
// backquotes, of four letters or more that are not structural, stemmed.
func contentWords(text string) map[string]bool {
	text = fenceBlockRe.ReplaceAllString(text, " ")
	text = tickedRe.ReplaceAllString(text, " ")
	out := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(strings.ToLower(text), -1) {
		if len(w) >= 4 && !structural[w] && !common[w] {
			out[stem(w)] = true
		}
	}
	return out
}

var fenceBlockRe = regexp.MustCompile("(?s)```.*?(```|$)")

// NamesPurpose reports whether an explanation says what the code is for
// in the request's terms: a content word of the request (outside its
// code) in the explanation's prose outside backquotes. A request with no
// content word of its own passes.
func NamesPurpose(explanation, request string) bool {
	want := contentWords(request)
	if len(want) == 0 {
		return true
	}
	for w := range contentWords(explanation) {
		if want[w] {
			return true
		}
	}
	return false
}
