package gates

import (
	"regexp"
	"strings"
)

// A writer asked for a change may keep the code and say why; that is a
// good answer when the reason is about what was asked. Asked for a
// clearer layout, older Python versions or less memory, a reply that adds
// an unasked docstring and says "no code change is needed: the code
// already does what the task asks" dodges the request, and a judge model
// that accepts everything lets it through.

// docsRe matches a request that a docstring or a comment can meet.
var docsRe = regexp.MustCompile(`(?i)\b(docstrings?|comments?|commented|document\w*|explain\w*|describ\w*|type hints?|annotat\w*|readab\w*|clarif\w*)\b`)

// AsksForDocs reports whether a request asks for documentation, comments
// or explanation: one that a docstring alone can meet. Names in
// backticks are not read (`describe_all` asks for nothing).
func AsksForDocs(request string) bool {
	return docsRe.MatchString(tickedRe.ReplaceAllString(request, " "))
}

var (
	// wordRe: a word of prose, contractions and hyphens included.
	wordRe = regexp.MustCompile(`[A-Za-z][A-Za-z'-]*`)
	// tickedRe: a span in backticks (a name or a snippet of code).
	tickedRe = regexp.MustCompile("`[^`\n]*`")
)

// vague lists words that say nothing of what a request is about: a reason
// that shares only these with the request does not address it.
var vague = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`about above after again also always answer any anything asked asks
		before being below better change changed changes changing code could does doing done each else
		even every example explicit explicitly fine from function functions give gives have here into
		just keep keeping kept leave like line lines make makes making more most much need needed needs
		only other please program rather really result results same should show shown some still such
		sure task than that their them then there these they thing things this those through under
		using value values very want what when where which while will with within without work works
		would your input inputs output outputs return returns returned version versions whole case cases
		instead though thanks passes pass passed test tests check checks already
		use uses used inside`) {
		m[w] = true
	}
	return m
}()

// topicWords returns the words of text that can carry its topic: four
// letters or more, not vague, outside backticks (a function's name says
// nothing of what was asked about it).
func topicWords(text string) []string {
	text = tickedRe.ReplaceAllString(text, " ")
	var out []string
	for _, w := range wordRe.FindAllString(text, -1) {
		w = strings.ToLower(strings.Trim(w, "'-"))
		if len(w) >= 4 && !vague[w] {
			out = append(out, w)
		}
	}
	return out
}

// sameStem reports whether two words are forms of one ("memory"/"memory",
// "fast"/"faster", "recompute"/"recomputing"): one is a prefix of the
// other, or they share their first five letters.
func sameStem(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(b, a) || len(a) >= 5 && a[:5] == b[:5]
}

// KeepsForRequest reports whether answer says why the code stays as it
// is in terms of request: a sentence of its prose that explains no change
// (ExplainsNoChange), or the sentence after it, shares a topic word with
// the request. "No change is needed for memory: it keeps two counters"
// addresses "keep the memory small"; "no code change is needed: the code
// already does what the task asks" addresses nothing.
func KeepsForRequest(request, answer string) bool {
	asked := topicWords(request)
	if len(asked) == 0 {
		// Nothing to compare with ("please change it"): the reason
		// cannot be held to a topic.
		return ExplainsNoChange(answer)
	}
	var sentences []string
	inCode := false
	for _, l := range strings.Split(answer, "\n") {
		if fenceRe.MatchString(l) {
			inCode = !inCode
			continue
		}
		if !inCode {
			sentences = append(sentences, sentenceRe.FindAllString(l, -1)...)
		}
	}
	for i, s := range sentences {
		if !keepRe.MatchString(s) {
			continue
		}
		reason := s
		if i+1 < len(sentences) {
			reason += " " + sentences[i+1]
		}
		for _, w := range topicWords(reason) {
			for _, a := range asked {
				if sameStem(w, a) {
					return true
				}
			}
		}
	}
	return false
}
