package leetcode

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	_ "github.com/codefeedback/codefeedback/stages/explain"
)

// TestEngineNoModel runs import -> leetcode -> explain through the real
// engine with no model: chains from the reference solutions, explain passes
// them through unchanged and says so in its stats.
func TestEngineNoModel(t *testing.T) {
	dir := t.TempDir()
	var recs []map[string]any
	for _, p := range append(problems(), problem("pow", "**")) {
		recs = append(recs, map[string]any{"task_id": strings.TrimPrefix(p.ID, "LeetCode/"), "query": p.Text, "prompt": p.Prompt,
			"completion": p.Solution, "entry_point": p.EntryPoint, "test": p.Tests[0], "meta": map[string]any{"difficulty": "Easy"}})
	}
	pipelinetest.WriteJSONL(t, filepath.Join(dir, "lc.jsonl"), recs...)
	out := filepath.Join(dir, "out.jsonl")
	y := `run_dir: ` + filepath.Join(dir, "run") + `
executor: bwrap://
inputs: [{path: lc.jsonl, format: leetcode}]
stages:
  - {stage: leetcode, settings: {sizes: [2], floor: 0}}
  - {stage: explain}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	man := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	ds := pipelinetest.Dialogues(t, out)
	if len(ds) != 2 {
		t.Fatalf("got %d dialogues, want 2 chains of 2", len(ds))
	}
	for _, d := range ds {
		if d.Method != "chain-reference" || d.Labels["final_status"] != "pass" || d.Labels["explained_turns"] != "" {
			t.Errorf("dialogue %s: method %s labels %v", d.ID, d.Method, d.Labels)
		}
	}
	lc, ex := man.Stages[0].Stats, man.Stages[1].Stats
	if lc["chains/length/2"] != 2 || lc["runs/passed"] != 4 || lc["alternatives/skipped_no_model"] != 1 {
		t.Errorf("leetcode stats %v", lc)
	}
	if ex["skipped/no_model"] != 2 {
		t.Errorf("explain stats %v, want skipped/no_model=2", ex)
	}

	// Parallelism is not part of the key; the sandbox's limits are.
	for _, step := range []struct{ executor, settings, want string }{
		{"bwrap://", "{sizes: [2], floor: 0, parallel: 1}", "unchanged"},
		{"bwrap://?memory=300MiB", "{sizes: [2], floor: 0, parallel: 1}", "ran"},
	} {
		y := strings.Replace(strings.Replace(y, "executor: bwrap://", "executor: "+step.executor, 1),
			"{sizes: [2], floor: 0}", step.settings, 1)
		man := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
		if got := man.Stages[0].Status; got != step.want {
			t.Errorf("executor %s, settings %s: leetcode %s, want %s", step.executor, step.settings, got, step.want)
		}
	}
}
