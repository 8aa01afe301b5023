package bashenv_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

// BenchmarkEpisode: episodes per second on bwrap, each a reset, one action
// and a submit (which runs the gold command on the second sandbox).
func BenchmarkEpisode(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	tasks, err := env.LoadTasks("testdata/nl2bash_fs_1.json", "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=1")
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	for _, name := range []string{"bash", "ctf"} {
		b.Run(name, func(b *testing.B) {
			e, err := env.Open(ctx, name, ex, env.Options{CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			task := tasks[1]
			if name == "ctf" {
				ts, err := env.LoadTasks("testdata/ctf/ic_ctf.json", "")
				if err != nil {
					b.Fatal(err)
				}
				task = ts[0]
			}
			if _, err := e.Reset(ctx, task); err != nil { // builds the file system once
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.Reset(ctx, task); err != nil {
					b.Fatal(err)
				}
				act := task.Gold
				if name == "ctf" {
					act = "python3 reveal.py"
				}
				if _, err := e.Step(ctx, act); err != nil {
					b.Fatal(err)
				}
				r, err := e.Step(ctx, "submit "+task.Gold)
				if err != nil || r.Reward != 1 {
					b.Fatalf("submit: %+v %v", r, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}
