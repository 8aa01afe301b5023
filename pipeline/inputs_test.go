package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestInputsReusedWhenUnchanged: a re-run whose inputs (content, format),
// shard and limit match the previous import reuses it (the imported file is
// not rewritten) and reports the same input records; any change imports
// again. Published outputs are rewritten only when their source changed or
// the file was touched.
func TestInputsReusedWhenUnchanged(t *testing.T) {
	dir, file := setup(t, 50, `
run_dir: $DIR/run
inputs: [{path: q.jsonl}]
stages:
  - {stage: t-suffix, name: a, settings: {prompt: "-a"}}
outputs:
  - {path: $DIR/out/a.jsonl, from: a, format: jsonl}
`)
	imported := filepath.Join(dir, "run", "stages", InputsName, importedFile)
	output := filepath.Join(dir, "out", "a.jsonl")
	mtime := func(p string) time.Time {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.ModTime()
	}
	first := mustRun(t, file, RunOptions{})
	if len(first.Inputs) != 1 || first.Inputs[0].Items != 50 || first.Inputs[0].SHA256 == "" {
		t.Fatalf("first run inputs %+v", first.Inputs)
	}
	type step struct {
		name     string
		change   func()
		opts     RunOptions
		reimport bool
		repub    bool
		items    int64 // input items in the manifest
		out      int64 // items of stage a
	}
	steps := []step{
		{name: "unchanged", items: 50, out: 50},
		{name: "output edited", change: func() {
			if err := os.WriteFile(output, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, repub: true, items: 50, out: 50},
		{name: "limit", opts: RunOptions{Limit: 10}, reimport: true, repub: true, items: 50, out: 10},
		{name: "back to all", reimport: true, items: 50, out: 50},
		{name: "shard", opts: RunOptions{Shard: Shard{Index: 0, Count: 2}}, reimport: true, items: 50},
		{name: "input grew", change: func() { writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 60) }, reimport: true, repub: true, items: 60, out: 60},
		{name: "unchanged again", items: 60, out: 60},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		beforeIn, beforeOut := mtime(imported), mtime(output)
		time.Sleep(10 * time.Millisecond) // a rewrite gets a later mtime
		m := mustRun(t, file, s.opts)
		if got := mtime(imported) != beforeIn; got != s.reimport {
			t.Errorf("%s: imported again %v, want %v", s.name, got, s.reimport)
		}
		if m.Inputs[0].Items != s.items || m.Inputs[0].SHA256 == "" {
			t.Errorf("%s: manifest input %+v, want %d items and a hash", s.name, m.Inputs[0], s.items)
		}
		if s.opts.Shard.Enabled() {
			continue // a sharded run publishes nothing
		}
		if got := stageRec(t, m, "a").Counts.Out; got != s.out {
			t.Errorf("%s: stage a wrote %d items, want %d", s.name, got, s.out)
		}
		if s.opts.Limit > 0 {
			continue // published under another name
		}
		if got := mtime(output) != beforeOut; got != s.repub {
			t.Errorf("%s: output rewritten %v, want %v", s.name, got, s.repub)
		}
		if len(m.Outputs) != 1 || m.Outputs[0].Items != s.out {
			t.Errorf("%s: manifest outputs %+v, want %d items", s.name, m.Outputs, s.out)
		}
		if n := countLines(t, output); n != int(s.out) {
			t.Errorf("%s: output has %d lines, want %d", s.name, n, s.out)
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
