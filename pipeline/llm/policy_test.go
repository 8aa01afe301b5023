package llm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// TestOneRetryPolicyDeadEndpoint: against an endpoint that answers every
// request 503, a pipeline run makes exactly 1 + retries requests per item
// (the engine's policy; the client makes one attempt per call), dead-letters
// every item with that many attempts, and logs each retry through the run's
// logger.
func TestOneRetryPolicyDeadEndpoint(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 503}}
	})
	const items, retries = 4, 2
	file, dir := writeRun(t, items, `
inputs: [{path: q.jsonl}]
model: {base_url: `+srv.URL+`, model: m, breaker_threshold: 1000}
defaults: {concurrency: 2, retries: 2}
stages:
  - {stage: llm-svc-ask}
`)
	cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Retry:  pipeline.RetryPolicy{Base: time.Millisecond, Max: 2 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, want := srv.Calls("/v1/chat/completions"), items*(1+retries); got != want {
		t.Errorf("requests to the dead endpoint: %d, want %d (items x (1 + retries))", got, want)
	}
	c := m.Stages[0].Counts
	if c.DeadLettered != items || c.Retries != items*retries {
		t.Errorf("counts %+v, want %d dead letters and %d retries", c, items, items*retries)
	}
	if n := strings.Count(logs.String(), "item failed, retrying"); n != items*retries {
		t.Errorf("run log has %d retry warnings, want %d:\n%s", n, items*retries, logs.String())
	}
}

// TestClientRetrySettingsRejectedInPipeline: a pipeline file cannot set a
// second retry policy in its model section.
func TestClientRetrySettingsRejectedInPipeline(t *testing.T) {
	llmtest.ClearEnv(t)
	file, dir := writeRun(t, 1, `
inputs: [{path: q.jsonl}]
model: {base_url: http://127.0.0.1:9/v1, model: m, max_attempts: 4}
stages:
  - {stage: llm-svc-ask}
`)
	_, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err == nil || !strings.Contains(err.Error(), "retries") {
		t.Fatalf("load error = %v, want one saying retries are the engine's", err)
	}
}

// TestMaxCostStopsCallsInsideAnItem: --max-cost applies to every model call,
// not only to dispatching items: one item making ten $1 calls under a $2.50
// budget makes three, and the run stops cleanly without a dead letter.
func TestMaxCostStopsCallsInsideAnItem(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "ok", PromptTokens: 1000, CompletionTokens: 0}
	})
	file, dir := writeRun(t, 1, `
inputs: [{path: q.jsonl}]
model:
  base_url: `+srv.URL+`
  model: m
  prices: {m: {input_per_m: 1000, output_per_m: 0}}
defaults: {concurrency: 1}
stages:
  - {stage: llm-svc-ask, settings: {calls: 10}}
`)
	cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{MaxCost: 2.5})
	if !errors.Is(err, pipeline.ErrStopped) {
		t.Fatalf("run error = %v, want ErrStopped", err)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 3 {
		t.Errorf("paid calls: %d, want 3 (the budget is spent after the third $1 call)", got)
	}
	st := m.Stages[0]
	if st.Status != "stopped" || st.Counts.DeadLettered != 0 {
		t.Errorf("stage status %s counts %+v, want stopped with no dead letter", st.Status, st.Counts)
	}
}
