package correct

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
)

// TestStageInPipeline runs the registered "correct" stage through the real
// engine on three sample problems with bwrap and checks its JSONL output.
func TestStageInPipeline(t *testing.T) {
	src, err := os.ReadFile(repoFile(t, "data/problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitN(string(src), "\n", 4)[:3]
	pipelinetest.WriteLines(t, filepath.Join(dir, "p.jsonl"), lines)
	out := filepath.Join(dir, "out.jsonl")
	y := `run_dir: ` + filepath.Join(dir, "run") + `
executor: bwrap://
inputs: [{path: p.jsonl, format: mbpp}]
stages:
  - {stage: correct, concurrency: 2, settings: {kinds: [syntax, name, logic], seed: 3}}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	man := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	kinds := map[string]int{}
	for _, d := range pipelinetest.Dialogues(t, out) {
		if d.Stage != "correct" || d.Method != "mutation" {
			t.Errorf("dialogue %s: stage/method %s/%s", d.ID, d.Stage, d.Method)
		}
		kinds[d.Labels["bug_kind"]]++
	}
	if kinds["syntax"] != 3 || kinds["name"] != 3 || kinds["logic"] != 3 || len(kinds) != 3 {
		t.Errorf("dialogues per kind %v, want 3 each of syntax, name, logic", kinds)
	}
	stats := man.Stages[0].Stats
	if got := stats["dialogues"]; got != 9 {
		t.Errorf("manifest dialogues stat %v, want 9 (stats %v)", got, stats)
	}
	var tried, kept float64
	for k, v := range stats {
		if strings.HasPrefix(k, "mutants/tried/") {
			tried += v
		}
		if op, ok := strings.CutPrefix(k, "mutants/kept/"); ok {
			kept += v
			if v > stats["mutants/tried/"+op] {
				t.Errorf("operator %s: kept %v of %v tried", op, v, stats["mutants/tried/"+op])
			}
		}
	}
	if kept != 9 || tried < kept {
		t.Errorf("mutants kept %v tried %v, want 9 kept (one per dialogue) of at least as many tried (stats %v)", kept, tried, stats)
	}

	// Served from the cache (the completion marker removed), the stage
	// reports the same statistics without running a mutant.
	if err := os.Remove(filepath.Join(dir, "run", "stages", "correct", "done.json")); err != nil {
		t.Fatal(err)
	}
	man = pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	again := man.Stages[0]
	if again.Counts.Cached != again.Counts.In || !maps.Equal(again.Stats, stats) {
		t.Errorf("cached re-run: counts %+v stats %v, want all cached and stats %v", again.Counts, again.Stats, stats)
	}
}

func TestStageOptionsValidate(t *testing.T) {
	cases := []struct {
		o    Options
		fail bool
	}{
		{DefaultOptions, false},
		{Options{Method: "model", Kinds: []string{"timeout"}}, false},
		{Options{Method: "guess"}, true},
		{Options{Method: "mutation", Kinds: []string{"memory"}}, true},
		{Options{Method: "mutation", PerKind: -1}, true},
		{Options{Method: "model", Kinds: []string{"runtime", "syntax"}}, false},
		{Options{Method: "mutation", Kinds: []string{"runtime"}}, true},
	}
	for _, tc := range cases {
		if err := tc.o.Validate(); (err != nil) != tc.fail {
			t.Errorf("Validate(%+v) = %v, want failure %v", tc.o, err, tc.fail)
		}
	}
}

// TestVersionNamesEveryPrompt: the model method's cache version names every
// template it can render (Python's and the other languages'), so editing any
// of them recomputes the items that used it.
func TestVersionNamesEveryPrompt(t *testing.T) {
	st, err := newStage(Options{Method: "model", Kinds: []string{"runtime"}}, &pipeline.Services{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.Version().(map[string]any)["prompts"].(string)
	for _, name := range []string{"correct_inject@", "correct_fix@", "correct_inject_lang@", "correct_fix_lang@", "correct_request@"} {
		if !strings.Contains(got, name) {
			t.Errorf("version prompts %q do not name %s", got, strings.TrimSuffix(name, "@"))
		}
	}
}
