package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// TestEvalCommand runs `eval` end to end against a fake endpoint whose
// answers never define the function: every sample fails both rounds, the
// table says 0.0, and results.json and samples.jsonl are written.
func TestEvalCommand(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("skipping: bwrap is not installed")
	}
	sharedtest.Path(t, "humaneval/HumanEval.jsonl.gz")
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: "```python\nx = 1\n```"} })
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := runEval(context.Background(), evalOptions{Model: "fake-chat", Benchmarks: "humaneval", Rounds: 1,
		Feedback: "execution", BaseURL: srv.URL, APIKeyEnv: "CODEFEEDBACK_TEST_NO_KEY", Concurrency: 2, Out: out,
		Data: sharedtest.DataDir(), Driver: "bwrap", Limit: 3}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "humaneval      1       0      3         0.0") {
		t.Errorf("table:\n%s", stdout.String())
	}
	if got := srv.Calls("/v1/chat/completions"); got != 6 {
		t.Errorf("model calls = %d, want 6 (3 problems x 2 rounds)", got)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Benchmarks []struct {
			Failed []string `json:"failed"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Benchmarks) != 1 || len(rep.Benchmarks[0].Failed) != 3 {
		t.Errorf("results.json = %s (err %v), want 3 failed tasks", raw, err)
	}
	lines, err := os.ReadFile(filepath.Join(out, "samples.jsonl"))
	if err != nil || bytes.Count(lines, []byte("\n")) != 3 {
		t.Errorf("samples.jsonl: %d lines (err %v), want 3", bytes.Count(lines, []byte("\n")), err)
	}
	if err := runEval(context.Background(), evalOptions{Model: "x", Benchmarks: "nope", Out: out}, &stdout, &stderr); err == nil {
		t.Error("unknown benchmark: want an error")
	}
}
