package upper_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/codefeedback/codefeedback/docs/example/upper" // registers "upper"
	"github.com/codefeedback/codefeedback/internal/report"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestStageRuns runs the example stage through the engine as a user's
// pipeline file would, then again: the second run takes every item from
// the store. After each run the report holds the stage's own section
// with the same chart.
func TestStageRuns(t *testing.T) {
	dir := t.TempDir()
	in := `{"id":"q1","text":"reverse a list"}` + "\n" + `{"id":"q2","text":"sum two small numbers"}` + "\n"
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
	if want := "REVERSE A LIST?|SUM TWO SMALL NUMBERS?"; strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
	if c := pipelinetest.Stage(t, m, "upper").Counts; c.Fresh != 2 {
		t.Errorf("first run: got %+v, want 2 fresh", c)
	}
	checkSection(t, filepath.Join(dir, "run"))
	if c := pipelinetest.Stage(t, run(), "upper").Counts; c.Fresh != 0 || c.Out != 2 {
		t.Errorf("re-run: got %+v, want nothing recomputed and 2 out", c)
	}
	checkSection(t, filepath.Join(dir, "run"))
}

// checkSection renders the run's report and checks the section that
// section.go registers: one chart, a query of 3 words and one of 4, drawn
// in the HTML.
func checkSection(t *testing.T, runDir string) {
	t.Helper()
	w, err := report.Build(context.Background(), runDir, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sec := range w.Data.Sections {
		if sec.Type != "upper" {
			continue
		}
		for _, in := range sec.Instances {
			for _, c := range in.Charts {
				for _, b := range c.Bars {
					got = append(got, fmt.Sprintf("%s %s=%g", c.ID, b.Label, b.Value))
				}
			}
		}
	}
	if want := "chart-upper-words 3=1|chart-upper-words 4=1"; strings.Join(got, "|") != want {
		t.Errorf("report section upper: got bars %q, want %q", strings.Join(got, "|"), want)
	}
	html, err := os.ReadFile(w.Report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="section-upper"`, "Upper: shouted queries", "Queries per word count"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("%s does not contain %q", w.Report, want)
		}
	}
}

// TestDocsShowThisFile: the guide and the pipeline package's README show
// upper.go as it is, and the guide section.go, so their code compiles and
// runs (TestStageRuns).
func TestDocsShowThisFile(t *testing.T) {
	for _, tc := range []struct{ file, doc string }{
		{"upper.go", "../../write-a-stage.md"},
		{"upper.go", "../../../pipeline/README.md"},
		{"section.go", "../../write-a-stage.md"},
	} {
		src, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		doc := tc.doc
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
			t.Errorf("%s: no ```go block equals docs/example/upper/%s (%d go blocks); copy the file into it", doc, tc.file, len(blocks))
		}
	}
}
