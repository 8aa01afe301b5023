package gates

import (
	"regexp"
	"strings"
)

// A writer often says, unasked, that its code handles empty or edge-case
// input ("empty lists go through the same path, so they need no special
// branch"). Over code that crashes on such input the sentence teaches a
// false claim; the simulate stage runs the code to check it.
var (
	// claimVerbRe: words that state the input is dealt with.
	claimVerbRe = regexp.MustCompile(`(?i)\b(handl\w*|same path|no special|works?|working|fine|covered|covers?|safe(ly)?|returns?|gives?|yields?)\b`)
	// hedgeRe: a sentence that says the input is not handled, asks, or
	// states a precondition is no claim that it is.
	hedgeRe = regexp.MustCompile(`(?i)(\bnot\b|n't\b|\bcannot\b|\bfail\w*|\braise\w*|\berrors?\b|\bexceptions?\b|\bcrash\w*|\bundefined\b|\bunsupported\b|\bassum\w*|\bnon-?empty\b|\bmust\b|\bshould\b|\?)`)
	// sentenceRe: a sentence of prose, its closing punctuation included.
	sentenceRe = regexp.MustCompile(`[^.!?\s][^.!?]*(?:[.!?]+|$)`)
)

// singleRe: a claim that names one-element input.
var singleRe = regexp.MustCompile(`(?i)\b(single[- ](element|item|value|character|entry)|one[- ](element|item)|length (one|1))\b`)

// NamesSingleElement reports whether text speaks of one-element input.
func NamesSingleElement(text string) bool { return singleRe.MatchString(text) }

// EdgeClaims returns the sentences of text's prose (outside code blocks)
// that say the code handles empty or edge-case input.
func EdgeClaims(text string) []string {
	var out []string
	for _, s := range proseSentences(text) {
		if emptyWordRe.MatchString(s) && claimVerbRe.MatchString(s) && !hedgeRe.MatchString(s) {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// proseSentences returns the sentences of text outside its code blocks,
// each within one line.
func proseSentences(text string) []string {
	var out []string
	inCode := false
	for _, l := range strings.Split(text, "\n") {
		if fenceRe.MatchString(l) {
			inCode = !inCode
			continue
		}
		if !inCode {
			out = append(out, sentenceRe.FindAllString(l, -1)...)
		}
	}
	return out
}

// CutClaims removes the sentences claims (from EdgeClaims) from text's
// prose, leaving its code blocks and the other sentences as they were.
func CutClaims(text string, claims []string) string {
	lines := strings.Split(text, "\n")
	inCode := false
	for i, l := range lines {
		if fenceRe.MatchString(l) {
			inCode = !inCode
			continue
		}
		if inCode {
			continue
		}
		for _, c := range claims {
			if j := strings.Index(l, c); j >= 0 {
				l = strings.TrimRight(l[:j], " ") + " " + strings.TrimLeft(l[j+len(c):], " ")
				l = strings.TrimSpace(l)
			}
		}
		lines[i] = l
	}
	// A paragraph that was only claims leaves no run of blank lines.
	out := lines[:0]
	for i, l := range lines {
		if l == "" && i > 0 && len(out) > 0 && out[len(out)-1] == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
