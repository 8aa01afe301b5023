package correct

import (
	"strings"
	"testing"
)

// TestRecap: the closing turn names the failure and the one line whose
// fix cured it, and says nothing where that line is not alone.
func TestRecap(t *testing.T) {
	const fixed = "def f(xs):\n    total = sum(xs)\n    return total"
	for _, c := range []struct {
		name, observed, buggy string
		want                  []string // all in the recap; none: it is ""
	}{
		{"name", "NameError", "def f(xs):\n    total = sum(xss)\n    return total", []string{"undefined name", "line 2"}},
		{"type", "TypeError", "def f(xs):\n    total = sum(xs) + ''\n    return total", []string{"`TypeError`", "line 2"}},
		{"syntax", "SyntaxError", "def f(xs)\n    total = sum(xs)\n    return total", []string{"syntax error", "line 1"}},
		{"wrong answer", observedWrongAnswer, "def f(xs):\n    total = sum(xs)\n    return -total", []string{"wrong result", "line 3"}},
		{"timeout", observedTimeout, "def f(xs):\n    total = sum(xs)\n    while True: pass", []string{"endless loop", "line 3"}},
		{"a trailing newline more", "NameError", "def f(xs):\n    total = sum(xss)\n    return total\n", []string{"undefined name", "line 2"}},
		{"two lines apart", "NameError", "def f(xs):\n    total = sum(xss)\n    return totl", nil},
		{"a line missing", observedWrongAnswer, "def f(xs):\n    total = sum(xs)", nil},
		{"the same code", "NameError", fixed, nil},
		{"no kind", observedPass, "def f(xs):\n    total = sum(xs) \n    return total", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := recap("dlg-x", judgedRun{Observed: c.observed}, c.buggy, fixed)
			if c.want == nil {
				if got != "" {
					t.Fatalf("recap = %q, want none", got)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("recap = %q, want it to name %q", got, w)
				}
			}
		})
	}
}
