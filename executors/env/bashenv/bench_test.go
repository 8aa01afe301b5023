package bashenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/bashenv"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// BenchmarkEpisode: episodes per second on bwrap, each a reset, one action
// and a submit (bash: which runs the gold command on the second sandbox).
func BenchmarkEpisode(b *testing.B) {
	ex := envtest.BenchBwrap(b, 1)
	bash := envtest.Tasks(b, "testdata/nl2bash_fs_1.json")[1]
	ctf := envtest.Tasks(b, "testdata/ctf/ic_ctf.json")[0]
	for name, ep := range map[string]envtest.Episode{
		"bash": {Task: bash, Actions: []string{bash.Gold}, Submit: "submit"},
		"ctf":  {Task: ctf, Actions: []string{"python3 reveal.py"}, Submit: "submit " + ctf.Gold},
	} {
		b.Run(name, func(b *testing.B) {
			envtest.BenchEpisodes(b, envtest.Open(b, name, ex, env.Options{CacheDir: b.TempDir()}), ep)
		})
	}
}

// BenchmarkInterCodeEpisode: an InterCode bash episode (shell "intercode":
// reset, 5 actions, submit, whose reward runs the gold in the second
// sandbox) with actions run as the runner's bash cells (actions=cells, the
// old path) and from a Python session (actions=direct, the default), one
// of each per iteration so that both see the same load. It reports each
// path's milliseconds per episode and their ratio (speedup, old/new), not
// an absolute time. On bwrap; on docker too where
// CODEFEEDBACK_SANDBOX_IMAGE names an image (make nl2bash-image's).
func BenchmarkInterCodeEpisode(b *testing.B) {
	task := envtest.Tasks(b, "testdata/nl2bash_fs_1.json")[6] // count the .txt files
	ep := envtest.Episode{Task: task, Submit: "submit", Actions: []string{
		"ls /testbed", "cat /testbed/dir1/a.txt", "cd /testbed", "ls -l dir1", "find . -name '*.txt' | wc -l",
	}}
	drivers := map[string]string{"bwrap": "bwrap://?pool=2"}
	if img := os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE"); img != "" {
		drivers["docker"] = "docker://" + img + "?pool=2"
	}
	for name, uri := range drivers {
		b.Run(name, func(b *testing.B) {
			if name == "bwrap" {
				envtest.BenchBwrap(b, 1) // skips without bubblewrap
			}
			ctx := context.Background()
			ex, err := executors.Open(ctx, uri)
			if err != nil {
				b.Skipf("%s: %v", uri, err)
			}
			b.Cleanup(func() { ex.Close() }) // after the environments' Close
			var envs [2]env.Env
			for i, actions := range []string{bashenv.ActionsCells, bashenv.ActionsDirect} {
				e := envtest.Open(b, "bash", ex, env.Options{CacheDir: b.TempDir(),
					Params: map[string]string{"shell": bashenv.ShellInterCode, "actions": actions}})
				envs[i] = e
				envtest.PlayEpisode(b, e, ep) // builds the file system and opens the sandboxes
			}
			var took [2]time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k, e := range envs {
					start := time.Now()
					envtest.PlayEpisode(b, e, ep)
					took[k] += time.Since(start)
				}
			}
			ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(ms(took[0]), "cells-ms/episode")
			b.ReportMetric(ms(took[1]), "direct-ms/episode")
			b.ReportMetric(float64(took[0])/float64(took[1]), "speedup")
		})
	}
}
