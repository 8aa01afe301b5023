package pack

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
)

// TestConcurrencyNotInKey: changing only `concurrency` does not recompute
// pack; changing a grouping setting does.
func TestConcurrencyNotInKey(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	pipelinetest.WriteQueries(t, filepath.Join(dir, "q.jsonl"), stageQueries)
	for i, step := range []struct{ settings, want string }{
		{"{concurrency: 2}", "ran"},
		{"{concurrency: 16}", "unchanged"},
		{"{concurrency: 16, seed: 99}", "ran"},
	} {
		y := fmt.Sprintf("run_dir: %s\ninputs: [{path: q.jsonl}]\nstages:\n  - {stage: pack, settings: %s}\n",
			filepath.Join(dir, "run"), step.settings)
		m := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
		if got := m.Stages[0].Status; got != step.want {
			t.Errorf("run %d with %s: pack %s, want %s", i+1, step.settings, got, step.want)
		}
	}
}
