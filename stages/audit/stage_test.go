package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

func runTestStage(t *testing.T, o StageOptions, ds []schema.Dialogue) ([]pipeline.Item, *pipeline.Services) {
	t.Helper()
	svc := &pipeline.Services{Stats: pipeline.NewStats(), RunDir: t.TempDir(), Name: "audit"}
	st, err := newStage(o, svc)
	if err != nil {
		t.Fatal(err)
	}
	in := func(yield func(pipeline.Item, error) bool) {
		for _, d := range ds {
			it, err := pipeline.DialogueItem(d)
			if !yield(it, err) {
				return
			}
		}
	}
	var out []pipeline.Item
	if err := st.(pipeline.AllStage).All(context.Background(), in, func(it pipeline.Item) error { out = append(out, it); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, svc
}

func TestStage(t *testing.T) {
	ds, planted := plantedCorpus(t)
	o := DefaultStageOptions
	o.BenchDir = sharedtest.DataDir()

	out, svc := runTestStage(t, o, ds)
	if len(out) != len(ds)-len(planted) {
		t.Errorf("decontaminate: got %d items, want %d", len(out), len(ds)-len(planted))
	}
	// Clean dialogues come out in input order.
	k := 0
	for _, d := range ds {
		if planted[d.ID] {
			continue
		}
		if k < len(out) && out[k].ID != d.ID {
			t.Errorf("item %d: got %s, want %s", k, out[k].ID, d.ID)
			break
		}
		k++
	}
	vals, _ := svc.Stats.Snapshot()
	if vals["flagged"] != float64(len(planted)) || vals["dialogues"] != float64(len(ds)) {
		t.Errorf("stats: flagged %v of %v, want %d of %d", vals["flagged"], vals["dialogues"], len(planted), len(ds))
	}
	rm, err := schema.ReadAll[leak.Removed](filepath.Join(svc.RunDir, "audit.removed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rm) != len(planted) {
		t.Errorf("removed list: got %d, want %d", len(rm), len(planted))
	}
	if _, err := os.Stat(filepath.Join(svc.RunDir, "audit.report.json")); err != nil {
		t.Errorf("report: %v", err)
	}

	// With the paraphrase check (TF-IDF, no embedder service) the planted
	// dialogues are still removed, plus whatever the check adds.
	oe := o
	oe.Embedding = true
	out, svc = runTestStage(t, oe, ds)
	vals, _ = svc.Stats.Snapshot()
	if vals["flagged"] < float64(len(planted)) || len(out) != len(ds)-int(vals["flagged"]) {
		t.Errorf("embedding: flagged %v, kept %d of %d, want >= %d flagged and the rest kept", vals["flagged"], len(out), len(ds), len(planted))
	}

	o.Decontaminate = false
	out, _ = runTestStage(t, o, ds)
	if len(out) != len(ds) {
		t.Fatalf("label only: got %d items, want %d", len(out), len(ds))
	}
	labelled := 0
	for _, it := range out {
		d, err := pipeline.As[schema.Dialogue](it, pipeline.KindDialogue)
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels["audit"] != "" {
			labelled++
			if !planted[d.ID] {
				t.Errorf("%s labelled but not planted", d.ID)
			}
		}
	}
	if labelled != len(planted) {
		t.Errorf("labelled %d, want %d", labelled, len(planted))
	}
}

func TestStageOptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*StageOptions)
		ok   bool
	}{
		{"defaults", func(*StageOptions) {}, true},
		{"no benchmarks", func(o *StageOptions) { o.Against = nil }, false},
		{"threshold 0", func(o *StageOptions) { o.Threshold = 0 }, false},
		{"threshold above 1", func(o *StageOptions) { o.Threshold = 1.5 }, false},
		{"ngram 0", func(o *StageOptions) { o.NGram = 0 }, false},
	}
	for _, c := range cases {
		o := DefaultStageOptions
		o.Against = append([]string(nil), o.Against...)
		c.mod(&o)
		if err := o.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if _, err := newStage(StageOptions{Against: []string{"/no/such/file"}, Threshold: 0.5, NGram: 13, Window: 2}, &pipeline.Services{}); err == nil {
		t.Errorf("unknown benchmark file: newStage gave no error")
	}
}

// A benchmark whose file is absent fails the stage by default; with
// missing: skip the stage passes items on and records what it could not check.
func TestStageMissingBenchmarks(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		missing string
		wantErr bool
	}{{"fail", true}, {"skip", false}} {
		t.Run(tc.missing, func(t *testing.T) {
			o := DefaultStageOptions
			o.BenchDir = empty
			o.Missing = tc.missing
			svc := &pipeline.Services{Stats: pipeline.NewStats(), RunDir: t.TempDir(), Name: "audit"}
			st, err := newStage(o, svc)
			if all, ok := st.(pipeline.AllStage); err == nil && ok {
				err = all.All(context.Background(), func(func(pipeline.Item, error) bool) {}, func(pipeline.Item) error { return nil })
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("missing=%s: got err %v, want error %v", tc.missing, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			d := schema.Dialogue{ID: "d1", Messages: []schema.Message{{Role: "user", Content: "hi"}}}
			it, _ := pipeline.DialogueItem(d)
			out, err := st.(pipeline.EachStage).Each(context.Background(), it)
			if err != nil || len(out) != 1 || out[0].ID != it.ID {
				t.Errorf("pass-through: got %v, %v; want the item back", out, err)
			}
			vals, _ := svc.Stats.Snapshot()
			if vals["benchmarks_missing"] != 2 || vals["benchmarks_checked"] != 0 {
				t.Errorf("stats: got %v, want 2 missing and 0 checked", vals)
			}
		})
	}
}

// Items that are not dialogues (queries, problems) pass through the audit
// unchanged, alongside the clean dialogues.
func TestStagePassesOtherKinds(t *testing.T) {
	bench := filepath.Join(t.TempDir(), "bench.jsonl")
	if err := os.WriteFile(bench, []byte(`{"task_id": 1, "text": "Write a function to add two numbers.", "code": "def add_two_numbers(a, b):\n    total_sum = a + b\n    return total_sum", "test_list": ["assert add_two_numbers(1, 2) == 3"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultStageOptions
	o.Against = []string{bench}
	svc := &pipeline.Services{Stats: pipeline.NewStats(), RunDir: t.TempDir(), Name: "audit"}
	st, err := newStage(o, svc)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := pipeline.QueryItem(schema.Query{ID: "q1", Text: "sort a list"})
	clean, _ := pipeline.DialogueItem(schema.Dialogue{ID: "d1", Messages: []schema.Message{{Role: "user", Content: "print hello"}, {Role: "assistant", Content: "```python\nprint('hello world')\n```"}}})
	leak, _ := pipeline.DialogueItem(schema.Dialogue{ID: "d2", Messages: []schema.Message{{Role: "user", Content: "add"}, {Role: "assistant", Content: "```python\ndef add_two_numbers(a, b):\n    total_sum = a + b\n    return total_sum\n```"}}})
	in := func(yield func(pipeline.Item, error) bool) {
		for _, it := range []pipeline.Item{q, clean, leak} {
			if !yield(it, nil) {
				return
			}
		}
	}
	got := map[string]bool{}
	if err := st.(pipeline.AllStage).All(context.Background(), in, func(it pipeline.Item) error { got[it.ID] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if !got[q.ID] || !got[clean.ID] || got[leak.ID] || len(got) != 2 {
		t.Errorf("got items %v, want the query and the clean dialogue, not the leaked one", got)
	}
}

// plantedCorpus is 200 Code Alpaca dialogues with four benchmark tasks
// copied in between (the stage's own check; the matching is tested in
// internal/leak).
func plantedCorpus(t *testing.T) (ds []schema.Dialogue, planted map[string]bool) {
	t.Helper()
	load := func(name string) []schema.Problem {
		s, _ := benchmarks.Lookup(name)
		sharedtest.Path(t, s.File) // skips when the shared data is absent
		bs, err := leak.Load([]string{name}, leak.LoadOptions{Dir: sharedtest.DataDir()})
		if err != nil {
			t.Fatal(err)
		}
		return bs[0].Problems
	}
	he, mb := load("humaneval"), load("mbpp")
	ps, err := schema.LoadProblems(sharedtest.Path(t, "queries/code_alpaca_2k.json"))
	if err != nil {
		t.Fatal(err)
	}
	fence := func(s string) string { return "```python\n" + s + "\n```" }
	plants := []schema.Dialogue{
		{ID: "planted-" + he[3].ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: "Can you complete this Python function for me?\n\n" + fence(he[3].Prompt)},
			{Role: schema.RoleAssistant, Content: "Sure:\n\n" + fence(he[3].Prompt+he[3].Solution)}}},
		{ID: "planted-" + mb[20].ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: mb[20].Text + " Your code should pass these tests:\n\n" + strings.Join(mb[20].Tests, "\n")},
			{Role: schema.RoleAssistant, Content: fence(mb[20].Solution)}}},
		{ID: "planted-" + he[100].ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: "Can you complete this Python function for me?\n\n" + fence(he[100].Prompt)},
			{Role: schema.RoleAssistant, Content: "Sure:\n\n" + fence(he[100].Prompt+he[100].Solution)}}},
		{ID: "planted-" + mb[500].ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: mb[500].Text + " Your code should pass these tests:\n\n" + strings.Join(mb[500].Tests, "\n")},
			{Role: schema.RoleAssistant, Content: fence(mb[500].Solution)}}},
	}
	planted = map[string]bool{}
	for i, p := range ps[:200] {
		ds = append(ds, schema.Dialogue{ID: "alpaca-" + p.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: p.Text},
			{Role: schema.RoleAssistant, Content: "```\n" + p.Solution + "\n```"},
		}})
		if i%50 == 7 {
			ds = append(ds, plants[i/50])
			planted[plants[i/50].ID] = true
		}
	}
	return ds, planted
}
