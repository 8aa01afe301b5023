package pack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestConcurrencyNotInKey: changing only `concurrency` does not recompute
// pack; changing a grouping setting does.
func TestConcurrencyNotInKey(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	var b strings.Builder
	for i, q := range stageQueries {
		j, _ := json.Marshal(schema.Query{ID: fmt.Sprintf("q%d", i), Text: q})
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
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
