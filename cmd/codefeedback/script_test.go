package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary stand in for the codefeedback command in
// scripts: testscript re-executes it as "codefeedback" and the real main runs
// (runApp(ctx, newApp(), os.Args) and its error-to-exit-code mapping), so a
// script sees exactly the built program's output and exit status. main
// calls os.Exit itself on failure; returning means success.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"codefeedback": main})
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
		// [docker]: a Docker engine answers and the sandbox image is there
		// (mandatory with CI=true, where .ci/setup provides both).
		Condition: func(cond string) (bool, error) {
			if cond != "docker" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			return dockerReady(t), nil
		},
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

var (
	dockerOnce sync.Once
	dockerOK   bool
)

// dockerReady reports whether scripts can use the Docker driver with the
// sandbox image named by $CODEFEEDBACK_SANDBOX_IMAGE (default
// codefeedback-sandbox:bookworm).
func dockerReady(t *testing.T) bool {
	dockerOnce.Do(func() {
		img := cmp.Or(os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE"), "codefeedback-sandbox:bookworm")
		err := exec.Command("docker", "image", "inspect", img).Run()
		dockerOK = err == nil
		if !dockerOK && os.Getenv("CI") == "true" {
			t.Errorf("Docker or the image %s is not available with CI=true: %v", img, err)
		}
	})
	return dockerOK
}
