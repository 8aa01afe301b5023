package sqlenv_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

// BenchmarkEpisode: episodes per second, each a reset, the gold query and a
// submit, on the sqlite backend (bwrap) and the mariadb backend.
func BenchmarkEpisode(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	tasks, err := env.LoadTasks("testdata/ic_spider_dev.json", "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=1")
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	backends := []string{"sqlite"}
	if _, err := os.Stat("/run/mysqld/mysqld.sock"); err == nil {
		backends = append(backends, "mariadb")
	}
	for _, be := range backends {
		b.Run(be, func(b *testing.B) {
			e, err := env.Open(ctx, "sql", ex, env.Options{CacheDir: b.TempDir(), Params: map[string]string{"backend": be}})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if _, err := e.Reset(ctx, tasks[0]); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				task := tasks[i%4]
				if _, err := e.Reset(ctx, task); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Step(ctx, task.Gold); err != nil {
					b.Fatal(err)
				}
				if r, err := e.Step(ctx, "submit"); err != nil || r.Reward != 1 {
					b.Fatalf("submit: %+v %v", r, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}
