package interact_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/internal/verify"
	"github.com/codefeedback/codefeedback/pipeline"
	_ "github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
	_ "github.com/codefeedback/codefeedback/stages/interact"
)

// sampleTasks are the sample task files of data/intercode, written for
// this project; the stage must work on them out of the box.
var sampleTasks = []string{"bash_tasks.jsonl", "sql_tasks.jsonl"}

func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("skipping: bubblewrap (bwrap) is not installed")
	}
}

// fence answers with one code block of the task's language.
func fence(lang, code string) string { return "I will run this:\n```" + lang + "\n" + code + "\n```\n" }

// TestInteractSampleTasks: every sample task, answered wrongly first and
// with its gold action second, becomes a kept dialogue (the last one,
// never right, is dropped); verify replays each dialogue in its
// environment to the same observations and rewards; every trainer format
// exports them.
func TestInteractSampleTasks(t *testing.T) {
	needBwrap(t)
	dir := t.TempDir()
	// The first perTask tasks of each sample file (all of them take long
	// on a loaded machine), written out as loaded: setup scripts inline,
	// database paths absolute.
	const perFile = 3
	var all []env.Task
	var inputs []string
	for _, f := range sampleTasks {
		ts, err := agent.LoadTasks(filepath.Join("..", "..", "data", "intercode", f), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) < perFile {
			t.Fatalf("%s: %d tasks, want at least %d", f, len(ts), perFile)
		}
		ts = ts[:perFile]
		var b strings.Builder
		for _, tk := range ts {
			if p := tk.Setup[env.SetupDBFile]; p != "" {
				tk.Setup[env.SetupDBFile], _ = filepath.Abs(p)
			}
			line, _ := json.Marshal(tk)
			b.Write(append(line, '\n'))
		}
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, ts...)
		inputs = append(inputs, "{path: "+p+", format: intercode}")
	}
	never := all[len(all)-1].ID // always answered wrongly: dropped
	var mu sync.Mutex
	calls := map[string]int{}
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		var task env.Task
		for _, tk := range all {
			if strings.Contains(c.Request.Messages[1].Content, tk.Query) {
				task = tk
			}
		}
		mu.Lock()
		calls[task.ID]++
		n := calls[task.ID]
		mu.Unlock()
		lang := agent.Lang(task.Env)
		wrong := "ls /nonexistent-dir"
		if task.Env == "sql" {
			wrong = "SELECT * FROM no_such_table"
		}
		if n == 1 || task.ID == never {
			return llmtest.Reply{Text: fence(lang, wrong)}
		}
		return llmtest.Reply{Text: fence(lang, task.Gold)}
	})
	formats := []string{"codefeedback", "sharegpt", "openai", "openai-tool", "parquet"}
	outs := "  - {path: " + filepath.Join(dir, "d.jsonl") + ", format: jsonl, kind: dialogue}\n"
	for _, f := range formats {
		ext := ".jsonl"
		if f == "parquet" {
			ext = ".parquet"
		}
		outs += "  - {path: " + filepath.Join(dir, "d."+f+ext) + ", format: " + f + ", kind: dialogue}\n"
	}
	y := "run_dir: " + filepath.Join(dir, "run") + "\nexecutor: bwrap://?pool=2\n" +
		"model: {base_url: \"" + srv.URL + "\", model: fake-agent, max_attempts: 1}\n" +
		"inputs: [" + strings.Join(inputs, ", ") + "]\n" +
		"stages:\n  - {stage: interact, concurrency: 2, settings: {strategy: tryagain, turns: 2}}\n" +
		"outputs:\n" + outs
	man := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	ds := pipelinetest.Dialogues(t, filepath.Join(dir, "d.jsonl"))
	if len(ds) != len(all)-1 {
		dl, _ := os.ReadFile(filepath.Join(dir, "run", "dead-letters.jsonl"))
		t.Fatalf("%d dialogues, want %d (all but the never-solved task); stats %v; dead letters %s", len(ds), len(all)-1, man.Stages[len(man.Stages)-1].Stats, dl)
	}
	envs := map[string]int{}
	for _, d := range ds {
		envs[d.Labels[agent.LabelEnv]]++
		if d.Labels[agent.LabelReward] != "1" || d.Labels[agent.LabelRewards] == "" || d.Labels["final_status"] != "pass" {
			t.Errorf("%s: labels %v", d.ID, d.Labels)
		}
		// user, wrong answer, its observation, gold answer, its observation, closing
		if len(d.Messages) != 6 || d.Messages[2].Role != schema.RoleExecution || d.Messages[2].Exec == nil ||
			d.Messages[2].Exec.ExitCode == 0 || d.Messages[4].Exec.ExitCode != 0 {
			t.Errorf("%s: messages %+v", d.ID, d.Messages)
		}
		if strings.Contains(d.Messages[2].Content, never) {
			t.Errorf("never-solved task kept")
		}
	}
	if envs["bash"] != perFile || envs["sql"] != perFile-1 {
		t.Errorf("dialogues per environment = %v, want bash %d, sql %d", envs, perFile, perFile-1)
	}
	st := man.Stages[len(man.Stages)-1].Stats
	if st["dropped/sql"] != 1 || st["success/bash"] != perFile || st["episodes/sql"] != perFile {
		t.Errorf("stats %v: want dropped/sql 1, success/bash %d, episodes/sql %d", st, perFile, perFile)
	}

	// verify re-executes every dialogue to the same observations and rewards.
	ex, err := executors.Open(context.Background(), "bwrap://?pool=2")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	c := &verify.Checker{Exec: ex}
	for i := range ds {
		rep, err := c.Dialogue(context.Background(), &ds[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Mismatches) > 0 || rep.Executions != 2 || rep.Agreed != 2 {
			t.Errorf("%s: verify %+v", ds[i].ID, rep)
		}
	}
	// A tampered observation is caught.
	bad := ds[0]
	bad.Messages = append([]schema.Message(nil), bad.Messages...)
	ex4 := *bad.Messages[4].Exec
	ex4.Stdout = "forged\n"
	bad.Messages[4].Exec = &ex4
	if rep, err := c.Dialogue(context.Background(), &bad); err != nil || len(rep.Mismatches) == 0 {
		t.Errorf("forged observation: verify %+v, %v; want a mismatch", rep, err)
	}

	// Every trainer format holds every dialogue.
	for _, f := range formats {
		ext := ".jsonl"
		if f == "parquet" {
			ext = ".parquet"
		}
		p := filepath.Join(dir, "d."+f+ext)
		if f == "parquet" {
			got, err := schema.ReadAll[schema.Dialogue](p)
			if err != nil || len(got) != len(ds) {
				t.Errorf("%s: %d dialogues, %v", f, len(got), err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != len(ds) {
			t.Errorf("%s: %d records, want %d", f, len(lines), len(ds))
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(lines[0], "ERROR") && !strings.Contains(lines[0], "testbed") {
			t.Errorf("%s: first record lacks the task: %.200s", f, lines[0])
		}
	}
}
