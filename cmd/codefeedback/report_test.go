package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// TestReportCommand rebuilds the report and card of a hand-made run
// directory, and refuses a directory without a manifest (exit 7, bad input).
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	os.MkdirAll(filepath.Join(run, "stages", "correct"), 0o755)
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	d := schema.Dialogue{ID: "dlg-1", Stage: "correct", Messages: []schema.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}}
	it, _ := pipeline.DialogueItem(d)
	line, _ := json.Marshal(it)
	os.WriteFile(filepath.Join(run, "stages", "correct", "out.jsonl"), append(line, '\n'), 0o644)
	rec, _ := json.Marshal(schema.ToCodeFeedback(&d))
	out := filepath.Join(dir, "out", "cf.jsonl")
	os.WriteFile(out, append(rec, '\n'), 0o644)
	m := pipeline.Manifest{Status: "complete", RunDir: run, Stages: []pipeline.StageRecord{{Name: "correct", Type: "correct", Status: "ran", Output: "stages/correct/out.jsonl"}},
		Outputs: []pipeline.OutputRecord{{Path: out, Format: "codefeedback", From: "correct", Kind: "dialogue", Items: 1}}}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(run, "manifest.json"), b, 0o644)

	var stdout bytes.Buffer
	if err := runReport(context.Background(), reportOptions{runDir: run, license: "mit", stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), filepath.Join(run, "report.html")) || !strings.Contains(stdout.String(), filepath.Join(dir, "out", "README.md")) {
		t.Errorf("output: %s", stdout.String())
	}
	card, err := os.ReadFile(filepath.Join(dir, "out", "README.md"))
	if err != nil || !strings.Contains(string(card), "license: mit") || !strings.Contains(string(card), "num_examples: 1") {
		t.Errorf("card (err %v):\n%s", err, card)
	}
	if page, err := os.ReadFile(filepath.Join(run, "report.html")); err != nil || !strings.Contains(string(page), `data-id="dlg-1"`) {
		t.Errorf("report lacks the dialogue (err %v)", err)
	}

	err = runReport(context.Background(), reportOptions{runDir: t.TempDir(), stdout: &stdout})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitBadData {
		t.Errorf("report on an empty directory: got %v, want exit code %d", err, exitBadData)
	}
}
