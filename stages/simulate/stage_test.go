package simulate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

func readDialogues(t *testing.T, path string) []schema.Dialogue {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []schema.Dialogue
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d schema.Dialogue
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("output line is not a dialogue: %v", err)
		}
		out = append(out, d)
	}
	return out
}

// TestStageResumesFromCache runs the registered stage through the real
// engine twice: the first run loses the model after the first answers, the
// second finishes, replaying the first answers from the run's cache.
func TestStageResumesFromCache(t *testing.T) {
	dir := t.TempDir()
	var recs []map[string]any
	for i, fn := range []string{"add", "plus", "sum2"} {
		recs = append(recs, map[string]any{"task_id": i + 1, "text": "Write a function " + fn + " that adds two numbers.",
			"code": "def " + fn + "(a, b):\n    return a + b\n", "test_setup_code": "", "challenge_test_list": []string{},
			"test_list": []string{"assert " + fn + "(1, 2) == 3", "assert " + fn + "(2, 2) == 4"}})
	}
	pipelinetest.WriteJSONL(t, filepath.Join(dir, "p.jsonl"), recs...)
	var down atomic.Bool
	var firstAnswers atomic.Int64
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		task := c.Request.Messages[min(1, len(c.Request.Messages)-1)].Content
		fn := strings.Fields(strings.TrimPrefix(task, "Write a function "))[0]
		switch llmtest.Role(c) {
		case "judge": // calibration
			return llmtest.Reply{Text: fmt.Sprintf(`{"correct": %v, "reason": "read it"}`, !strings.Contains(c.LastUser(), "a + bb"))}
		case "feedback":
			return llmtest.Reply{Text: `{"met": ["functionality"], "missed": ["clarity"], "feedback": "Add a docstring."}`}
		case "writer":
			if c.AssistantTurns() == 0 {
				firstAnswers.Add(1)
				return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    return a + bb")}
			}
			if down.Load() {
				return llmtest.Reply{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400}}
			}
			if c.AssistantTurns() == 1 {
				return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    return a + b")}
			}
			return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b")}
		}
		return llmtest.Reply{Text: "?"}
	})
	out := filepath.Join(dir, "out.jsonl")
	y := pipelinetest.ModelHead(dir, srv.URL) + `inputs: [{path: p.jsonl, format: mbpp}]
stages:
  - {stage: simulate, concurrency: 3, retries: 0, settings: {feedback_rounds: 1, followups: 0, closing: template}}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	cfg := pipelinetest.Load(t, dir, y)
	down.Store(true)
	t0 := time.Now()
	man, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
	t.Logf("first run %v: %v", time.Since(t0), err)
	if err == nil && man.Stages[0].Counts.Failed == 0 {
		t.Fatalf("first run: no failed items with the model down (counts %+v)", man.Stages[0].Counts)
	}
	if got := firstAnswers.Load(); got != 3 {
		t.Fatalf("first run: %d first answers, want 3", got)
	}

	down.Store(false)
	man, err = pipeline.Run(context.Background(), pipelinetest.Load(t, dir, y), pipeline.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := firstAnswers.Load(); got != 3 {
		t.Errorf("after the second run: %d first answers asked of the model, want 3 (replayed from the cache)", got)
	}
	ds := readDialogues(t, out)
	if len(ds) != 3 {
		t.Fatalf("got %d dialogues, want 3", len(ds))
	}
	for _, d := range ds {
		if d.Labels["final_status"] != "pass" || d.Labels["outcomes"] != "1=NameError 2=pass fb1.1=pass" {
			t.Errorf("dialogue %s labels %v", d.ID, d.Labels)
		}
	}
	st := man.Stages[0].Stats
	for key, want := range map[string]float64{"dialogues/pass": 3, "outcome/1/NameError": 3, "outcome/2/pass": 3, "outcome/fb1.1/pass": 3} {
		if st[key] != want {
			t.Errorf("stat %s = %v, want %v (stats %v)", key, st[key], want, st)
		}
	}
	cats := 0.0
	for k, v := range st {
		if strings.HasPrefix(k, "feedback/category/") {
			cats += v
		}
	}
	if cats != 3 {
		t.Errorf("feedback categories counted %v, want 3", cats)
	}
}

// Without a model the stage skips: items are dropped with a count, not
// failed one by one, and the sandbox is never opened.
func TestStageNoModelSkips(t *testing.T) {
	svc := &pipeline.Services{Stats: pipeline.NewStats(), Name: "simulate",
		Executor: func(context.Context) (executors.Executor, error) {
			t.Error("sandbox opened without a model")
			return nil, errors.New("no sandbox")
		}}
	st, err := newStage(DefaultOptions, svc)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		it, _ := pipeline.QueryItem(schema.Query{ID: fmt.Sprintf("q%d", i), Text: "write fizzbuzz"})
		out, err := st.Each(context.Background(), it)
		if err != nil || len(out) != 0 {
			t.Fatalf("item %d: got %v, %v; want no items and no error", i, out, err)
		}
	}
	if vals, _ := svc.Stats.Snapshot(); vals["skipped/no_model"] != 3 {
		t.Errorf("stats: got %v, want skipped/no_model 3", vals)
	}
}

// TestStageDroppedStatsSurviveCache: dropped dialogues leave no output, so
// their counts travel with the cached item; a re-run served from the cache
// reports the same statistics as the run that computed them.
func TestStageDroppedStatsSurviveCache(t *testing.T) {
	dir := t.TempDir()
	var recs []map[string]any
	for i, fn := range []string{"add", "wrong"} {
		recs = append(recs, map[string]any{"task_id": i + 1, "text": "Write a function " + fn + " that adds two numbers.",
			"code": "def " + fn + "(a, b):\n    return a + b\n", "test_setup_code": "", "challenge_test_list": []string{},
			"test_list": []string{"assert " + fn + "(1, 2) == 3"}})
	}
	pipelinetest.WriteJSONL(t, filepath.Join(dir, "p.jsonl"), recs...)
	var calls atomic.Int64
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		calls.Add(1)
		task := c.Request.Messages[min(1, len(c.Request.Messages)-1)].Content
		fn := strings.Fields(strings.TrimPrefix(task, "Write a function "))[0]
		if llmtest.Role(c) == "judge" { // calibration: a judge that knows subtraction is wrong
			return llmtest.Reply{Text: fmt.Sprintf(`{"correct": %v, "reason": "checked"}`, !strings.Contains(c.LastUser(), "a - b"))}
		}
		if llmtest.Role(c) == "writer" && fn == "wrong" { // never passes: dropped
			return llmtest.Reply{Text: block("def wrong(a, b):\n    return a - b")}
		}
		return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    return a + b")}
	})
	y := pipelinetest.ModelHead(dir, srv.URL) + `inputs: [{path: p.jsonl, format: mbpp}]
stages:
  - {stage: simulate, retries: 0, settings: {feedback_rounds: 0, followups: 0, closing: template, max_iterations: 2}}
`
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() pipeline.StageRecord {
		t.Helper()
		cfg, err := pipeline.Load(file, "")
		if err != nil {
			t.Fatal(err)
		}
		man, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return man.Stages[0]
	}
	first := run()
	if first.Counts.Out != 1 || first.Stats["dialogues/dropped"] != 1 || first.Stats["outcome/2/wrong_answer"] != 1 {
		t.Fatalf("first run: counts %+v stats %v; want 1 output, 1 dropped with outcome/2/wrong_answer 1", first.Counts, first.Stats)
	}
	// Without the completion marker the stage runs again, from the store.
	if err := os.Remove(filepath.Join(dir, "run", "stages", "simulate", "done.json")); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	again := run()
	if calls.Load() != before || again.Counts.Cached != 2 {
		t.Fatalf("re-run: %d model calls, counts %+v; want none and 2 cached", calls.Load()-before, again.Counts)
	}
	if fmt.Sprint(again.Stats) != fmt.Sprint(first.Stats) {
		t.Errorf("re-run stats %v, want %v as in the first run", again.Stats, first.Stats)
	}
}

// TestUncalibratedJudgeShipsTestJudgedOnly: a judge model that accepts
// code its tests fail is not trusted once calibration_min verdicts are in;
// the run does not fail, the test-judged dialogues are shipped and the
// model-judged ones after the decision are withheld (quarantined), loudly.
func TestUncalibratedJudgeShipsTestJudgedOnly(t *testing.T) {
	dir := t.TempDir()
	var probs []map[string]any
	fns := []string{"add", "plus", "sum2", "total"}
	for i, fn := range fns {
		probs = append(probs, map[string]any{"task_id": i + 1, "text": "Write a function " + fn + " that adds two numbers.",
			"code": "def " + fn + "(a, b):\n    return a + b\n", "test_setup_code": "", "challenge_test_list": []string{},
			"test_list": []string{"assert " + fn + "(1, 2) == 3", "assert " + fn + "(2, 2) == 4"}})
	}
	pipelinetest.WriteJSONL(t, filepath.Join(dir, "p.jsonl"), probs...)
	pipelinetest.WriteQueries(t, filepath.Join(dir, "q.jsonl"), []string{
		"Write a function twice that adds two numbers and print add(1, 2).",
		"Write a function thrice that adds two numbers and print add(1, 2).",
	})
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		task := c.Request.Messages[min(1, len(c.Request.Messages)-1)].Content
		fn := strings.Fields(strings.TrimPrefix(task, "Write a function "))[0]
		switch llmtest.Role(c) {
		case "judge": // says yes to everything
			return llmtest.Reply{Text: `{"correct": true, "reason": "looks fine"}`}
		case "writer":
			if c.AssistantTurns() == 0 { // runs cleanly, fails the tests
				return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    return a - b\n\nprint(" + fn + "(1, 2))")}
			}
			return llmtest.Reply{Text: block("def " + fn + "(a, b):\n    return a + b\n\nprint(" + fn + "(1, 2))")}
		}
		return llmtest.Reply{Text: "?"}
	})
	out := filepath.Join(dir, "out.jsonl")
	y := pipelinetest.ModelHead(dir, srv.URL) + `inputs: [{path: p.jsonl, format: mbpp}, {path: q.jsonl}]
stages:
  - {stage: simulate, concurrency: 1, retries: 0, settings: {feedback_rounds: 0, followups: 0, closing: template, calibrate: 1, calibration_min: 4}}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	man, err := pipeline.Run(context.Background(), pipelinetest.Load(t, dir, y), pipeline.RunOptions{})
	if err != nil {
		t.Fatalf("an uncalibrated judge failed the run: %v", err)
	}
	ds := readDialogues(t, out)
	for _, d := range ds {
		if d.Labels["judge"] != "tests" {
			t.Errorf("dialogue %s judged by %q shipped, want only test-judged ones", d.ID, d.Labels["judge"])
		}
	}
	if len(ds) != len(fns) {
		t.Errorf("got %d dialogues, want the %d test-judged ones", len(ds), len(fns))
	}
	st := man.Stages[0].Stats
	for key, want := range map[string]float64{"calibration/withheld": 2, "calibration/judge_untrusted": 1, "calibration/verdicts": 8, "calibration/agree": 4} {
		if st[key] != want {
			t.Errorf("stat %s = %v, want %v (stats %v)", key, st[key], want, st)
		}
	}
}
