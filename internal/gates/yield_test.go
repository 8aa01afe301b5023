package gates_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
	_ "github.com/codefeedback/codefeedback/stages/audit"
	_ "github.com/codefeedback/codefeedback/stages/correct"
	_ "github.com/codefeedback/codefeedback/stages/pack"
)

// allBad is every misbehaviour a model stage of the default pipeline can
// show (interact is not in this pipeline: MBPP has no InterCode tasks).
var allBad = map[llmtest.Misbehaviour]bool{
	llmtest.CodeForExplanation: true, llmtest.UnchangedRevision: true, llmtest.WrongCategory: true,
	llmtest.CodeInFeedback: true, llmtest.YesJudge: true, llmtest.UnreadableRubric: true, llmtest.UnparseableJSON: true,
	llmtest.SilentCode: true, llmtest.VagueDocs: true, llmtest.RoteClosing: true, llmtest.TrivialTests: true,
	llmtest.ClaimedChecks: true, llmtest.FalseEdgeClaim: true, llmtest.OffRequestNoChange: true,
	llmtest.DocOnlyEmpty: true, llmtest.OnePassClaim: true, llmtest.UncalledClaim: true, llmtest.ComputedOnceClaim: true,
	llmtest.RaiseOnEmpty: true, llmtest.StructureOnly: true, llmtest.DeclinesMemory: true, llmtest.NoReasonJudge: true, llmtest.FakeSpeedup: true,
}

// yieldRun is one run of the default pipeline's shape over MBPP.
type yieldRun struct {
	man        *pipeline.Manifest
	err        error
	dialogues  []schema.Dialogue
	quarantine []pipeline.Rejection
	requests   int
}

// runDefaultShape runs filter -> pack -> simulate, correct, explain, audit,
// dialogue dedup (data/pipeline.yaml without interact) with the persona
// as every model.
func runDefaultShape(t *testing.T, c *corpus, persona *llmtest.Persona, minChecks int, name string) yieldRun {
	t.Helper()
	dir := t.TempDir()
	if d := os.Getenv("CODEFEEDBACK_YIELD_DUMP"); d != "" {
		// Keep the run (outputs, quarantine, report) to read it.
		dir = filepath.Join(d, name)
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.write(t, dir)
	srv := llmtest.New(t)
	srv.Script(persona.Script())
	out := filepath.Join(dir, "out.jsonl")
	y := fmt.Sprintf(`run_dir: %s
executor: bwrap://?pool=2
model: {base_url: "%s", model: persona, concurrency: 16}
defaults: {concurrency: 4, retries: 1, gate_min_checks: %d}
inputs:
  - {path: problems.jsonl, format: mbpp}
  - {path: queries.jsonl}
stages:
  - {stage: filter, concurrency: 8}
  - {stage: pack, settings: {seed: 1}}
  - {stage: simulate, settings: {feedback_rounds: 1, calibrate: 0}}
  - {stage: correct, input: [inputs], settings: {method: mutation, seed: 1}}
  - {stage: explain, input: [simulate, correct], concurrency: 8}
  - {stage: audit, settings: {against: [humaneval, mbpp], missing: skip}}
  - {stage: dedup, name: dedup-dialogues, settings: {kinds: [dialogue]}}
outputs: [{path: %s, from: dedup-dialogues, kind: dialogue}]
`, filepath.Join(dir, "run"), srv.URL, minChecks, out)
	man, err := pipeline.Run(context.Background(), pipelinetest.Load(t, dir, y), pipeline.RunOptions{})
	r := yieldRun{man: man, err: err, requests: srv.Calls("/v1/chat/completions")}
	// A failed run may have published nothing: its files are read where
	// they are.
	if _, ferr := os.Stat(out); ferr == nil {
		r.dialogues = pipelinetest.Dialogues(t, out)
	}
	if man != nil && man.QuarantineFile != "" {
		if _, ferr := os.Stat(man.QuarantineFile); ferr == nil {
			var err error
			if r.quarantine, err = schema.ReadAll[pipeline.Rejection](man.QuarantineFile, schema.AllowEmpty()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// modelMade counts published dialogues a model stage made (not correct's).
func modelMade(ds []schema.Dialogue) (model, free int) {
	for _, d := range ds {
		if d.Stage == "correct" {
			free++
		} else {
			model++
		}
	}
	return
}

// TestCorpusYieldWithImperfectModel is issue 30's yield check: the default
// pipeline's shape over MBPP with a model that misbehaves on 30% of its
// answers publishes at least 60% of what a well-behaved model's run does,
// every published explained turn passes its gate, and every rejection is
// quarantined with a reason; at 90% the failing stages stop within their
// first 100 checks, the model-free stage's dialogues are still published,
// and the run exits with ErrGateTripped naming the setting.
// CODEFEEDBACK_YIELD_N sets the number of MBPP problems (default 24; the
// issue's figure is 200, with gate_min_checks 50, scaled down for fewer); CODEFEEDBACK_YIELD_DUMP
// keeps the three runs' directories there.
func TestCorpusYieldWithImperfectModel(t *testing.T) {
	n, minChecks := 24, 8
	if v, err := strconv.Atoi(os.Getenv("CODEFEEDBACK_YIELD_N")); err == nil {
		// The gate_min_checks of 50 is for 200 problems; fewer
		// problems give a gate fewer checks, so the floor scales with them.
		n, minChecks = v, min(50, max(8, v/4))
	}
	c := loadCorpus(t, n, 3)

	good := runDefaultShape(t, c, &llmtest.Persona{Solve: c.solve, Demo: c.demo, Tests: c.tests}, minChecks, "good")
	if good.err != nil {
		t.Fatalf("a well-behaved model's run failed: %v", good.err)
	}
	goodModel, goodFree := modelMade(good.dialogues)
	t.Logf("good model: %d dialogues published (%d model-made, %d model-free), %d requests, %d quarantined",
		len(good.dialogues), goodModel, goodFree, good.requests, len(good.quarantine))

	bad30 := runDefaultShape(t, c, &llmtest.Persona{Solve: c.solve, Demo: c.demo, Tests: c.tests, Bad: allBad, Rate: 0.3}, minChecks, "bad30")
	m30, f30 := modelMade(bad30.dialogues)
	t.Logf("30%% misbehaving: err %v; %d dialogues published (%d model-made, %d model-free), %d requests (%.2fx the good run), %d quarantined",
		bad30.err, len(bad30.dialogues), m30, f30, bad30.requests, float64(bad30.requests)/float64(max(good.requests, 1)), len(bad30.quarantine))
	if len(bad30.dialogues)*10 < len(good.dialogues)*6 {
		t.Errorf("30%% misbehaving published %d dialogues, want at least 60%% of the good run's %d", len(bad30.dialogues), len(good.dialogues))
	}
	if bad30.requests > 2*good.requests {
		t.Errorf("30%% misbehaving made %d requests, more than twice the good run's %d", bad30.requests, good.requests)
	}
	checkPublished(t, bad30)
	reasons := map[string]int{}
	for _, rj := range bad30.quarantine {
		if rj.Reason == "" || rj.Stage == "" || rj.ItemID == "" {
			t.Errorf("quarantine line without stage, item or reason: %+v", rj)
		}
		reasons[rj.Stage+"/"+rj.Gate+"/"+rj.Reason]++
	}
	t.Logf("30%% quarantine by stage/gate/reason: %v", reasons)
	for _, s := range bad30.man.Stages {
		for _, f := range gates.Figures(s.Stats) {
			t.Logf("30%%: stage %s gate %s: %.0f checked, %.0f rejected %v", s.Name, f.Gate, f.Checked, f.Rejected, f.Reasons)
		}
	}

	bad90 := runDefaultShape(t, c, &llmtest.Persona{Solve: c.solve, Demo: c.demo, Tests: c.tests, Bad: allBad, Rate: 0.9}, minChecks, "bad90")
	m90, f90 := modelMade(bad90.dialogues)
	t.Logf("90%% misbehaving: %d dialogues published (%d model-made, %d model-free), %d requests, %d quarantined; err: %v",
		len(bad90.dialogues), m90, f90, bad90.requests, len(bad90.quarantine), bad90.err)
	if !errors.Is(bad90.err, pipeline.ErrGateTripped) {
		t.Fatalf("90%% misbehaving: run error %v, want a tripped gate", bad90.err)
	}
	if f90 == 0 || f90 < goodFree*9/10 {
		t.Errorf("90%% misbehaving published %d model-free dialogues, want about the good run's %d", f90, goodFree)
	}
	tripped := map[string]bool{}
	for _, g := range bad90.man.Gates {
		tripped[g.Stage+"/"+g.Gate] = true
		if g.Setting == "" {
			t.Errorf("tripped gate %+v names no setting", g)
		}
		if g.Early && g.Checked > 100 {
			t.Errorf("stage %s stopped after %.0f checks, want within 100", g.Stage, g.Checked)
		}
	}
	// simulate stops at its first gate over the limit: which of its
	// round gates that is depends on the order the draws come in.
	if !tripped["explain/preface"] || !tripped["simulate/feedback_round"] && !tripped["simulate/followup_round"] {
		t.Errorf("90%% misbehaving: tripped %v, want explain/preface and a round gate of simulate", tripped)
	}
	checkPublished(t, bad90)
}

// checkPublished: every explained turn's preface passes the preface gate.
func checkPublished(t *testing.T, r yieldRun) {
	t.Helper()
	for _, d := range r.dialogues {
		if d.Labels["explained"] == "" {
			continue
		}
		for _, m := range d.Messages {
			if m.Role != schema.RoleAssistant || !gates.HasCode(m.Content) {
				continue
			}
			if gates.Transition(m.Content) {
				t.Errorf("%s: a published turn opens with a transition phrase: %q", d.ID, gates.Cut(m.Content, 120))
			}
		}
	}
}
