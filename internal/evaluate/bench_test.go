package evaluate_test

import (
	"context"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/evaluate"
)

// benchCanonical evaluates a benchmark's canonical solutions per iteration
// ("eval": prompt, extraction, sanitising, judging, sample records) next to
// judging the reference programs directly with the harness ("baseline"),
// both through bwrap with 2 runs in flight, and reports seconds per set and
// milliseconds per sample.
func benchCanonical(b *testing.B, name string) {
	tasks := load(b, name, 0)
	ex := sandbox(b)
	ctx := context.Background()
	report := func(b *testing.B, d time.Duration) {
		per := d / time.Duration(b.N)
		b.ReportMetric(per.Seconds(), "s/set")
		b.ReportMetric(float64(per.Microseconds())/1000/float64(len(tasks)), "ms/sample")
	}
	b.Run("baseline", func(b *testing.B) {
		jobs := make([]harness.Job, len(tasks))
		for i, t := range tasks {
			jobs[i] = harness.Job{Problem: t.Problem, Code: t.Problem.Program()}
		}
		start := time.Now()
		for range b.N {
			if _, err := harness.JudgeMany(ctx, ex, jobs, harness.Options{}, 2); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
	b.Run("eval", func(b *testing.B) {
		e, err := evaluate.New(evaluate.Options{Model: evaluate.CanonicalModel, Concurrency: 2}, nil, nil, ex, nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for range b.N {
			if _, err := e.Run(ctx, tasks, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
}

func BenchmarkCanonicalHumanEval(b *testing.B) { benchCanonical(b, evaluate.HumanEval) }
func BenchmarkCanonicalMBPP(b *testing.B)      { benchCanonical(b, evaluate.MBPP) }
