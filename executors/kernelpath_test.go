package executors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// kernelPathCells is the session's count of cells that went from the host
// straight to the kernel (executors' session.KernelPathCells).
type kernelPathCells interface{ KernelPathCells() int }

// TestKernelPath: on bwrap with cgroups, a python session's plain cells go
// from the host to the kernel without the runner, and the cells the runner
// still takes (non-ASCII, handed back to the AST compile, a kernel that
// exits, a limit passed, a thread left running) come out as before, with
// cell names numbered across both paths.
func TestKernelPath(t *testing.T) {
	ctx := context.Background()
	ex := bwrapPool(t)
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{
		Limits: executors.Limits{Timeout: time.Second, WallTimeout: 5 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kp, ok := s.(kernelPathCells)
	if !ok {
		t.Fatal("the session does not count its kernel-path cells")
	}
	for i, c := range []struct {
		cell           string
		exit           int
		stdout, stderr string // substrings
		direct         bool   // whether the cell stays off the runner
		timedOut       bool
	}{
		{"x = 41", 0, "", "", true, false},
		{"x + 1", 0, "42\n", "", true, false},
		{"print('é', x)", 0, "é 41\n", "", false, false},
		{"1 / 0", 1, "", "File \"<cell-4>\", line 1", true, false},
		{"def f(:\n    pass", 1, "", "File \"<cell-5>\", line 1", false, false}, // handed back: the AST reports it
		{"import sys\nsys.stdout.write('a' * 70000)", 0, "[... output truncated at 65536 bytes ...]", "", true, false},
		{"import os\nos._exit(3)", 3, "", "exited with status 3", false, false},
		{"print('x' in globals())", 0, "False\n", "", true, false},
		{"while True:\n    pass", 137, "", "more than 1 CPU-seconds", false, true},
		{"y = 2\nprint(y)", 0, "2\n", "", true, false},
	} {
		before := kp.KernelPathCells()
		res, err := s.Exec(ctx, c.cell)
		if err != nil {
			t.Fatalf("cell %d %q: %v", i+1, c.cell, err)
		}
		if res.ExitCode != c.exit || !strings.Contains(res.Stdout, c.stdout) || !strings.Contains(res.Stderr, c.stderr) || res.TimedOut != c.timedOut {
			t.Errorf("cell %d %q: got exit %d, timed out %v, stdout %q, stderr %q; want exit %d, timed out %v, stdout with %q, stderr with %q",
				i+1, c.cell, res.ExitCode, res.TimedOut, trim(res.Stdout), trim(res.Stderr), c.exit, c.timedOut, c.stdout, c.stderr)
		}
		if got := kp.KernelPathCells() - before; got != map[bool]int{true: 1, false: 0}[c.direct] {
			t.Errorf("cell %d %q: %d cells went on the kernel path, want direct=%v", i+1, c.cell, got, c.direct)
		}
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:150] + "..." + s[len(s)-150:]
	}
	return s
}
