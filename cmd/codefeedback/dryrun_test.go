package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
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

// TestDryRunEstimate runs the sample pipeline (data/pipeline.yaml: filter,
// pack, simulate, correct, interact, explain, audit, dedup) on a part of the
// sample inputs, with a scripted model priced like a small hosted one:
// first --dry-run, then for real, and holds the estimate to the run's
// manifest.
func TestDryRunEstimate(t *testing.T) {
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
	srv.Script(persona.Script())
	y, err := os.ReadFile(filepath.Join(root, "data", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("path: out/", "path: "+dir+"/out/",
		"{path: intercode", "{path: "+root+"/data/intercode").Replace(string(y))
	text += fmt.Sprintf("model: {base_url: %q, model: small, prices: {small: {input_per_m: 2, output_per_m: 8}}}\n", srv.URL)
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(dry bool) *pipeline.Manifest {
		cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{DryRun: dry})
		if err != nil {
			t.Fatalf("run (dry %v): %v", dry, err)
		}
		return m
	}
	dry := run(true)
	real := run(false)

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
