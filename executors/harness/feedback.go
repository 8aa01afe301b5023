package harness

import (
	"fmt"
	"strings"
)

// feedbackChars caps the whole feedback text; what is cut is marked.
const feedbackChars = 8000

// Feedback renders a verdict as the next turn of a dialogue: what the tests
// found, in the words of an execution log. Everything in it is real output
// of the run (values, tracebacks, stdout), cut with visible markers.
func Feedback(v Verdict, opts Options) string {
	opts = opts.withDefaults()
	var b strings.Builder
	switch {
	case v.Passed:
		fmt.Fprintf(&b, "All %d %s passed.\n", v.Total, plural(v.Total, "test", "tests"))
	case v.Load != nil:
		writeLoad(&b, v.Load, opts)
	default:
		var notRun []string
		for _, c := range v.Cases {
			if c.NotRun {
				notRun = append(notRun, c.Test)
			}
		}
		failed := v.Total - v.PassedCount - len(notRun)
		if !v.Complete && v.Result.TimedOut {
			fmt.Fprintf(&b, "Execution timed out after %s.\n", fmtDur(opts.Timeout))
		}
		fmt.Fprintf(&b, "%d of %d %s failed", failed, v.Total, plural(v.Total, "test", "tests"))
		if len(notRun) > 0 {
			fmt.Fprintf(&b, "; %d did not run", len(notRun))
		}
		b.WriteString(".\n")
		shown := 0
		for _, c := range v.Cases {
			if c.Passed || c.NotRun {
				continue
			}
			if shown == opts.FeedbackFailures {
				more := failed - shown
				fmt.Fprintf(&b, "\n(%d more failing %s not shown)\n", more, plural(more, "test", "tests"))
				break
			}
			shown++
			b.WriteString("\n")
			writeCase(&b, c)
		}
		writeNotRun(&b, notRun, opts)
	}
	if v.Stdout != "" {
		b.WriteString("\nOutput printed by the code:\n")
		b.WriteString(strings.TrimRight(v.Stdout, "\n"))
		if v.StdoutBytes > int64(len(v.Stdout)) {
			fmt.Fprintf(&b, "\n[... output truncated: %d of %d bytes shown ...]", len(v.Stdout), v.StdoutBytes)
		}
		b.WriteString("\n")
	}
	return cut(b.String(), feedbackChars)
}

func writeLoad(b *strings.Builder, l *LoadFailure, opts Options) {
	where := map[string]string{
		"solution":    "the code",
		"setup":       "the test set-up",
		"test_import": "the test imports",
		"tests":       "the test code",
		"entry_point": "looking up the function under test",
	}[l.Stage]
	if where == "" {
		where = "loading"
	}
	switch {
	case l.Kind == KindSyntax:
		fmt.Fprintf(b, "The code does not compile (%s at line %d):\n", l.Exception, l.Line)
	case l.Kind == KindTimeout:
		fmt.Fprintf(b, "Execution timed out after %s while running %s, before any test ran.\n", fmtDur(opts.CaseTimeout), where)
		return
	case l.Stage == "solution":
		b.WriteString("The code raised an exception before any test ran:\n")
	default:
		fmt.Fprintf(b, "An exception was raised in %s, before any test ran:\n", where)
	}
	switch {
	case l.Traceback != "":
		b.WriteString(strings.TrimRight(l.Traceback, "\n"))
		b.WriteString("\n")
	default:
		fmt.Fprintf(b, "%s: %s\n", l.Exception, l.Message)
	}
	if l.Exception == "SystemExit" && l.Message != "" {
		fmt.Fprintf(b, "(%s)\n", l.Message)
	}
}

func writeCase(b *strings.Builder, c CaseResult) {
	switch c.Kind {
	case KindWrongAnswer:
		switch {
		case c.Input != "" && (c.Op == "==" || c.Op == "") && c.Expected == c.Actual && c.Expected != "":
			// Never "expected X, got X": the values print alike but differ
			// (NaN, a type with its own __eq__, a float's last digits cut).
			fmt.Fprintf(b, "Test failed for input %s: got %s, which prints like the expected value but does not compare equal to it\n", c.Input, c.Actual)
		case c.Input != "" && (c.Op == "==" || c.Op == ""):
			fmt.Fprintf(b, "Test failed for input %s: expected %s, got %s\n", c.Input, c.Expected, c.Actual)
		case c.Input != "":
			fmt.Fprintf(b, "Test failed for input %s: expected a value %s %s, got %s\n", c.Input, c.Op, c.Expected, c.Actual)
		default:
			b.WriteString("Test failed (AssertionError)")
			if c.Message != "" {
				fmt.Fprintf(b, ": %s", c.Message)
			}
			b.WriteString("\n")
		}
		writeIndented(b, c.Test)
	case KindTimeout:
		fmt.Fprintf(b, "Test timed out (%s):\n", c.Message)
		writeIndented(b, c.Test)
	default:
		b.WriteString("Test raised an exception:\n")
		writeIndented(b, c.Test)
		switch {
		case c.Traceback != "":
			b.WriteString(strings.TrimRight(c.Traceback, "\n"))
			b.WriteString("\n")
			if c.Exception == "SystemExit" {
				fmt.Fprintf(b, "(%s)\n", c.Message)
			}
		case c.Exception != "":
			fmt.Fprintf(b, "%s: %s\n", c.Exception, c.Message)
		default:
			b.WriteString(c.Message + "\n")
		}
	}
}

// writeNotRun lists the tests that never started because the run ended
// during an earlier one: saying they timed out or failed would be false.
func writeNotRun(b *strings.Builder, tests []string, opts Options) {
	if len(tests) == 0 {
		return
	}
	fmt.Fprintf(b, "\nNot run (the run ended during an earlier test):\n")
	for i, t := range tests {
		if i == opts.FeedbackFailures {
			fmt.Fprintf(b, "    (%d more)\n", len(tests)-i)
			break
		}
		writeIndented(b, t)
	}
}

func writeIndented(b *strings.Builder, s string) {
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteString("\n")
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cut shortens s to about n bytes on a line boundary, with a marker.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := s[:n]
	if i := strings.LastIndexByte(head, '\n'); i > n/2 {
		head = head[:i+1]
	}
	return head + fmt.Sprintf("[... feedback truncated: %d more bytes ...]\n", len(s)-len(head))
}
