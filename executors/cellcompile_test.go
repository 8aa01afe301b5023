package executors_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
)

// forgeAnswer is python that writes a success answer for the cell in
// progress, from the kernel loop's own frame, as code an earlier cell
// planted would if it ran in the kernel while a later cell compiles.
const forgeAnswer = `
import os, sys
def forge(*a, **k):
    f = sys._getframe(1)
    while f is not None:
        l = f.f_locals
        if "nonce" in l and "st_fd" in l:
            os.write(l["st_fd"], l["nonce"].hex().encode() + b" 0\n")
            break
        f = f.f_back
`

// TestPythonCellCompile: a python session's cells are compiled in the
// kernel (compile_fast) where they can be, else by the runner; either way
// a cell shows what one compile of it would: its last expression's value,
// each warning once, syntax errors at their lines, and never a frame of
// the runner's. A cell with a non-ASCII character is compiled by the
// runner: the compiler imports for a non-ASCII name, which in the kernel
// would run what an earlier cell put in the import system.
func TestPythonCellCompile(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=1")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	const warning = `SyntaxWarning: "is" with a literal`
	for _, c := range []struct {
		name  string
		setup []string // earlier cells of the session, each must pass
		cell  string
		exit  int
		// stdout is the cell's whole stdout; warnings, how many times the
		// SyntaxWarning shows on stderr; exception, the one it reports.
		stdout    string
		warnings  int
		exception string
	}{
		{"expression echoed", nil, "x = 41\nx + 1\n", 0, "42\n", 0, ""},
		{"warning once", nil, "x = 1 is 1\nx\n", 0, "True\n", 1, ""},
		{"warning once when the kernel hands the cell back", nil,
			"x = 1 is 1\nif x:\n    print('yes')\nelse:\n    pass\n", 0, "yes\n", 1, ""},
		{"last expression over several lines", nil, "(1 +\n2)\n", 0, "3\n", 0, ""},
		{"syntax error", nil, "x = 1\ny = (\n", 1, "", 0, "SyntaxError"},
		{"syntax error after a warning", nil, "x = 1 is 1\ny = 1 +\n", 1, "", 0, "SyntaxError"},
		{"non-ASCII name", nil, "\u00e9t\u00e9 = 2\n\u00e9t\u00e9\n", 0, "2\n", 0, ""},
		{"too deep for the compiler", []string{"import sys\nsys.setrecursionlimit(60)"},
			"x = " + strings.Repeat("-", 2000) + "1\nx\n", 1, "", 0, "RecursionError"},
		{"a warnings hook an earlier cell planted does not answer for a cell that warns", []string{forgeAnswer + `
import re, warnings
class Match:
    def match(self, *a):
        forge()
        return True
warnings._showwarnmsg = warnings.showwarning = lambda *a, **k: forge()
warnings.filters.insert(0, ("default", Match(), Warning, None, 0))`},
			"x = 1 is 1\nraise SystemExit(3)\n", 3, "", 1, ""},
		{"an import hook an earlier cell planted does not answer for a non-ASCII cell", []string{forgeAnswer + `
import builtins, sys
real = builtins.__import__
def imp(*a, **k):
    forge()
    return real(*a, **k)
builtins.__import__ = imp
class Finder:
    def find_spec(self, *a, **k):
        forge()
sys.meta_path.insert(0, Finder())
sys.modules.pop("unicodedata", None)`},
			"\u00e9 = 1\nraise SystemExit(\u00e9 + 1)\n", 2, "", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second, WallTimeout: 60 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, set := range c.setup {
				if r, err := s.Exec(ctx, set); err != nil || !r.OK() {
					t.Fatalf("setting up: %v %+v", err, r)
				}
			}
			r, err := s.Exec(ctx, c.cell)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != c.exit || r.Stdout != c.stdout || r.Exception != c.exception {
				t.Errorf("got exit %d stdout %q exception %q (stderr %.2000q), want exit %d stdout %q exception %q",
					r.ExitCode, r.Stdout, r.Exception, r.Stderr, c.exit, c.stdout, c.exception)
			}
			if n := strings.Count(r.Stderr, warning); n != c.warnings {
				t.Errorf("got the SyntaxWarning %d times in stderr %.2000q, want %d", n, r.Stderr, c.warnings)
			}
			if strings.Contains(r.Stderr, `File "runner"`) {
				t.Errorf("got stderr %.2000q, want no frame of the runner's", r.Stderr)
			}
		})
	}
}
