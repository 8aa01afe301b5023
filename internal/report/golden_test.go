package report

// Golden file: the report's HTML skeleton. TestGoldenSkeleton builds the
// report of a small run directory laid out by hand (every part of the page
// has something to show: inputs, outputs, stages with and without a
// section, a stage that did not run, gates, a tripped gate, quarantine,
// dead letters, an earlier run, a dialogue with an execution record) and
// compares its skeleton with testdata/golden/skeleton.txt (an indented
// outline, not HTML, hence .txt). After an intended change to the page,
// rewrite it and read the diff:
//
//	go test ./internal/report -run Golden -update
//
// The skeleton (golden.HTMLSkeleton) is the element tree, one element a
// line, indented by depth, with the attributes that carry structure (id,
// class, href, data-id, ...) and the text (white space folded, long text
// cut at maxSkeletonText). Summarised, because other tests check them and
// they would bury the structure: the CSS (<style>), the inline script, the
// geometry of the SVG charts (TestChartSVG), the highlighting inside <pre>
// (TestHighlight: the skeleton keeps the text), and the embedded JSON
// (#report-data: the skeleton keeps its top-level keys, the contract tools
// read). Normalised: the run directory (a temporary directory) reads $RUN;
// the clock is fixed through Options.Now and the manifest's times, and the
// data are fixed, so no figure depends on the machine.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// The stage packages register the report sections (as in run_test.go);
	// without them every stage would land in "Other stages".
	_ "github.com/codefeedback/codefeedback/internal/builtin"
	"github.com/codefeedback/codefeedback/internal/golden"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// maxSkeletonText bounds a text line of the skeleton, in runes.
const maxSkeletonText = 120

// skeletonRun lays out the run directory the skeleton is built from.
func skeletonRun(t *testing.T) string {
	t.Helper()
	yes, no := true, false
	d := schema.Dialogue{ID: "dlg-golden-1", Stage: "simulate", Method: "execution-feedback", Model: "m1", Prompt: "p1",
		Sources: []string{"mbpp/2"}, Labels: map[string]string{"final_status": "pass", "turns": "4"},
		Messages: []schema.Message{
			{Role: "user", Content: "Write a function `add(a, b)`."},
			{Role: "assistant", Content: "Here it is:\n\n```python\ndef add(a, b):\n    return a - b\n```"},
			{Role: "execution", Content: "AssertionError", Exec: &schema.Execution{Language: "python", Code: "def add(a, b):\n    return a - b",
				Driver: "bwrap", ExitCode: 1, Exception: "AssertionError", Passed: &no, TimeoutMS: 10000, MemoryB: 1 << 28,
				Duration: 12 * time.Millisecond, Stderr: "AssertionError", ExecutedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
			{Role: "user", Content: "It subtracts instead of adding.", Feedback: &schema.Feedback{Category: "bugs"}},
			{Role: "assistant", Content: "Fixed:\n\n```python\ndef add(a, b):\n    return a + b\n```"},
			{Role: "execution", Content: "ok", Exec: &schema.Execution{Language: "python", Code: "def add(a, b):\n    return a + b",
				Driver: "bwrap", Passed: &yes, TimeoutMS: 10000, MemoryB: 1 << 28, Duration: 9 * time.Millisecond}},
		}}
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	m := &pipeline.Manifest{Program: "codefeedback", Version: "test", Pipeline: "pipeline.yaml", Status: "partial",
		Message: "a gate tripped", Started: start, Finished: start.Add(90 * time.Second), Executor: "bwrap://",
		Options: pipeline.RunFlags{Limit: 10},
		Inputs:  []pipeline.InputRecord{{Path: "data/problems.jsonl", Format: "mbpp", SHA256: "0123456789abcdef0123456789abcdef", Bytes: 2048, Items: 10}},
		Stages: []pipeline.StageRecord{
			{Name: "dedup", Type: "dedup", Status: "ran", Settings: []byte(`{"threshold":0.9}`), Key: "k-dedup-0123456789",
				Counts: pipeline.Counts{In: 10, Out: 9, Fresh: 10}, Seconds: 0.5,
				Stats: map[string]float64{"queries": 10, "kept": 9, "dropped/exact": 1}},
			{Name: "simulate", Type: "simulate", Status: "gate-tripped", Settings: []byte(`{"rounds":2}`), Key: "k-simulate-0123456789",
				Counts: pipeline.Counts{In: 9, Out: 1, Cached: 3, Fresh: 6, Failed: 1, Retries: 2}, Seconds: 60,
				Usage:  pipeline.Usage{Requests: 20, PromptTokens: 5000, CompletionTokens: 800, CostUSD: 0.0421},
				Output: "stages/simulate/out.jsonl",
				Stats: map[string]float64{"dialogues/pass": 1, "turns/6": 1, "outcome/1/AssertionError": 1, "outcome/2/pass": 1,
					"feedback/category/bugs": 1, "feedback/non_oracle": 1,
					"gate/judge/checked": 9, "gate/judge/rejected": 5, "gate/judge/reason/wrong_result": 5}},
			{Name: "correct", Type: "correct", Status: "not-selected"},
		},
		Outputs:   []pipeline.OutputRecord{{Path: "out/dialogues.jsonl", Format: "jsonl", From: "simulate", Kind: "dialogue", Items: 1}},
		Usage:     pipeline.Usage{Requests: 20, PromptTokens: 5000, CompletionTokens: 800, CostUSD: 0.0421},
		DeadCount: 1, QuarantineCount: 1,
		Gates: []pipeline.GateTrip{{Stage: "simulate", Gate: "judge", Setting: "max_rejected", MaxShare: 0.3, Checked: 9, Rejected: 5,
			Reasons: map[string]float64{"wrong_result": 5}}},
		History: []pipeline.RunSummary{{Started: start.Add(-time.Hour), Version: "test", Status: "complete",
			Usage: pipeline.Usage{Requests: 4, PromptTokens: 100, CompletionTokens: 10, CostUSD: 0.001}, Fresh: 4}},
		Total: pipeline.RunTotal{Runs: 2, Usage: pipeline.Usage{Requests: 24, PromptTokens: 5100, CompletionTokens: 810, CostUSD: 0.0431}, Fresh: 10},
	}
	dir := writeRun(t, m, map[string][]pipeline.Item{"stages/simulate/out.jsonl": {dialogueItem(t, d)}})
	// The side files a run writes beside its manifest, one record each.
	side := map[string]string{
		"dead-letters.jsonl": `{"stage":"simulate","item_id":"mbpp/7","error":"sandbox: timeout after 10s","attempts":3,"permanent":true}`,
		"quarantine.jsonl":   `{"stage":"simulate","item_id":"mbpp/3","gate":"judge","reason":"wrong_result","detail":"returns 5 for add(2, 2)","setting":"max_rejected"}`,
	}
	for name, line := range side {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGoldenSkeleton(t *testing.T) {
	dir := skeletonRun(t)
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	w, err := Build(t.Context(), dir, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(w.Report)
	if err != nil {
		t.Fatal(err)
	}
	got, err := golden.HTMLSkeleton(strings.ReplaceAll(string(page), dir, "$RUN"), maxSkeletonText)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "skeleton.txt"), got)
}
