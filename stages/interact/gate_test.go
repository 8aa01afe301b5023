package interact_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
)

// TestNoActionGate: a model that answers in prose where a command was asked
// fails the stage, loudly, with the figures and a sample of what it said;
// the same run with the gate opened keeps what the model did solve.
func TestNoActionGate(t *testing.T) {
	needBwrap(t)
	ts, err := agent.LoadTasks(filepath.Join("..", "..", "data", "intercode", "sql_tasks.jsonl"), "")
	if err != nil {
		t.Fatal(err)
	}
	ts = ts[:2]
	dir := t.TempDir()
	var b strings.Builder
	for _, tk := range ts {
		if p := tk.Setup[env.SetupDBFile]; p != "" {
			tk.Setup[env.SetupDBFile], _ = filepath.Abs(p)
		}
		line, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const prose = "Let me think about the schema of the library first; the books table probably has what we need."
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		// The first task never gets an action; the second gets one after
		// a prose answer.
		if strings.Contains(c.Request.Messages[1].Content, ts[0].Query) || c.AssistantTurns() == 0 {
			return llmtest.Reply{Text: prose}
		}
		return llmtest.Reply{Text: fence("sql", ts[1].Gold)}
	})
	run := func(name, extra string) (*pipeline.Manifest, error) {
		sub := filepath.Join(dir, name)
		y := "run_dir: " + filepath.Join(sub, "run") + "\nexecutor: bwrap://?pool=2\n" +
			"model: {base_url: \"" + srv.URL + "\", model: fake-agent, max_attempts: 1}\n" +
			"inputs: [{path: " + tasks + ", format: intercode}]\n" +
			"stages:\n  - {stage: interact, gate_min_checks: 1, settings: {strategy: tryagain, turns: 2" + extra + "}}\n" +
			"outputs: [{path: " + filepath.Join(sub, "d.jsonl") + ", format: jsonl, kind: dialogue}]\n"
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		return pipeline.Run(context.Background(), pipelinetest.Load(t, sub, y), pipeline.RunOptions{})
	}
	_, err = run("gated", "")
	// 2 answers of the first task, the second's first: 3 of 4.
	if !errors.Is(err, pipeline.ErrGateTripped) || !strings.Contains(err.Error(), "max_no_action") || !strings.Contains(err.Error(), "gate action rejected 3 of 4") || !strings.Contains(err.Error(), "no_action 3") ||
		!strings.Contains(err.Error(), "schema of the library") {
		t.Fatalf("run error %v: want the action gate to fail the stage with its figures and a sample", err)
	}
	t.Logf("the gated run failed as it should: %v", err)
	m, err := run("open", ", max_no_action: 1")
	if err != nil {
		t.Fatalf("gate opened: %v", err)
	}
	st := m.Stages[len(m.Stages)-1].Stats
	if st["gate/action/checked"] != 4 || st["gate/action/rejected"] != 3 || st["dialogues/sql"] != 1 {
		t.Errorf("stats %v: want 4 answers checked, 3 rejected, 1 dialogue kept", st)
	}
}
