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

// TestSessionCellLimits: a session cell's time limit is the CPU time of
// everything it runs, whatever it splits the work into, and the wall clock
// only caps a cell that waits. No case depends on how long anything takes:
// burners are given a wall cap of minutes (they pass their one CPU-second
// long before, at any load), sleepers a CPU limit they cannot reach.
func TestSessionCellLimits(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	// With the instance's cgroup the runner reads its CPU counter; without
	// one (cgroup=off, as for a user without cgroups) it adds up /proc.
	for _, url := range []string{"bwrap://?pool=1", "bwrap://?pool=1&cgroup=off"} {
		t.Run(url, func(t *testing.T) { testSessionCellLimits(t, url) })
	}
}

func testSessionCellLimits(t *testing.T, url string) {
	ctx := context.Background()
	ex, err := executors.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	burn := executors.Limits{Timeout: time.Second, WallTimeout: 5 * time.Minute}
	for _, c := range []struct {
		name       string
		lang       executors.Language
		lim        executors.Limits
		set, cell  string
		check      string // after the cell: shows whether set's state survived
		wantLimit  string // "" for a cell that must pass
		wantStdout string // of check
	}{
		{"python burns CPU", executors.Python, burn, "x = 1", "while True:\n    pass", "print('x' in globals())", executors.TimeLimitCPU, "False\n"},
		// A session cell cannot fork (its subinterpreter could not run in the
		// child): the burners are new processes, out of its process group.
		{"python splits the burn across processes", executors.Python, burn, "x = 1", `import os, subprocess, sys
for _ in range(4):
    subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
while True:
    os.wait()`, "print('x' in globals())", executors.TimeLimitCPU, "False\n"},
		{"python splits the burn across threads", executors.Python, burn, "x = 1", `import threading
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
threading.Event().wait()`, "print('x' in globals())", executors.TimeLimitCPU, "False\n"},
		{"python sleeps past its CPU limit", executors.Python, executors.Limits{Timeout: time.Second, WallTimeout: 10 * time.Minute},
			"x = 1", "import time\ntime.sleep(3)\nprint('woke')", "print('x' in globals())", "", "True\n"},
		{"python sleeps past the wall cap", executors.Python, executors.Limits{Timeout: time.Second, WallTimeout: 3 * time.Second},
			"x = 1", "import time\ntime.sleep(600)", "print('x' in globals())", executors.TimeLimitWall, "False\n"},
		{"bash burns CPU in background jobs", executors.Bash, burn, "x=1",
			"for i in 1 2 3 4; do (while :; do :; done) & done; wait", "echo \"[$x]\"", executors.TimeLimitCPU, "[]\n"},
		{"bash sleeps past its CPU limit", executors.Bash, executors.Limits{Timeout: time.Second, WallTimeout: 10 * time.Minute},
			"x=1", "sleep 3; echo woke", "echo \"[$x]\"", "", "[1]\n"},
		{"sql burns CPU", executors.SQL, burn, "CREATE TABLE t(a); INSERT INTO t VALUES (1);",
			"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;",
			"SELECT count(*) FROM sqlite_master;", executors.TimeLimitCPU, "\n0\n"},
		{"javascript burns CPU", executors.JavaScript, burn, "var x = 1;", "while (true) {}",
			"console.log(typeof x);", executors.TimeLimitCPU, "undefined\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ex.Open(ctx, c.lang, executors.SessionOptions{Limits: c.lim})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if r, err := s.Exec(ctx, c.set); err != nil || !r.OK() {
				t.Fatalf("setting state: %v %+v", err, r)
			}
			r, err := s.Exec(ctx, c.cell)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.wantLimit == "" && !r.OK():
				t.Errorf("got exit %d timed out %v (%s limit) stderr %q, want the cell to pass", r.ExitCode, r.TimedOut, r.TimeLimit, r.Stderr)
			case c.wantLimit != "" && (!r.TimedOut || r.TimeLimit != c.wantLimit || r.OK()):
				t.Errorf("got timed out %v, limit %q, ok %v (stderr %q), want a timeout at the %s limit", r.TimedOut, r.TimeLimit, r.OK(), r.Stderr, c.wantLimit)
			case c.wantLimit != "" && !strings.Contains(r.Stderr, "[sandbox: the cell "):
				t.Errorf("got stderr %q, want the sandbox's note naming the limit", r.Stderr)
			}
			r, err = s.Exec(ctx, c.check)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Stdout, c.wantStdout) {
				t.Errorf("after the cell got %q, want %q (a session stopped at a limit starts again empty)", r.Stdout, c.wantStdout)
			}
		})
	}
}

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
	ctx := context.Background()
	ex := bwrapPool(t)
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

// bwrapPool opens a one-slot bwrap pool for the test, or skips it where
// bubblewrap is not installed.
func bwrapPool(t *testing.T) executors.Executor {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	ex, err := executors.Open(context.Background(), "bwrap://?pool=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	return ex
}
