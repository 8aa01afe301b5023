package pyenv_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

// BenchmarkEpisode: episodes per second on bwrap, each a reset, the gold
// solution as one cell and a submit (two judge processes).
func BenchmarkEpisode(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	tasks, err := env.LoadTasks("testdata/ic_mbpp.json", "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=2")
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	e, err := env.Open(ctx, "python", ex, env.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Step(ctx, tasks[0].Gold); err != nil {
			b.Fatal(err)
		}
		if r, err := e.Step(ctx, "submit add"); err != nil || r.Reward != 1 {
			b.Fatalf("submit: %+v %v", r, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}
