package leetcode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
)

// altEngine writes one LeetCode-style problem the script's alternatives
// branches answer and a pipeline of the leetcode stage (alternatives only)
// in dir, runs it and returns the manifest, the published dialogues' count
// and the run's error.
func altEngine(t *testing.T, dir, url string, retries int, settings string) (*pipeline.Manifest, int, error) {
	t.Helper()
	p := problem("add", "+")
	p.Text = strings.Replace(p.Text, "PROBLEM-ADD", "PROBLEM-ALT", 1)
	rec := map[string]any{"task_id": strings.TrimPrefix(p.ID, "LeetCode/"), "query": p.Text, "prompt": p.Prompt,
		"completion": p.Solution, "entry_point": p.EntryPoint, "test": p.Tests[0], "meta": map[string]any{"difficulty": "Easy"}}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, "lc.jsonl"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	os.Remove(out)
	y := `run_dir: ` + filepath.Join(dir, "run") + `
executor: bwrap://
model: {base_url: ` + url + `, model: fake-chat}
inputs: [{path: lc.jsonl, format: leetcode}]
stages:
  - {stage: leetcode, gate_min_checks: 1, retries: ` + strconv.Itoa(retries) + `, settings: ` + settings + `}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	cfg := pipelinetest.Load(t, dir, y)
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Retry: pipeline.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		return m, 0, err
	}
	return m, len(pipelinetest.Dialogues(t, out)), nil
}

func clearModelEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEFEEDBACK_LLM_BASE_URL", "CODEFEEDBACK_LLM_MODEL",
		"CODEFEEDBACK_LLM_API_KEY_ENV", "CODEFEEDBACK_LEETCODE_BASE_URL", "CODEFEEDBACK_LEETCODE_MODEL"} {
		t.Setenv(k, "")
	}
}

// TestEngineAlternativesRetry: one 429 is retried under the stage's
// retries and the dialogue is kept; 429s past the retries make the
// dialogue a dead letter (the stage fails, nothing cached) and the next
// run builds it.
func TestEngineAlternativesRetry(t *testing.T) {
	sandbox(t)
	clearModelEnv(t)
	f := llmtest.Fault{Kind: llmtest.Status, Status: 429}
	settings := "{modes: [alternatives], alternatives: [complexity]}"
	t.Run("retried", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Script(script(false))
		srv.FailNext(f)
		m, n, err := altEngine(t, t.TempDir(), srv.URL, 3, settings)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		st := m.Stages[0]
		if n != 1 || st.Status != "ran" || st.Stats["retries"] != 1 || st.Stats[gates.CheckedKey(AltGate)] != 1 || st.Stats[gates.RejectedKey(AltGate)] != 0 {
			t.Errorf("got %d dialogues, stage %s stats %v; want 1 dialogue, ran, 1 retry, gate 1 checked 0 rejected", n, st.Status, st.Stats)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		srv := llmtest.New(t)
		srv.Script(script(false))
		srv.FailNext(f, f)
		dir := t.TempDir()
		m, _, err := altEngine(t, dir, srv.URL, 1, settings)
		if !errors.Is(err, pipeline.ErrUnitsFailed) {
			t.Fatalf("run error %v, want ErrUnitsFailed", err)
		}
		if st := m.Stages[0]; st.Status != "failed" || st.Stats["failed"] != 1 {
			t.Errorf("stage %s stats %v, want failed with 1 failed unit", st.Status, st.Stats)
		}
		raw, rerr := os.ReadFile(filepath.Join(dir, "run", "stages", "leetcode", "dead-letters.jsonl"))
		if rerr != nil || !strings.Contains(string(raw), `"item_id":"alternatives of LeetCode/add"`) || !strings.Contains(string(raw), `"attempts":2`) {
			t.Fatalf("dead letters %q (%v), want the alternatives of LeetCode/add after 2 attempts", raw, rerr)
		}
		m, n, err := altEngine(t, dir, srv.URL, 1, settings)
		if err != nil || n != 1 || m.Stages[0].Status != "ran" {
			t.Fatalf("re-run: %d dialogues, err %v; want 1 dialogue", n, err)
		}
	})
}

// TestEngineAlternativesGate: an optimal solution that is the brute force
// again is rejected by the gate; over max_rejected the stage fails naming
// the setting, at max_rejected: 1 it runs and the figures are in its stats.
func TestEngineAlternativesGate(t *testing.T) {
	sandbox(t)
	clearModelEnv(t)
	var (
		mu    sync.Mutex
		brute string // the brute force answer, given again as the optimal one
	)
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		req, _ := request(c)
		r := script(false)(c)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(req, "brute-force"):
			brute = r.Text
		case strings.Contains(req, "optimal"):
			return llmtest.Reply{Text: "Already optimal, O(b):\n" + brute[strings.Index(brute, "```"):]}
		}
		return r
	})
	dir := t.TempDir()
	_, _, err := altEngine(t, dir, srv.URL, 3, "{modes: [alternatives], alternatives: [complexity]}")
	if err == nil || !strings.Contains(err.Error(), "max_rejected") || !strings.Contains(err.Error(), "same_as_first") {
		t.Fatalf("run error %v, want the alternatives gate's failure naming max_rejected and same_as_first", err)
	}
	m, n, err := altEngine(t, dir, srv.URL, 3, "{modes: [alternatives], alternatives: [complexity], max_rejected: 1}")
	if err != nil {
		t.Fatalf("run with max_rejected: 1: %v", err)
	}
	st := m.Stages[0].Stats
	if n != 0 || st[gates.CheckedKey(AltGate)] != 1 || st[gates.RejectedKey(AltGate)] != 1 || st[gates.ReasonKey(AltGate, RejectSame)] != 1 {
		t.Errorf("got %d dialogues and stats %v, want none and the gate's rejection counted", n, st)
	}
}
