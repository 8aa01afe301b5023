package verify

import (
	"regexp"
	"strings"
)

// What may differ between two honest runs of the same code, and nothing
// else: clock times and dates, durations, and memory addresses (object
// reprs). A printed value that changed is never normalised away.
var (
	timestampRe = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b`)
	clockRe     = regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`)
	// Go-style ("1.5s", "2m30s", "250ms", "3µs") and worded ("0.12 seconds").
	durationRe = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:(?:h|m|s|ms|us|µs|ns)(?:\d+(?:\.\d+)?(?:h|m|s|ms|us|µs|ns))*| (?:ms|us|µs|ns|s))\b|\b\d+(?:\.\d+)?(?:e-?\d+)? ?(?:seconds?|secs?|milliseconds?|microseconds?|nanoseconds?|minutes?|mins?|hours?)\b`)
	// An object's address as reprs print it ("<Foo object at 0x7f..>"); a
	// hex value the code prints is a value.
	addressRe = regexp.MustCompile(`\bat 0x[0-9a-fA-F]+\b`)
)

// normalize prepares an execution text for comparison: colour codes,
// trailing blanks and line-ending differences go, then times, durations
// and addresses are replaced by placeholders.
func normalize(s string) string {
	s = ansiRe.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	// Leading blank lines, and the first line's indentation: trainer
	// layouts trim a turn's text (a SyntaxError's "  File ..." loses its
	// indent).
	s = strings.TrimLeft(strings.Trim(strings.Join(lines, "\n"), "\n"), " \t\n")
	s = timestampRe.ReplaceAllString(s, "<time>")
	s = clockRe.ReplaceAllString(s, "<time>")
	s = durationRe.ReplaceAllString(s, "<duration>")
	return addressRe.ReplaceAllString(s, "at 0x<address>")
}

// sameOutput reports whether two execution texts agree after normalize.
func sameOutput(a, b string) bool { return normalize(a) == normalize(b) }
