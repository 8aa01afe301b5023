package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// benchRun writes a run directory with n correct-style dialogues (six
// messages, two execution records) as one stage's output.
func benchRun(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	p := filepath.Join(dir, "stages", "correct", "out.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o755)
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	code := "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
	yes, no := true, false
	for i := range n {
		d := schema.Dialogue{ID: fmt.Sprintf("dlg-%08d", i), Stage: "correct", Method: "mutation",
			Labels: map[string]string{"bug_kind": []string{"syntax", "name", "logic"}[i%3], "mutation_op": fmt.Sprintf("op%d", i%11), "final_status": "pass"},
			Messages: []schema.Message{
				{Role: "user", Content: "Write f(xs) returning the sum.\n```python\nassert f([1,2]) == 3\n```"},
				{Role: "assistant", Content: "Here:\n```python\n" + code + "```"},
				{Role: "execution", Content: "Traceback ...\nNameError: name 'tota' is not defined", Exec: &schema.Execution{Language: "python", Code: code, Exception: "NameError", ExitCode: 1, Passed: &no, Duration: time.Millisecond}},
				{Role: "assistant", Content: "Fixed:\n```python\n" + code + "```"},
				{Role: "execution", Content: "All tests passed.", Exec: &schema.Execution{Language: "python", Code: code, Passed: &yes, Duration: time.Millisecond}},
				{Role: "assistant", Content: "Done."},
			}}
		it, _ := pipeline.DialogueItem(d)
		j, _ := json.Marshal(it)
		w.Write(append(j, '\n'))
	}
	w.Flush()
	f.Close()
	m := &pipeline.Manifest{Status: "complete", RunDir: dir, Stages: []pipeline.StageRecord{{Name: "correct", Type: "correct", Status: "ran",
		Output: "stages/correct/out.jsonl", Stats: map[string]float64{"dialogues": float64(n)}}}}
	j, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "manifest.json"), j, 0o644)
	return dir
}

// BenchmarkReport renders the report of a 20,000-dialogue run (Collect,
// which reads the output twice: dataset and operator chart, plus the HTML
// of the default sample) against a baseline that only decodes every
// dialogue of the same file once. Reported: ns per dialogue of each and
// their ratio.
func BenchmarkReport(b *testing.B) {
	const n = 20_000
	dir := benchRun(b, n)
	ctx := context.Background()
	var base, rep time.Duration
	for b.Loop() {
		t0 := time.Now()
		f, _ := os.Open(filepath.Join(dir, "stages", "correct", "out.jsonl"))
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var it pipeline.Item
			var d schema.Dialogue
			if json.Unmarshal(sc.Bytes(), &it) != nil || it.Decode(&d) != nil {
				b.Fatal("decode")
			}
		}
		f.Close()
		t1 := time.Now()
		d, err := Collect(ctx, dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteHTML(io.Discard, d); err != nil {
			b.Fatal(err)
		}
		if d.Dataset.Dialogues != n {
			b.Fatalf("counted %d dialogues, want %d", d.Dataset.Dialogues, n)
		}
		base += t1.Sub(t0)
		rep += time.Since(t1)
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N*n), "baseline-ns/dialogue")
	b.ReportMetric(float64(rep.Nanoseconds())/float64(b.N*n), "report-ns/dialogue")
	b.ReportMetric(float64(rep)/float64(base), "report/baseline")
}
