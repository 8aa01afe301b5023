package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/store"
)

// chainAndSet: two per-item stages, then a whole-set stage; the published
// output is b's items as envelopes, so it can be compared with b's output
// read from the run directory.
var chainAndSet = onQueries(`
  - {stage: t-suffix, name: a, settings: {prompt: "-a"}}
  - {stage: t-suffix, name: b, settings: {prompt: "-b"}}
  - {stage: t-count, name: count, input: [b]}
outputs:
  - {path: $DIR/out.items.jsonl, from: b, format: items}
  - {path: $DIR/count.jsonl, from: count, format: items}
`)

func readAllOutput(t *testing.T, runDir, rel string) []byte {
	t.Helper()
	var b bytes.Buffer
	for it, err := range ReadOutput(context.Background(), runDir, rel) {
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// TestStageOutputsLiveInStore: a per-item stage's output is the keys of its
// results (no copy as a file), read back through the store exactly as
// published; a whole-set output is one compressed file.
func TestStageOutputsLiveInStore(t *testing.T) {
	resetCalls()
	const n = 40
	dir, file := setup(t, n, chainAndSet)
	m := mustRun(t, file, RunOptions{})
	run := filepath.Join(dir, "run")
	for _, name := range []string{"a", "b"} {
		rec := stageRec(t, m, name)
		if want := filepath.Join("stages", name, keysFile); rec.Output != want {
			t.Fatalf("stage %s output %q want %q", name, rec.Output, want)
		}
		keys := 0
		for rec, err := range readKeyRecords(filepath.Join(run, rec.Output)) {
			if err != nil {
				t.Fatalf("stage %s keys file: %v", name, err)
			}
			if rec.line != nil {
				t.Errorf("stage %s changes every item, yet its keys file holds a line", name)
			}
			keys++
		}
		if keys != n {
			t.Fatalf("stage %s keys file: %d keys, want %d", name, keys, n)
		}
		for _, old := range []string{"out.jsonl", "refs"} {
			if fileExists(filepath.Join(run, "stages", name, old)) {
				t.Errorf("stage %s still writes %s", name, old)
			}
		}
		if got, err := StageOutput(run, name); err != nil || got != rec.Output {
			t.Errorf("StageOutput(%s) = %q, %v want %q", name, got, err, rec.Output)
		}
	}
	published, err := os.ReadFile(filepath.Join(dir, "out.items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllOutput(t, run, stageRec(t, m, "b").Output); !bytes.Equal(got, published) || bytes.Count(got, []byte{'\n'}) != n {
		t.Fatalf("b's output from the store differs from the published file:\n%.300s\nwant\n%.300s", got, published)
	}
	if !strings.Contains(string(published), `"text":"query number 7-a-b"`) {
		t.Fatalf("published output lacks the chained text: %.200s", published)
	}
	count := stageRec(t, m, "count").Output
	if !strings.HasSuffix(count, ".jsonl.zst") {
		t.Fatalf("whole-set output %q is not compressed", count)
	}
	if got := readAllOutput(t, run, count); !strings.Contains(string(got), `"text":"40"`) {
		t.Fatalf("whole-set output: %s", got)
	}
	if _, err := StageOutput(run, "nosuch"); err == nil || !strings.Contains(err.Error(), "has not completed") {
		t.Fatalf("StageOutput of an unknown stage: %v", err)
	}
	// The items input format reads files only: a keys file needs its store.
	for _, err := range readItems(context.Background(), nil, filepath.Join(run, "stages", "a", keysFile)) {
		if err == nil || !strings.Contains(err.Error(), "ReadOutput") {
			t.Fatalf("keys file read without a store: %v", err)
		}
	}
	// The published file's records, not the run directory, are the copy
	// users read: gc keeps every result an output names.
	rep, err := GC(run)
	if err != nil || rep.Deleted != 0 || rep.SetsRemoved != 0 {
		t.Fatalf("gc after one run: %+v, %v", rep, err)
	}
	if got := readAllOutput(t, run, stageRec(t, m, "b").Output); !bytes.Equal(got, published) {
		t.Fatal("b's output changed by gc")
	}
}

// toEarlierLayout rewrites a run directory as earlier versions left it:
// per-item outputs as stages/NAME/out.jsonl plus refs, sets uncompressed.
func toEarlierLayout(t *testing.T, run string, stages ...string) {
	t.Helper()
	for _, name := range stages {
		dir := filepath.Join(run, "stages", name)
		var m marker
		b, err := os.ReadFile(filepath.Join(dir, "done.json"))
		if err != nil || json.Unmarshal(b, &m) != nil {
			t.Fatalf("marker of %s: %v", name, err)
		}
		keys := filepath.Join(dir, keysFile)
		if err := os.WriteFile(filepath.Join(dir, "out.jsonl"), readAllOutput(t, run, m.Output), 0o644); err != nil {
			t.Fatal(err)
		}
		var refs strings.Builder
		for k, err := range readKeys(keys) {
			if err != nil {
				t.Fatal(err)
			}
			refs.WriteString(ItemsBucket + "\t" + k + "\n")
		}
		os.WriteFile(filepath.Join(dir, "refs"), []byte(refs.String()), 0o644)
		os.Remove(keys)
		m.Output = filepath.Join("stages", name, "out.jsonl")
		b, _ = json.Marshal(m)
		os.WriteFile(filepath.Join(dir, "done.json"), b, 0o644)
	}
	sets, _ := filepath.Glob(filepath.Join(run, "sets", "*.jsonl.zst"))
	for _, s := range sets {
		var buf bytes.Buffer
		for ln, err := range readLines(s) {
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(ln.data, '\n'))
		}
		os.WriteFile(strings.TrimSuffix(s, ".zst"), buf.Bytes(), 0o644)
		os.Remove(s)
	}
}

// TestEarlierLayoutStillRead: a run directory written by an earlier
// version (stage outputs as files) is reused as it is: nothing runs again,
// the output is the same, gc keeps what it names; a stage that runs again
// replaces its files with keys.
func TestEarlierLayoutStillRead(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 30, chainAndSet)
	mustRun(t, file, RunOptions{})
	run := filepath.Join(dir, "run")
	want, _ := os.ReadFile(filepath.Join(dir, "out.items.jsonl"))
	toEarlierLayout(t, run, "a", "b")
	os.Remove(filepath.Join(dir, "out.items.jsonl"))

	resetCalls()
	m := mustRun(t, file, RunOptions{})
	for _, name := range []string{"a", "b", "count"} {
		if s := stageRec(t, m, name); s.Status != "unchanged" || callCount(name) != 0 {
			t.Fatalf("earlier layout: stage %s %s with %d calls, want unchanged and none", name, s.Status, callCount(name))
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out.items.jsonl")); !bytes.Equal(got, want) {
		t.Fatalf("output from the earlier layout differs")
	}
	if rep, err := GC(run); err != nil || rep.Deleted != 0 || rep.SetsRemoved != 0 {
		t.Fatalf("gc on the earlier layout: %+v, %v", rep, err)
	}

	// b runs again (from the store): its files give way to keys; count's
	// input is the same, so it stays unchanged.
	resetCalls()
	os.Remove(filepath.Join(dir, "out.items.jsonl"))
	m = mustRun(t, file, RunOptions{Force: []string{"b"}})
	if s := stageRec(t, m, "b"); s.Status != "ran" || s.Output != filepath.Join("stages", "b", keysFile) {
		t.Fatalf("forced b: %s, output %s", s.Status, s.Output)
	}
	if s := stageRec(t, m, "count"); s.Status != "unchanged" {
		t.Fatalf("count after an identical b: %s", s.Status)
	}
	for _, old := range []string{"out.jsonl", "refs"} {
		if fileExists(filepath.Join(run, "stages", "b", old)) {
			t.Errorf("b's earlier %s was left behind", old)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out.items.jsonl")); !bytes.Equal(got, want) {
		t.Fatalf("output after b ran again differs")
	}
}

// TestForcedRunStoppedIsNotUnchanged: a forced run overwrites a stage's
// results in place; stopped half-way, its old marker must not vouch for the
// mix, so the next run takes the stage as not done (all from the store).
func TestForcedRunStoppedIsNotUnchanged(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 50, paidPipeline)
	mustRun(t, file, RunOptions{})
	want, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	cfg := mustLoad(t, file)
	if _, err := Run(context.Background(), cfg, RunOptions{Force: []string{"paid"}, MaxCost: 0.1}); !errors.Is(err, ErrStopped) {
		t.Fatalf("forced run with a budget: %v want ErrStopped", err)
	}
	if fileExists(filepath.Join(dir, "run", "stages", "paid", "done.json")) {
		t.Fatal("a stopped forced run left the old marker")
	}
	resetCalls()
	m := mustRun(t, file, RunOptions{})
	if s := stageRec(t, m, "paid"); s.Status != "ran" || s.Counts.Cached != 50 || callCount("paid") != 0 {
		t.Fatalf("after the stopped forced run: %s, %+v, %d calls; want ran, all 50 cached", s.Status, s.Counts, callCount("paid"))
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out.jsonl")); !bytes.Equal(got, want) {
		t.Fatal("output differs after the stopped forced run")
	}
}

// TestReadOutputWhileRunning: a per-item output cannot be read while a run
// holds the store; the error says so instead of waiting.
func TestReadOutputWhileRunning(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 5, chainAndSet)
	m := mustRun(t, file, RunOptions{})
	run := filepath.Join(dir, "run")
	db, err := store.OpenBolt(filepath.Join(run, "store.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got error
	for _, err := range ReadOutput(context.Background(), run, stageRec(t, m, "b").Output) {
		if got = err; err != nil {
			break
		}
	}
	if !errors.Is(got, ErrLocked) {
		t.Fatalf("read while the store is held: %v, want ErrLocked", got)
	}
}
