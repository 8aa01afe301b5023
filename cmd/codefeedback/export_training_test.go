package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// judged is an execution turn's record of a test verdict.
func judged(code string, passed bool, exception string) *schema.Execution {
	j := &schema.JudgeRef{Harness: "codefeedback", Tests: []string{"assert f() == 1"}, Total: 1}
	if passed {
		j.PassedCount = 1
	} else {
		j.Shown = []schema.JudgeCase{{Test: "assert f() == 1", Kind: "exception", Exception: exception}}
	}
	return &schema.Execution{Language: "python", Code: code, Judge: j, Driver: "bwrap", Passed: &passed, Exception: exception}
}

// TestExportTrainingCommand: export --to dpo|kto|rl says what it wrote and
// skipped, writes the dataset card section beside OUT, and refuses a
// split the training layouts do not have.
func TestExportTrainingCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "d.jsonl")
	wrong, right := "def f():\n    return 1 / 0\n", "def f():\n    return 1\n"
	d := schema.Dialogue{ID: "dlg-1", Messages: []schema.Message{
		{Role: "user", Content: "Write f() returning 1."},
		{Role: "assistant", Content: "Here:\n\n```python\n" + wrong + "```"},
		{Role: "execution", Content: "ZeroDivisionError", Exec: judged(wrong, false, "ZeroDivisionError")},
		{Role: "assistant", Content: "Fixed:\n\n```python\n" + right + "```"},
		{Role: "execution", Content: "All 1 tests passed.", Exec: judged(right, true, "")},
	}}
	if err := schema.WriteAll(in, []schema.Dialogue{d}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		to, out string
		want    []string
	}{
		{"dpo", "p.jsonl", []string{"exported 1 dpo records from 1 dialogues", "1 of 1 dialogues with a failed attempt yielded a pair (100.0%)"}},
		{"kto", "k.parquet", []string{"exported 2 kto records from 1 dialogues"}},
		{"rl", "r.jsonl", []string{"exported 1 rl records from 1 dialogues"}},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		out := filepath.Join(dir, c.out)
		err := runExport(context.Background(), exportOptions{in: in, out: out, to: c.to, compression: "snappy", execAs: "user", split: "dialogue", onError: "fail", style: "conversational", stderr: &stderr})
		if err != nil {
			t.Fatalf("%s: %v", c.to, err)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q lacks %q", c.to, stderr.String(), w)
			}
		}
		card, err := os.ReadFile(out + ".card.md")
		if err != nil || !strings.HasPrefix(string(card), "## ") {
			t.Errorf("%s: card section: got %q, %v", c.to, card, err)
		}
	}
	err := runExport(context.Background(), exportOptions{in: in, out: filepath.Join(dir, "x.jsonl"), to: "dpo", compression: "snappy", execAs: "user", split: "turns", onError: "fail", style: "conversational", stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "makes its own records") {
		t.Errorf("--split turns with dpo: got %v, want a usage error", err)
	}
}
