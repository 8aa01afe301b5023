package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary stand in for the codefeedback command in
// scripts: testscript re-executes it as "codefeedback" and the real main runs
// (runApp(ctx, newApp(), os.Args) and its error-to-exit-code mapping), so a
// script sees exactly the built program's output and exit status. main
// calls os.Exit itself on failure; returning means success.
func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, map[string]func() int{
		"codefeedback": func() int { main(); return 0 },
	}))
}

// TestScript runs the end-to-end scripts in testdata/script: what a user
// types, on real files, with the real bubblewrap sandbox. Scripts that need
// the sandbox skip when bwrap is missing, except in CI where it must exist.
func TestScript(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "true" {
		t.Fatalf("bwrap not found with CI=true: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("TESTSCRIPT_UPDATE") != "",
		Setup: func(env *testscript.Env) error {
			env.Values[fakeKey{}] = &fakeHolder{}
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":      cmdExits,
			"fakeopenai": func(ts *testscript.TestScript, neg bool, args []string) { cmdFakeOpenAI(t, ts, neg, args) },
		},
		// testscript's work directories are private (0700) and $TMPDIR
		// points inside them: the sandbox must work regardless (it once
		// needed a world-traversable $TMPDIR).
	})
}

// cmdExits is `exits CODE PROGRAM [ARGS...]`: like exec, but the program
// must exit with exactly CODE (exec's `!` only says "not zero"). Its stdout
// and stderr are kept for the stdout/stderr commands that follow.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad exit code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %s did not run: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exits: %s exited with %d, want %d", args[1], got, want)
	}
}
