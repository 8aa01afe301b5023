package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// The tolerances --dry-run's estimate is held to against the run it
// predicts, with a scripted model that answers every task correctly at the
// first try: the filter's calls are exact; the run's total calls within
// 20% and each model stage's within 25% (the estimate assumes some fixes
// and every item kept); the cost within a factor of 2 (it assumes a real
// model's answer lengths; the scripted answers are a few lines).
const (
	estTotalTolerance = 0.20
	estStageTolerance = 0.25
	estCostFactor     = 2.0
)

// sampleSetup writes the sample pipeline (data/pipeline.yaml: filter, pack,
// simulate, correct, interact, explain, audit, dedup) over a part of the
// sample inputs into a temporary directory, with a scripted model priced
// like a small hosted one (model settings extra added), and returns the
// pipeline file.
func sampleSetup(t *testing.T, extra string) string {
	t.Helper()
	if ex, err := executors.Open(context.Background(), "bwrap://"); err != nil {
		t.Skip("bubblewrap sandbox unavailable: ", err)
	} else {
		ex.Close()
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A part of each sample input keeps the test short: 10 problems, 15
	// queries (related ones, so pack groups some) and the InterCode tasks.
	for _, f := range []struct {
		name string
		n    int
	}{{"problems.jsonl", 10}, {"queries.jsonl", 15}} {
		b, err := os.ReadFile(filepath.Join(root, "data", f.name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfterN(string(b), "\n", f.n+1)
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(strings.Join(lines[:f.n], "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := schema.LoadProblems(filepath.Join(dir, "problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	byText := map[string]string{}
	for _, p := range ps {
		byText[strings.TrimSpace(p.Text)] = p.Solution
	}
	srv := llmtest.New(t)
	persona := &llmtest.Persona{Solve: func(task string) (string, string, bool) {
		first, _, _ := strings.Cut(strings.TrimSpace(task), "\n\n")
		if s, ok := byText[strings.TrimSpace(first)]; ok {
			return s, "", true
		}
		// A query has no reference: any program the judge then accepts.
		return "def answer(items):\n    return sorted(items)\n\nprint(answer([3, 1, 2]))\n", "", true
	}}
	// InterCode tasks: the gold action, after a look around on every
	// other task (a real observation that does not solve it yet).
	golds := map[string]string{}
	for _, f := range []string{"bash_tasks.jsonl", "sql_tasks.jsonl"} {
		ts, err := agent.LoadTasks(filepath.Join(root, "data", "intercode", f), "")
		if err != nil {
			t.Fatal(err)
		}
		for i, tk := range ts {
			golds[strings.TrimSpace(tk.Query)] = tk.Gold
			if i%2 == 1 {
				golds["look:"+strings.TrimSpace(tk.Query)] = map[string]string{"bash": "ls -R /testbed", "sql": "SELECT * FROM book LIMIT 3"}[tk.Env]
			}
		}
	}
	persona.Act = func(query string) (string, string, bool) {
		g, ok := golds[query]
		return g, golds["look:"+query], ok
	}
	srv.Script(persona.Script())
	y, err := os.ReadFile(filepath.Join(root, "data", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("path: out/", "path: "+dir+"/out/",
		"{path: intercode", "{path: "+root+"/data/intercode").Replace(string(y))
	text += fmt.Sprintf("model: {base_url: %q, model: small, prices: {small: {input_per_m: 2, output_per_m: 8}}%s}\n", srv.URL, extra)
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// runSample runs the pipeline file (dry or not) on its run directory.
func runSample(t *testing.T, file string, dry bool) *pipeline.Manifest {
	t.Helper()
	cfg, err := pipeline.Load(file, filepath.Join(filepath.Dir(file), "run"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{DryRun: dry})
	if err != nil {
		t.Fatalf("run (dry %v): %v", dry, err)
	}
	return m
}

// TestSampleModelRuns runs the sample pipeline on a part of the sample
// inputs against the scripted model: first --dry-run, then live, then in
// batch mode; the estimate is held to the live run's manifest and the batch
// run to the live run's dialogues and prices.
func TestSampleModelRuns(t *testing.T) {
	file := sampleSetup(t, "")
	dry := runSample(t, file, true)
	real := runSample(t, file, false)
	t.Run("dry-run estimate", func(t *testing.T) { checkEstimate(t, dry, real) })
	t.Run("batch equals live", func(t *testing.T) { checkBatchEqualsLive(t, file, real) })
}

// checkEstimate holds the dry run's estimate to the run it predicted.
func checkEstimate(t *testing.T, dry, real *pipeline.Manifest) {
	est := dry.Estimate
	if est == nil {
		t.Fatal("the dry run estimated nothing")
	}
	prices := llm.Prices{"small": {InputPerM: 2, OutputPerM: 8}}
	if want := prices.Cost("small", int(est.PromptTokens), int(est.CompletionTokens)); math.Abs(est.LiveCostUSD-want) > 1e-9 {
		t.Errorf("estimated live cost $%.6f, want $%.6f from the price table", est.LiveCostUSD, want)
	}
	if math.Abs(est.BatchCostUSD-est.LiveCostUSD/2) > 1e-9 || est.Batched || est.CostUSD != est.LiveCostUSD {
		t.Errorf("estimate %+v: want batch cost half the live cost, and the live cost charged (no endpoint batches)", est)
	}
	within := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s: estimated %.4g, the run took %.4g (tolerance %.0f%%)", what, got, want, tol*100)
		}
	}
	within("total calls", float64(est.Requests), float64(real.Usage.Requests), estTotalTolerance)
	if r := est.CostUSD / real.Usage.CostUSD; r > estCostFactor || r < 1/estCostFactor {
		t.Errorf("estimated $%.4f, the run cost $%.4f: off by more than a factor of %v", est.CostUSD, real.Usage.CostUSD, estCostFactor)
	}
	for i, s := range real.Stages {
		e := dry.Stages[i].Estimate
		t.Logf("%-16s estimated %+v; ran %+v", s.Name, e, s.Usage)
		if s.Usage.Requests == 0 {
			if e != nil && e.Requests > 0 {
				t.Errorf("%s: estimated %d calls, the run made none", s.Name, e.Requests)
			}
			continue
		}
		if e == nil {
			t.Errorf("%s made %d calls and has no estimate", s.Name, s.Usage.Requests)
			continue
		}
		if s.Name == "filter" && e.Requests != s.Usage.Requests {
			t.Errorf("filter: estimated %d calls, the run made %d (one per rubric and query)", e.Requests, s.Usage.Requests)
		}
		within(s.Name+" calls", float64(e.Requests), float64(s.Usage.Requests), estStageTolerance)
	}
}

// checkBatchEqualsLive runs the sample pipeline with `batch: true` on the
// model (every model stage) against the same scripted model as the live
// run: the dialogues are identical, prose included (execution times and the
// judge's per-run marker aside), every answer came from a batch, each model
// stage costs half its live cost, and the manifest records what batching
// saved.
func checkBatchEqualsLive(t *testing.T, live string, lm *pipeline.Manifest) {
	batch := sampleSetup(t, ", batch: true, batch_window: 300ms, batch_poll: 20ms")
	bm := runSample(t, batch, false)
	ld, bd := sampleDialogues(t, live), sampleDialogues(t, batch)
	if len(ld) == 0 || len(ld) != len(bd) {
		t.Fatalf("live run wrote %d dialogues, batch run %d", len(ld), len(bd))
	}
	for i := range ld {
		if ld[i] != bd[i] {
			t.Fatalf("dialogue %d differs:\nlive:  %.600s\nbatch: %.600s", i, ld[i], bd[i])
		}
	}
	for i, s := range bm.Stages {
		l := lm.Stages[i].Usage
		u := s.Usage
		if u.Requests != l.Requests || u.BatchRequests != u.Requests {
			t.Errorf("%s: %d requests, %d through batches; live %d", s.Name, u.Requests, u.BatchRequests, l.Requests)
		}
		if math.Abs(u.CostUSD-l.CostUSD/2) > 1e-9 || math.Abs(u.BatchSavedUSD-l.CostUSD/2) > 1e-9 {
			t.Errorf("%s: cost $%.6f, saved $%.6f; live $%.6f: want half each", s.Name, u.CostUSD, u.BatchSavedUSD, l.CostUSD)
		}
	}
	if bm.Usage.Requests == 0 || bm.Usage.BatchRequests != bm.Usage.Requests {
		t.Errorf("batch run usage %+v: want every request through a batch", bm.Usage)
	}
}

var judgeMarker = regexp.MustCompile(`@@cfjudge:[0-9a-f]+`)

// sampleDialogues reads the published dialogues of a sample run, each
// re-encoded without its executions' times and with the judge's marker
// masked.
func sampleDialogues(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "out", "dialogues.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var d schema.Dialogue
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		for i := range d.Messages {
			if e := d.Messages[i].Exec; e != nil {
				e.ExecutedAt, e.Duration = time.Time{}, 0
				e.Code = judgeMarker.ReplaceAllString(e.Code, "@@cfjudge:MARKER")
			}
		}
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(enc))
	}
	return out
}
