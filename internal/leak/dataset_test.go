package leak

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// plantedCorpus is 200 Code Alpaca dialogues with 4 planted benchmark
// dialogues at known positions.
func plantedCorpus(t *testing.T) (ds []schema.Dialogue, planted map[string]bool) {
	clean := testAlpacaDialogues(t)[:200]
	he, mb := testHumanEval(t), testMBPP(t)
	plants := []schema.Dialogue{plantHumanEval(he[3]), plantMBPP(mb[20]), plantHumanEval(he[100]), plantMBPP(mb[500])}
	planted = map[string]bool{}
	for i, d := range clean {
		ds = append(ds, d)
		if i%50 == 7 {
			p := plants[i/50]
			ds = append(ds, p)
			planted[p.ID] = true
		}
	}
	return ds, planted
}

func TestDecontaminateJSONL(t *testing.T) {
	ds, planted := plantedCorpus(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var buf bytes.Buffer
	for i, d := range ds {
		// Code-Feedback records: integer ids, {role, content} turns.
		rec := map[string]any{"id": 1000 + i, "messages": d.Messages}
		if planted[d.ID] {
			rec["id"] = d.ID
		}
		b, _ := json.Marshal(rec)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	a := testAuditor(t, Options{})
	flagged := FlaggedBySeq{}
	rep, err := a.Run(context.Background(), ReadDialogues(context.Background(), in), flagged.Add)
	if err != nil {
		t.Fatal(err)
	}
	// The parallel raw-record path gives the same report.
	rep2, err := a.RunRecords(context.Background(), RawRecords(context.Background(), in), nil)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(rep)
	j2, _ := json.Marshal(rep2)
	if !bytes.Equal(j1, j2) {
		t.Errorf("RunRecords report differs from Run's:\n%s\n%s", j2, j1)
	}
	ids := append([]string(nil), rep.FlaggedIDs...)
	sort.Strings(ids)
	if len(ids) != len(planted) {
		t.Fatalf("flagged %q, want the %d planted", ids, len(planted))
	}
	for _, id := range ids {
		if !planted[id] {
			t.Errorf("flagged %s, which is not planted", id)
		}
	}
	out, removed := filepath.Join(dir, "out.jsonl.gz"), filepath.Join(dir, "removed.jsonl")
	kept, err := Decontaminate(context.Background(), in, out, removed, flagged)
	if err != nil {
		t.Fatal(err)
	}
	if kept != len(ds)-len(planted) {
		t.Errorf("kept %d, want %d", kept, len(ds)-len(planted))
	}
	// The kept records are the input's clean lines, in order.
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		isPlanted := false
		for id := range planted {
			isPlanted = isPlanted || strings.Contains(l, `"id":"`+id+`"`)
		}
		if !isPlanted {
			want = append(want, l)
		}
	}
	got, err := schema.ReadAll[json.RawMessage](out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("output has %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if string(got[i]) != want[i] {
			t.Errorf("record %d: got %.80s, want %.80s", i, got[i], want[i])
			break
		}
	}
	rm, err := schema.ReadAll[Removed](removed)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm) != len(planted) {
		t.Fatalf("removed file has %d records, want %d", len(rm), len(planted))
	}
	for _, r := range rm {
		if !planted[r.DialogueID] || len(r.Findings) == 0 || r.Reason == "" {
			t.Errorf("removed record %+v: want a planted id with findings and a reason", r)
		}
	}
}

func TestDecontaminateParquet(t *testing.T) {
	ds, planted := plantedCorpus(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.parquet"), filepath.Join(dir, "out.parquet")
	if err := schema.WriteAll(in, ds); err != nil {
		t.Fatal(err)
	}
	a := testAuditor(t, Options{})
	flagged := FlaggedBySeq{}
	if _, err := a.Run(context.Background(), ReadDialogues(context.Background(), in), flagged.Add); err != nil {
		t.Fatal(err)
	}
	kept, err := Decontaminate(context.Background(), in, out, "", flagged)
	if err != nil {
		t.Fatal(err)
	}
	got, err := schema.ReadAll[schema.Dialogue](out)
	if err != nil {
		t.Fatal(err)
	}
	if kept != len(got) || len(got) != len(ds)-len(planted) {
		t.Fatalf("kept %d, read back %d, want %d", kept, len(got), len(ds)-len(planted))
	}
	for _, d := range got {
		if planted[d.ID] {
			t.Errorf("planted %s is still in the output", d.ID)
		}
	}
}

func TestRunRecordsBadRecord(t *testing.T) {
	a, err := New([]Benchmark{{Name: "tiny", Problems: []schema.Problem{{Query: schema.Query{ID: "t1", Text: "x"}, Solution: "def f(a):\n    return a*2\n"}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := []string{
		`{"id": 1, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`,
		`{"id": 2, "messages": "not a list"}`,
	}
	stream := func(yield func(json.RawMessage, error) bool) {
		for _, r := range recs {
			if !yield(json.RawMessage(r), nil) {
				return
			}
		}
	}
	_, err = a.RunRecords(context.Background(), stream, nil)
	if err == nil || !strings.Contains(err.Error(), "record 2") {
		t.Errorf("got %v, want an error naming record 2", err)
	}
}
