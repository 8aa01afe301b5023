package env_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/executors/env"
)

func TestEpisode(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=1")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	e := env.New(ex)
	defer e.Close()
	task := env.Task{ID: "add", Language: executors.Python, MaxSteps: 3, Limits: executors.Limits{Timeout: 3 * time.Second},
		Score: env.TestsPassed([]string{"assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(2, 2) == 4"})}
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	st, err := e.Step(ctx, "def add(a, b):\n    return a * b\nprint(add(2, 3))")
	if err != nil {
		t.Fatal(err)
	}
	// a*b passes only add(2, 2) == 4.
	if st.Observation != "6\n" || st.Reward < 0.33 || st.Reward > 0.34 || st.Done {
		t.Errorf("step 1: got observation %q reward %v done %v, want 6, 1/3, not done", st.Observation, st.Reward, st.Done)
	}
	st, err = e.Step(ctx, "undefined_thing")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Observation, "NameError") || st.Done {
		t.Errorf("step 2: got observation %q done %v, want a NameError traceback", st.Observation, st.Done)
	}
	st, err = e.Step(ctx, "def add(a, b):\n    return a + b")
	if err != nil {
		t.Fatal(err)
	}
	if st.Reward != 1 || !st.Done || st.Observation != "(no output)" {
		t.Errorf("step 3: got reward %v done %v observation %q, want 1, done", st.Reward, st.Done, st.Observation)
	}
	if _, err := e.Step(ctx, "1"); err == nil {
		t.Errorf("Step after done: got no error")
	}
	// A new episode starts from an empty session.
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	st, err = e.Step(ctx, "print('add' in globals())")
	if err != nil {
		t.Fatal(err)
	}
	if st.Observation != "False\n" || st.Reward != 0 {
		t.Errorf("after Reset: got %q reward %v, want False and 0", st.Observation, st.Reward)
	}
}

func TestObservation(t *testing.T) {
	cases := []struct {
		r    executors.Result
		want string
	}{
		{executors.Result{}, "(no output)"},
		{executors.Result{Stdout: "a", Stderr: "b\n"}, "a\nb\n"},
		{executors.Result{Stdout: "x\n", TimedOut: true, Signal: "SIGKILL"}, "x\n[execution timed out]"},
		{executors.Result{OOM: true}, "[out of memory]"},
	}
	for _, c := range cases {
		if got := env.Observation(c.r); got != c.want {
			t.Errorf("Observation(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}
