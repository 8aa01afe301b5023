package upper_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/codefeedback/codefeedback/docs/example/upper" // registers "upper"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// TestStageRuns runs the example stage through the engine as a user's
// pipeline file would, then again: the second run takes every item from
// the store.
func TestStageRuns(t *testing.T) {
	dir := t.TempDir()
	in := `{"id":"q1","text":"reverse a list"}` + "\n" + `{"id":"q2","text":"sum two numbers"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	y := "inputs: [{path: queries.jsonl, format: native}]\n" +
		"stages:\n  - {stage: upper, settings: {suffix: \"?\"}}\n" +
		"outputs: [{path: " + out + ", format: jsonl, from: upper, kind: query}]\n"
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() *pipeline.Manifest {
		cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := run()
	qs, err := schema.ReadAll[schema.Query](out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range qs {
		got = append(got, q.Text)
	}
	if want := "REVERSE A LIST?|SUM TWO NUMBERS?"; strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
	if c := stageCounts(t, m, "upper"); c.Fresh != 2 {
		t.Errorf("first run: got %+v, want 2 fresh", c)
	}
	if c := stageCounts(t, run(), "upper"); c.Fresh != 0 || c.Out != 2 {
		t.Errorf("re-run: got %+v, want nothing recomputed and 2 out", c)
	}
}

func stageCounts(t *testing.T, m *pipeline.Manifest, name string) pipeline.Counts {
	t.Helper()
	for _, s := range m.Stages {
		if s.Name == name {
			return s.Counts
		}
	}
	t.Fatalf("manifest has no stage %s", name)
	return pipeline.Counts{}
}

// TestDocsShowThisFile: the guide and the pipeline package's README show
// upper.go as it is, so their code compiles and runs (TestStageRuns).
func TestDocsShowThisFile(t *testing.T) {
	src, err := os.ReadFile("upper.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{"../../write-a-stage.md", "../../../pipeline/README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(b, -1)
		found := false
		for _, m := range blocks {
			if string(m[1]) == string(src) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no ```go block equals docs/example/upper/upper.go (%d go blocks); copy the file into it", doc, len(blocks))
		}
	}
}
