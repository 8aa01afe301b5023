package executors

import (
	"regexp"
	"strings"
)

var exceptionLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::(?: .*)?)?$`)

// ParseTraceback finds the exception of a Python traceback in stderr: its
// type (e.g. "ZeroDivisionError", "json.decoder.JSONDecodeError") and the
// traceback's last line ("ZeroDivisionError: division by zero"). It handles
// chained exceptions (the last one wins) and SyntaxError-style reports whose
// block starts at `  File "...", line N` with no "Traceback" header. Both
// are empty when stderr holds no traceback.
func ParseTraceback(stderr string) (exception, line string) {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	// The last block start: a Traceback header, or a File line that is not
	// inside a Traceback (SyntaxError, IndentationError).
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			start = i
			break
		}
		if strings.HasPrefix(l, `  File "`) && start < 0 {
			start = i
		}
	}
	if start < 0 {
		return "", ""
	}
	for _, l := range lines[start+1:] {
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			continue
		}
		m := exceptionLine.FindStringSubmatch(l)
		if m == nil {
			return "", ""
		}
		return m[1], strings.TrimRight(l, " ")
	}
	return "", ""
}
