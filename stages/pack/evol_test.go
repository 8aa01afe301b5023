package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
	_ "github.com/codefeedback/codefeedback/stages/filter"
)

// evolRecords is an Evol-Instruct-style file (instruction + output, one
// Magicoder-style instruction + response): no tests.
var evolRecords = []map[string]string{
	{"instruction": "Write a Python function that returns the nth Fibonacci number using recursion, and explain its complexity.", "output": "```python\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n```\nIt takes exponential time."},
	{"instruction": "Rewrite the Fibonacci function in Python so it computes the nth Fibonacci number iteratively in linear time.", "output": "```python\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n```"},
	{"instruction": "Reverse the order of the words of a sentence in Python, keeping single spaces between words.", "output": "```python\ndef rev(s):\n    return ' '.join(s.split()[::-1])\n```"},
	{"instruction": "Write Python code that reverses the words in a given sentence and handles leading and trailing spaces.", "response": "```python\ndef rev(s):\n    return ' '.join(reversed(s.strip().split()))\n```"},
	{"instruction": "Configure a firewall rule with iptables that blocks incoming traffic on port 23.", "output": "iptables -A INPUT -p tcp --dport 23 -j DROP"},
}

// runEvol runs the pipeline file y (with %s for the input and output
// paths' directory) over the Evol-Instruct-style file and returns the
// manifest, the published items and the log.
func runEvol(t *testing.T, y string) (*pipeline.Manifest, []pipeline.Item, string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for _, r := range evolRecords {
		j, _ := json.Marshal(r)
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "evol.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.items.jsonl")
	cfg := pipelinetest.Load(t, dir, "run_dir: "+filepath.Join(dir, "run")+"\n"+strings.ReplaceAll(y, "OUT", out))
	var logs bytes.Buffer
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	items := pipelinetest.Items(t, out)
	return m, items, logs.String()
}

// TestEvolInstructRatedAndPacked: an instruction/output file imports as
// queries (the outputs kept as reference answers), filter rates them and
// pack packs them, with no pass-through warning.
func TestEvolInstructRatedAndPacked(t *testing.T) {
	clearEnv(t)
	srv := llmtest.New(t)
	srv.Script((&llmtest.Persona{}).Script()) // rates every query 4 on both rubrics
	m, items, logs := runEvol(t, `inputs: [{path: evol.jsonl}]
model: {base_url: `+srv.URL+`, model: rater-1}
stages:
  - {stage: filter}
  - {stage: pack, input: [filter], settings: {sizes: [2], floor: 0.2}}
outputs: [{path: OUT, format: items, from: pack}]
`)
	fs, ps := pipelinetest.Stage(t, m, "filter").Stats, pipelinetest.Stage(t, m, "pack").Stats
	if fs["rated"] != 5 || fs["kept"] != 5 || fs["gate/rubric_skills/checked"] != 5 {
		t.Errorf("filter stats %v, want 5 queries rated and kept", fs)
	}
	ds, left := dialogues(t, items)
	if ps["queries"] != 5 || len(ds) != 2 || len(left) != 1 {
		t.Errorf("pack: %v queries, %d dialogues, %d single queries; want 5, 2 and 1 (stats %v)", ps["queries"], len(ds), len(left), ps)
	}
	for _, it := range items {
		if it.Kind != pipeline.KindQuery {
			continue
		}
		q, err := pipeline.As[schema.Query](it, it.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if ref := schema.ReferenceAnswer(q); !strings.Contains(ref, "iptables") {
			t.Errorf("single query %s carries reference answer %q, want its output", q.ID, ref)
		}
	}
	if strings.Contains(logs, "passed all") || fs["passed_through"] != 0 || ps["passed_through"] != 0 {
		t.Errorf("a pass-through warning on rated and packed queries:\n%s", logs)
	}
}

// TestPassThroughWarns: filter without a model and pack over problems only
// pass every item through; each says so once, with the count and the
// reason, in the log and the stats.
func TestPassThroughWarns(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		name, yaml, stage, why string
		n                      float64
	}{
		{"filter without model", `inputs: [{path: evol.jsonl}]
stages:
  - {stage: filter}
outputs: [{path: OUT, format: items}]
`, "filter", "no_model", 5},
		{"pack over problems", `inputs: [{path: evol.jsonl, as: problem}]
stages:
  - {stage: pack}
outputs: [{path: OUT, format: items}]
`, "pack", "no_queries", 5},
		{"filter over problems", `inputs: [{path: evol.jsonl, as: problem}]
model: {base_url: http://127.0.0.1:9/v1, model: unused}
stages:
  - {stage: filter}
outputs: [{path: OUT, format: items}]
`, "filter", "no_queries", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, items, logs := runEvol(t, tc.yaml)
			if len(items) != 5 {
				t.Errorf("got %d items, want the 5 passed through", len(items))
			}
			st := pipelinetest.Stage(t, m, tc.stage).Stats
			if st["passed_through"] != tc.n || st["passed_through/"+tc.why] != 1 {
				t.Errorf("stats %v, want passed_through %v and passed_through/%s", st, tc.n, tc.why)
			}
			var warns []string
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "passed all") {
					warns = append(warns, l)
				}
			}
			want := "stage " + tc.stage + " passed all 5 items through"
			if len(warns) != 1 || !strings.Contains(warns[0], want) || !strings.Contains(warns[0], "reason="+tc.why) {
				t.Errorf("got warnings %q, want one saying %q with reason=%s", warns, want, tc.why)
			}
		})
	}
}

// TestNewCodeAlpacaRatedAndPacked imports the first 300 records of the real
// new_codealpaca file (instruction, input, response, output: the
// instruction/output pairs of issue 30) with the default settings: every
// record is a query with its reference answer, filter rates each on both
// rubrics and pack packs them.
func TestNewCodeAlpacaRatedAndPacked(t *testing.T) {
	clearEnv(t)
	path := sharedtest.Path(t, "queries/new_codealpaca.json.gz")
	srv := llmtest.New(t, llmtest.WithoutRecording())
	srv.Script((&llmtest.Persona{}).Script())
	dir := t.TempDir()
	out := filepath.Join(dir, "out.items.jsonl")
	y := `inputs: [{path: ` + path + `}]
model: {base_url: ` + srv.URL + `, model: rater-1}
stages:
  - {stage: filter}
  - {stage: pack}
outputs: [{path: ` + out + `, format: items}]
`
	cfg := pipelinetest.Load(t, dir, "run_dir: "+filepath.Join(dir, "run")+"\n"+y)
	const n = 300
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	items := pipelinetest.Items(t, filepath.Join(dir, "out.limit-300.items.jsonl")) // a limited run's outputs say so
	ds, left := dialogues(t, items)
	fs, ps := pipelinetest.Stage(t, m, "filter").Stats, pipelinetest.Stage(t, m, "pack").Stats
	turns := 0
	for _, d := range ds {
		turns += len(d.Sources)
	}
	t.Logf("%d records: filter rated %.0f (%.0f ratings checked), kept %.0f; pack: %.0f queries, %d dialogues (%d queries), %d single",
		n, fs["rated"], fs["gate/rubric_skills/checked"]+fs["gate/rubric_effort/checked"], fs["kept"], ps["queries"], len(ds), turns, len(left))
	if fs["rated"] != n || fs["kept"] != n || ps["queries"] != n || turns+len(left) != n || len(ds) == 0 {
		t.Errorf("filter %v, pack %v: want all %d records rated, kept and packed or left single", fs, ps, n)
	}
}
