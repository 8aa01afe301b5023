package evaluate_test

import (
	"context"
	"os/exec"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

var (
	exOnce sync.Once
	exVal  executors.Executor
	exErr  error
)

// sandbox is a shared bwrap executor (2 warm instances: the machine has 2 cores).
func sandbox(tb testing.TB) executors.Executor {
	tb.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		tb.Skip("skipping: bubblewrap (bwrap) is not installed")
	}
	exOnce.Do(func() { exVal, exErr = executors.Open(context.Background(), "bwrap://?pool=2") })
	if exErr != nil {
		tb.Fatalf("open bwrap: %v", exErr)
	}
	return exVal
}

// load reads a benchmark from the shared data, skipping when it is absent.
func load(tb testing.TB, name string, limit int) []evaluate.Task {
	tb.Helper()
	s, _ := benchmarks.Lookup(name)
	sharedtest.Path(tb, s.File)
	ts, err := evaluate.Load(sharedtest.DataDir(), name, limit)
	if err != nil {
		tb.Fatal(err)
	}
	return ts
}
