package evaluate_test

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm"
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

// evaluateAll builds an evaluator and runs it over tasks.
func evaluateAll(tb testing.TB, o evaluate.Options, model, feedback llm.Chatter, ex executors.Executor, cache store.Cache, tasks []evaluate.Task) (*evaluate.Evaluator, []evaluate.Sample) {
	tb.Helper()
	e, err := evaluate.New(o, model, feedback, ex, cache)
	if err != nil {
		tb.Fatal(err)
	}
	ss, err := e.Run(context.Background(), tasks, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return e, ss
}
