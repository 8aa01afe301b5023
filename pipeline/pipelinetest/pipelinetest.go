// Package pipelinetest runs pipeline files through the real engine in tests:
// write the YAML, load it, run it, read what it published. Stage packages use
// it so their engine tests do not each repeat the same scaffolding.
package pipelinetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// ModelHead starts a pipeline file for a test that scripts the model: the
// run directory dir/run, the bwrap sandbox and the fake model at url, asked
// once a request. The inputs, stages and outputs follow it.
func ModelHead(dir, url string) string {
	return "run_dir: " + filepath.Join(dir, "run") + "\nexecutor: bwrap://\n" +
		"model: {base_url: \"" + url + "\", model: fake-chat, max_attempts: 1}\n"
}

// Load writes yaml to dir/pipeline.yaml and loads it, failing the test on
// any mistake.
func Load(tb testing.TB, dir, yaml string) *pipeline.Config {
	tb.Helper()
	file := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfg, err := pipeline.Load(file, "")
	if err != nil {
		tb.Fatalf("load %s: %v", file, err)
	}
	return cfg
}

// Run loads yaml as Load does and runs it with o, failing the test if the
// run fails.
func Run(tb testing.TB, dir, yaml string, o pipeline.RunOptions) *pipeline.Manifest {
	tb.Helper()
	return RunConfig(tb, Load(tb, dir, yaml), o)
}

// RunConfig runs a loaded pipeline with o, failing the test if the run
// fails.
func RunConfig(tb testing.TB, cfg *pipeline.Config, o pipeline.RunOptions) *pipeline.Manifest {
	tb.Helper()
	m, err := pipeline.Run(context.Background(), cfg, o)
	if err != nil {
		tb.Fatalf("run %s: %v", cfg.File, err)
	}
	return m
}

// WriteQueries writes texts to path as JSONL queries with ids q0, q1, ...
func WriteQueries(tb testing.TB, path string, texts []string) {
	tb.Helper()
	qs := make([]schema.Query, len(texts))
	for i, t := range texts {
		qs[i] = schema.Query{ID: fmt.Sprintf("q%d", i), Text: t}
	}
	WriteJSONL(tb, path, qs...)
}

// WriteJSONL writes recs to path as JSON Lines, an input file for a test's
// pipeline.
func WriteJSONL[T any](tb testing.TB, path string, recs ...T) {
	tb.Helper()
	lines := make([]string, len(recs))
	for i, r := range recs {
		j, err := json.Marshal(r)
		if err != nil {
			tb.Fatal(err)
		}
		lines[i] = string(j)
	}
	WriteLines(tb, path, lines)
}

// WriteLines writes lines to path, each ended by a newline: records taken
// as they are from a sample file, or a test's own.
func WriteLines(tb testing.TB, path string, lines []string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Stage is the manifest's record of the stage called name, failing the
// test when the run had none.
func Stage(tb testing.TB, m *pipeline.Manifest, name string) pipeline.StageRecord {
	tb.Helper()
	for _, s := range m.Stages {
		if s.Name == name {
			return s
		}
	}
	tb.Fatalf("the manifest has no stage %s", name)
	return pipeline.StageRecord{}
}

// Dialogues reads a published dialogue file (JSONL records).
func Dialogues(tb testing.TB, path string) []schema.Dialogue {
	tb.Helper()
	return ReadJSONL[schema.Dialogue](tb, path)
}

// ReadJSONL reads every record of a JSON Lines file (plain, .gz or .zst;
// empty is fine) as a T, failing the test on any error: the reverse of
// WriteJSONL, for a run's outputs and side files.
func ReadJSONL[T any](tb testing.TB, path string) []T {
	tb.Helper()
	recs, err := schema.ReadAll[T](path, schema.AllowEmpty())
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return recs
}

// Items reads an output file of format items (JSONL, one pipeline.Item a
// line); an empty file is an error.
func Items(tb testing.TB, path string) []pipeline.Item {
	tb.Helper()
	items, err := schema.ReadAll[pipeline.Item](path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return items
}
