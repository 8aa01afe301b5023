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
	sentences := proseSentences(answer)
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

// ExplainsCode reports whether the comments and docstrings that after
// adds to before name something of the code (NamesCode): asked how a
// function works, "Build the result in steps: each intermediate value has
// a name" explains nothing. Text already in before does not count.
func ExplainsCode(before, after string) bool {
	had := map[string]bool{}
	for _, l := range strings.Split(DocText(before), "\n") {
		had[strings.TrimSpace(l)] = true
	}
	var added []string
	for _, l := range strings.Split(DocText(after), "\n") {
		if t := strings.TrimSpace(l); t != "" && !had[t] {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return false
	}
	text := strings.Join(added, "\n")
	code := NormalizeCode(StripDocstrings(after)) // without the comments themselves
	if NamesCode(text, code) || codeWordRe.MatchString(text) {
		return true
	}
	// The code's other names count too, as the code spells them; a short
	// or common one ("A", "result") only where the text writes it as code
	// ("returns A[n]", "`result`"), since as a word it says nothing.
	names := map[string]bool{}
	for _, w := range identRe.FindAllString(code, -1) {
		names[w] = !pyKeywords[w]
	}
	for _, at := range identRe.FindAllStringIndex(text, -1) {
		w := text[at[0]:at[1]]
		if !names[w] {
			continue
		}
		if len(w) >= 3 && !common[strings.ToLower(w)] {
			return true
		}
		asCode := at[1] < len(text) && strings.IndexByte("[(.`", text[at[1]]) >= 0 ||
			at[0] > 0 && text[at[0]-1] == '`'
		if asCode {
			return true
		}
	}
	return false
}

// codeWordRe: words that say how code works (a loop, recursion, an index)
// rather than that it works.
var codeWordRe = regexp.MustCompile(`(?i)\b(loops?|iterat\w*|recurs\w*|index\w*|slic\w*|dictionar\w*|hash\w*|stack|queue|sorts?|sorted|regex\w*|regular expression|pattern|counter|modulo|remainder|divis\w*|dynamic programming|memo\w*|binary search|two pointers?|prefix sums?)\b`)

var pyKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`False None True and as assert async await break class continue def del elif else except
		finally for from global if import in is lambda nonlocal not or pass raise return try while with yield`) {
		m[w] = true
	}
	return m
}()
