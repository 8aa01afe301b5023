package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"

	// The stages and services data/pipeline.yaml may name, as the CLI
	// registers them.
	_ "github.com/codefeedback/codefeedback/internal/builtin"
)

// sampleRun is one run of the sample pipeline, shared by the tests of this
// package (it takes a while: every mutant runs in the sandbox).
type sampleRun struct {
	dir      string // working directory of the run (outputs are relative to it)
	runDir   string
	manifest *pipeline.Manifest
	written  *Written
	output   string // the published dialogue file
	audited  bool
	err      error
	skip     string
}

var (
	sampleOnce sync.Once
	sample     sampleRun
)

// runSample runs data/pipeline.yaml when the repository has one, else a
// pipeline built here from data/problems.jsonl with the stages that exist:
// correct (mutation, through bubblewrap) and, when the benchmarks are in
// ../shared/data, audit against HumanEval and MBPP. Then it builds the
// report and the dataset card, as the run command does.
func runSample(t *testing.T) *sampleRun {
	t.Helper()
	sampleOnce.Do(func() {
		root, err := sharedtest.Root()
		if err != nil {
			sample.err = err
			return
		}
		ctx := context.Background()
		ex, err := executors.Open(ctx, "bwrap://")
		if err != nil {
			sample.skip = "bubblewrap sandbox unavailable: " + err.Error()
			return
		}
		ex.Close()
		dir, err := os.MkdirTemp("", "report-sample-")
		if err != nil {
			sample.err = err
			return
		}
		sample.dir = dir
		sample.runDir = filepath.Join(dir, "run")
		file := filepath.Join(root, "data", "pipeline.yaml")
		if !fileExists(file) {
			file = filepath.Join(dir, "pipeline.yaml")
			audit := "  - {stage: audit, settings: {against: [humaneval, mbpp], missing: skip}}\n"
			y := "inputs: [{path: " + filepath.Join(root, "data", "problems.jsonl") + ", format: mbpp}]\n" +
				"executor: bwrap://\n" +
				"stages:\n" +
				"  - {stage: correct, concurrency: 2, settings: {method: mutation, seed: 1}}\n" + audit +
				"outputs: [{path: out/dialogues.jsonl, format: jsonl, kind: dialogue}]\n"
			if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
				sample.err = err
				return
			}
		}
		// Outputs are relative to the working directory of the run, and the
		// audit finds the benchmarks relative to the repository unless told.
		if d := sharedtest.DataDir(); d != "" && os.Getenv("CODEFEEDBACK_BENCH_DIR") == "" {
			os.Setenv("CODEFEEDBACK_BENCH_DIR", d)
			defer os.Unsetenv("CODEFEEDBACK_BENCH_DIR")
		}
		wd, _ := os.Getwd()
		if err := os.Chdir(dir); err != nil {
			sample.err = err
			return
		}
		defer os.Chdir(wd)
		cfg, err := pipeline.Load(file, sample.runDir)
		if err != nil {
			sample.err = err
			return
		}
		sample.manifest, err = pipeline.Run(ctx, cfg, pipeline.RunOptions{Version: "test"})
		if err != nil {
			sample.err = err
			return
		}
		for _, s := range sample.manifest.Stages {
			if s.Type == "audit" && s.Stats["dialogues"] > 0 {
				sample.audited = true // the audit had benchmarks to check against
			}
		}
		for _, o := range sample.manifest.Outputs {
			if o.Kind == pipeline.KindDialogue && sample.output == "" {
				sample.output = filepath.Join(dir, o.Path)
			}
		}
		sample.written, sample.err = Build(ctx, sample.runDir, Options{License: "apache-2.0"})
		if sample.written != nil {
			for i, c := range sample.written.Cards {
				sample.written.Cards[i] = filepath.Join(dir, c)
			}
		}
	})
	if sample.skip != "" {
		t.Skip("skipping: " + sample.skip)
	}
	if sample.err != nil {
		t.Fatalf("sample run: %v", sample.err)
	}
	return &sample
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sample.dir != "" && os.Getenv("REPORT_KEEP") == "" {
		os.RemoveAll(sample.dir)
	}
	os.Exit(code)
}

// recount holds numbers computed from the published output file alone,
// without the report package's code.
type recount struct {
	dialogues  int
	messages   map[string]int
	executions int
	outcomes   []map[string]int
	bugKinds   map[string]int
	ops        map[string]int
}

type rawExec struct {
	ExitCode  int    `json:"exit_code"`
	TimedOut  bool   `json:"timed_out"`
	OOM       bool   `json:"oom"`
	Exception string `json:"exception"`
	Passed    *bool  `json:"passed"`
}

// outcomeOf restates the report's outcome names from the record's fields.
func outcomeOf(e rawExec) string {
	if e.Passed != nil && *e.Passed {
		return "pass"
	}
	if e.TimedOut {
		return "timeout"
	}
	if e.OOM {
		return "oom"
	}
	if e.Exception != "" {
		return e.Exception
	}
	if e.Passed != nil {
		return "fail"
	}
	if e.ExitCode != 0 {
		return "exit-" + itoa(e.ExitCode)
	}
	return "ok"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func recountFile(t *testing.T, path string) recount {
	t.Helper()
	type dialogue struct {
		Messages []struct {
			Role string   `json:"role"`
			Exec *rawExec `json:"exec"`
		} `json:"messages"`
		Labels map[string]string `json:"labels"`
	}
	r := recount{messages: map[string]int{}, bugKinds: map[string]int{}, ops: map[string]int{}}
	for _, d := range pipelinetest.ReadJSONL[dialogue](t, path) {
		r.dialogues++
		r.messages[itoa(len(d.Messages))]++
		if k := d.Labels["bug_kind"]; k != "" {
			r.bugKinds[k]++
		}
		if k := d.Labels["mutation_op"]; k != "" {
			r.ops[k]++
		}
		n := 0
		for _, m := range d.Messages {
			if m.Role != "execution" || m.Exec == nil {
				continue
			}
			r.executions++
			if n == len(r.outcomes) {
				r.outcomes = append(r.outcomes, map[string]int{})
			}
			r.outcomes[n][outcomeOf(*m.Exec)]++
			n++
		}
	}
	return r
}

// embedded reads the JSON blob the report page carries.
func embedded(t *testing.T, page string) Data {
	t.Helper()
	const open = `<script type="application/json" id="report-data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("report has no #report-data blob")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	if j < 0 {
		t.Fatal("report-data blob is not closed")
	}
	var d Data
	if err := json.Unmarshal([]byte(rest[:j]), &d); err != nil {
		t.Fatalf("report-data blob: %v", err)
	}
	return d
}

func equalCounts(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s[%s]: got %d, want %d (all: got %v, want %v)", what, k, got[k], v, got, want)
		}
	}
}

// countItems counts the items of a stage output (a file, or keys into the
// run's store).
func countItems(t *testing.T, runDir, output string) int64 {
	t.Helper()
	var n int64
	for _, err := range pipeline.ReadOutput(context.Background(), runDir, output) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestSampleRunNumbers checks that the report of the sample run shows the
// numbers recounted from the output files.
func TestSampleRunNumbers(t *testing.T) {
	s := runSample(t)
	if s.output == "" {
		t.Fatal("the sample pipeline published no dialogue output")
	}
	page, err := os.ReadFile(s.written.Report)
	if err != nil {
		t.Fatal(err)
	}
	got := embedded(t, string(page))
	want := recountFile(t, s.output)
	if want.dialogues == 0 {
		t.Fatal("the sample run produced no dialogues; nothing to check")
	}
	ds := got.Dataset
	if ds.Dialogues != want.dialogues {
		t.Errorf("dialogues: got %d, want %d", ds.Dialogues, want.dialogues)
	}
	if ds.Executions != want.executions {
		t.Errorf("executions: got %d, want %d", ds.Executions, want.executions)
	}
	equalCounts(t, "messages per dialogue", ds.Messages, want.messages)
	equalCounts(t, "bug kinds", ds.Labels["bug_kind"], want.bugKinds)
	equalCounts(t, "mutation operators", ds.Labels["mutation_op"], want.ops)
	if len(ds.Outcomes) != len(want.outcomes) {
		t.Errorf("outcome iterations: got %d, want %d", len(ds.Outcomes), len(want.outcomes))
	}
	for i := range min(len(ds.Outcomes), len(want.outcomes)) {
		equalCounts(t, "outcomes of execution "+itoa(i+1), ds.Outcomes[i].Kinds, want.outcomes[i])
	}
	// The visible page shows the same totals.
	for id, n := range map[string]int{"dataset-dialogues": want.dialogues, "dataset-executions": want.executions, "run-dialogues": want.dialogues} {
		if !strings.Contains(string(page), `id="`+id+`">`+itoa(n)+"<") {
			t.Errorf("page element #%s does not show %d", id, n)
		}
	}
	// Stage table: counts equal the lines of each stage's output file.
	for _, st := range got.Stages {
		for _, rec := range s.manifest.Stages {
			if rec.Name != st.Name || rec.Output == "" {
				continue
			}
			if n := countItems(t, s.runDir, rec.Output); st.Counts.Out != n {
				t.Errorf("stage %s out: report says %d, its output file has %d items", st.Name, st.Counts.Out, n)
			}
		}
	}
	// The correct section's operator chart matches the recount of its labels.
	for _, sec := range got.Sections {
		if sec.Type != "correct" {
			continue
		}
		if sec.NotRun {
			t.Error("correct section says the stage did not run")
		}
		for _, in := range sec.Instances {
			for _, c := range in.Charts {
				if c.ID == section.ChartID(in.Name, "operators") {
					m := map[string]int{}
					for _, b := range c.Bars {
						m[b.Label] = int(b.Value)
					}
					// The audit may drop some dialogues after correct, so the
					// chart counts the correct stage's own output.
					total := 0
					for _, v := range m {
						total += v
					}
					if total < want.dialogues {
						t.Errorf("operator chart totals %d, fewer than the %d dialogues published", total, want.dialogues)
					}
				}
			}
		}
	}
	if s.audited {
		checkLeakage(t, s, got)
	}
}

// checkLeakage recounts flagged dialogues per benchmark from the audit's
// removed list and the audited total from the correct stage's output.
func checkLeakage(t *testing.T, s *sampleRun, got Data) {
	t.Helper()
	// The audit reads its input stages' outputs; the dialogues among those
	// items are what it audits.
	var auditName string
	var auditIn int64
	outputs := map[string]string{}
	for _, rec := range s.manifest.Stages {
		outputs[rec.Name] = rec.Output
	}
	for _, rec := range s.manifest.Stages {
		if rec.Type != "audit" {
			continue
		}
		auditName = rec.Name
		for _, src := range rec.Input {
			out := outputs[src]
			if src == pipeline.InputsName {
				out = filepath.Join("stages", src, "out.jsonl.zst")
			}
			for it, err := range pipeline.ReadOutput(context.Background(), s.runDir, out) {
				if err != nil {
					t.Fatal(err)
				}
				if it.Kind == pipeline.KindDialogue {
					auditIn++
				}
			}
		}
	}
	type removedRec struct {
		Findings []struct {
			Benchmark string `json:"benchmark"`
		} `json:"findings"`
	}
	flagged := map[string]int{}
	removed := 0
	for _, r := range pipelinetest.ReadJSONL[removedRec](t, filepath.Join(s.runDir, auditName+".removed.jsonl")) {
		removed++
		seen := map[string]bool{}
		for _, fd := range r.Findings {
			if !seen[fd.Benchmark] {
				seen[fd.Benchmark] = true
				flagged[fd.Benchmark]++
			}
		}
	}
	if len(got.Leakage) == 0 {
		t.Fatal("the audit ran but the report shows no leakage rows")
	}
	for _, l := range got.Leakage {
		if l.Flagged != flagged[l.Benchmark] {
			t.Errorf("leakage %s flagged: got %d, removed list has %d", l.Benchmark, l.Flagged, flagged[l.Benchmark])
		}
		if int64(l.Dialogues) != auditIn {
			t.Errorf("leakage %s dialogues audited: got %d, audit input had %d", l.Benchmark, l.Dialogues, auditIn)
		}
		if l.LineRatio < 0 || l.LineRatio > 1 {
			t.Errorf("leakage %s line ratio %v outside [0,1]", l.Benchmark, l.LineRatio)
		}
	}
	// Decontaminated (the default): published = audited - removed.
	if want := int(auditIn) - removed; got.Dataset.Dialogues != want {
		t.Errorf("published dialogues %d, want audited %d - removed %d", got.Dataset.Dialogues, auditIn, removed)
	}
}
