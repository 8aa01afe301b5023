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
		{"python splits the burn across processes", executors.Python, burn, "x = 1", `import os
for _ in range(4):
    if os.fork() == 0:
        os.setsid()  # out of the kernel's process group too
        while True:
            pass
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
