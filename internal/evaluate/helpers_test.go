package evaluate_test

import (
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// sandbox is a shared bwrap executor (2 warm instances: the machine has 2 cores).
func sandbox(tb testing.TB) executors.Executor { return sandboxtest.Shared(tb) }

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
