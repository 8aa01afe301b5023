package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// The intercode commands that open one environment's sandbox (check-golds,
// step, replay) answer alike: a bad --executor is a usage error, a sandbox
// that does not open is unreachable.
func TestIntercodeSandboxExitCodes(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-daemon.sock"))
	const testdata = "../../executors/env/pyenv/testdata/"
	for _, tc := range []struct {
		driver string
		want   int
	}{
		{"no-such-driver://", exitUsage},
		{"docker://?pool=x", exitUsage},
		{"docker://", exitUnreachable},
	} {
		o := replayOptions{Tasks: testdata + "ic_mbpp.json", Driver: tc.driver}
		err := runReplay(context.Background(), o, testdata+"ic_python_trajectories.json", io.Discard, io.Discard)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != tc.want {
			t.Errorf("replay on %s: got %v, want exit %d", tc.driver, err, tc.want)
		}
		o2 := stepOptions{Task: "0", Driver: tc.driver}
		err = runStep(context.Background(), o2, testdata+"ic_mbpp.json", []string{"submit"}, io.Discard, io.Discard)
		if !errors.As(err, &ee) || ee.code != tc.want {
			t.Errorf("step on %s: got %v, want exit %d", tc.driver, err, tc.want)
		}
	}
}
