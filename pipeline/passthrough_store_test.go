package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/internal/store"
)

var passPipeline = onQueries(`
  - {stage: t-suffix, name: a, settings: {prompt: "-a"}}
  - {stage: t-pass, name: p, settings: {fail_ids: [q3, q17]}}
  - {stage: t-suffix, name: b, input: [p], settings: {prompt: "-b"}}
outputs:
  - {path: $DIR/p.jsonl, from: p, format: items}
  - {path: $DIR/b.jsonl, from: b, format: items}
`)

// storedValues returns the stored form of each result a stage's keys file
// names, in order.
func storedValues(t *testing.T, run, stage string) [][]byte {
	t.Helper()
	db, err := store.OpenBolt(filepath.Join(run, "store.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out [][]byte
	for k, err := range readKeys(filepath.Join(run, "stages", stage, keysFile)) {
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := db.Get(context.Background(), ItemsBucket, k)
		if err != nil || !ok {
			t.Fatalf("stage %s result %s: ok %v err %v", stage, k, ok, err)
		}
		out = append(out, v)
	}
	return out
}

// TestPassThroughStoresNoCopy: an item a stage passes on unchanged is
// stored as a one-byte reference (its line is in the stage's keys file),
// reads back exactly as passed, replays its statistics, survives gc, and
// is found again item by item when the completion markers are gone.
func TestPassThroughStoresNoCopy(t *testing.T) {
	resetCalls()
	const n = 60
	dir, file := setup(t, n, passPipeline)
	run := filepath.Join(dir, "run")
	m := mustRun(t, file, RunOptions{})
	if got := stageRec(t, m, "p").Stats["passed"]; got != n {
		t.Fatalf("first run: stage p passed %v items, want %d", got, n)
	}
	// p's output is a's items, plus a copy of two of them.
	want := readAllOutput(t, run, stageRec(t, m, "a").Output)
	gotP := readAllOutput(t, run, stageRec(t, m, "p").Output)
	if lines := bytes.Count(gotP, []byte{'\n'}); lines != n+2 {
		t.Fatalf("p wrote %d items, want %d", lines, n+2)
	}
	var passed []byte
	for l := range bytes.Lines(gotP) {
		if !bytes.Contains(l, []byte(`-copy"`)) {
			passed = append(passed, l...)
		}
	}
	if !bytes.Equal(passed, want) {
		t.Fatalf("p's passed items differ from a's output:\ngot  %.300s\nwant %.300s", passed, want)
	}
	same := 0
	for _, v := range storedValues(t, run, "p") {
		switch {
		case v[0] == valSame:
			same++
			if len(v) > 200 {
				t.Errorf("a passed-through item is stored as %d bytes, want only its statistics", len(v))
			}
		case v[0] != valOK:
			t.Errorf("stored value %q, want O or S", v[:1])
		}
	}
	if same != n-2 {
		t.Errorf("%d of p's results stored as references, want %d", same, n-2)
	}
	for _, v := range storedValues(t, run, "a") {
		if v[0] != valOK {
			t.Errorf("a changes every item, yet one is stored as %q", v[:1])
		}
	}
	pub := map[string][]byte{}
	for _, o := range []string{"p.jsonl", "b.jsonl"} {
		pub[o], _ = os.ReadFile(filepath.Join(dir, o))
	}
	keysBefore, _ := os.ReadFile(filepath.Join(run, "stages", "p", keysFile))

	// gc keeps the references; a run without completion markers (every
	// item looked up) calls no stage and writes the same outputs.
	if _, err := GC(run); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "p", "b"} {
		os.Remove(filepath.Join(run, "stages", s, "done.json"))
		os.Remove(filepath.Join(run, "stages", s, keysFile)) // as if the run had crashed before it
	}
	os.Remove(filepath.Join(run, "published.json"))
	resetCalls()
	m = mustRun(t, file, RunOptions{})
	for _, s := range []string{"a", "p", "b"} {
		if c := callCount(s); c != 0 {
			t.Errorf("re-run called stage %s %d times, want 0", s, c)
		}
	}
	if got := stageRec(t, m, "p").Stats["passed"]; got != n {
		t.Errorf("re-run: stage p's statistics say %v passed, want %d (replayed from the references)", got, n)
	}
	for o, w := range pub {
		if got, _ := os.ReadFile(filepath.Join(dir, o)); !bytes.Equal(got, w) {
			t.Errorf("re-run wrote a different %s", o)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(run, "stages", "p", keysFile)); !bytes.Equal(got, keysBefore) {
		t.Errorf("re-run wrote a different keys file for p")
	}
}

// TestKeysFileV1StillRead: a keys file of the earlier layout (bare keys)
// reads as before.
func TestKeysFileV1StillRead(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 30, passPipeline)
	run := filepath.Join(dir, "run")
	m := mustRun(t, file, RunOptions{})
	rel := stageRec(t, m, "a").Output
	want := readAllOutput(t, run, rel)
	var v1 bytes.Buffer
	v1.Write(keysMagic)
	for k, err := range readKeys(filepath.Join(run, rel)) {
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 32)
		for i := range b {
			var x byte
			for _, c := range k[2*i : 2*i+2] {
				x <<= 4
				if c >= 'a' {
					x |= byte(c-'a') + 10
				} else {
					x |= byte(c - '0')
				}
			}
			b[i] = x
		}
		v1.Write(b)
	}
	if err := os.WriteFile(filepath.Join(run, rel), v1.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readAllOutput(t, run, rel); !bytes.Equal(got, want) {
		t.Errorf("v1 keys file reads differently:\ngot  %.200s\nwant %.200s", got, want)
	}
}
