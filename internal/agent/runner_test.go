package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// scripted answers the python fixture tasks with known outcomes (Try Again,
// 3 turns):
//
//	add          turn 1 raises ZeroDivisionError before its def (failed action), turn 2 right: success at turn 2
//	uniq         right at turn 1: success at turn 1
//	area         no code block, 3 times: 3 failed actions, reward 0
//	count_small  runs but returns 1 always, 3 times: passes 1 of 2 tests, reward 0.5
//
// By hand: 2 of 4 succeed; actions 2+1+3+3 = 9, failed 1+0+3+0 = 4; mean
// reward (1+1+0+0.5)/4 = 0.625; turns to success (2+1)/2 = 1.5.
func scripted(ts []env.Task, calls map[string]int, mu *sync.Mutex) llmtest.Script {
	return func(c llmtest.Call) llmtest.Reply {
		t, ok := taskOf(c, ts)
		if !ok {
			return llmtest.Reply{Text: "?"}
		}
		mu.Lock()
		calls[t.ID]++
		mu.Unlock()
		switch t.ID {
		case "fixture/py/add":
			if turn(c) == 1 {
				return llmtest.Reply{Text: py("print(1 / 0)\ndef add(a, b):\n    return a + b")}
			}
			return llmtest.Reply{Text: py("def add(a, b):\n    return a + b")}
		case "fixture/py/uniq":
			return llmtest.Reply{Text: py("def uniq(xs):\n    return sorted(set(xs))")}
		case "fixture/py/area":
			return llmtest.Reply{Text: "The area of a square is its side squared."}
		}
		return llmtest.Reply{Text: py("def count_small(pairs):\n    return 1")}
	}
}

func TestRunnerMetricsLogsAndResume(t *testing.T) {
	ex := sandbox(t)
	ts := tasks(t, "python_tasks.jsonl")
	dir := t.TempDir()
	db, err := store.OpenBolt(filepath.Join(dir, "intercode.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := llmtest.New(t)
	srv.Script(scripted(ts, calls, &mu))
	a, err := agent.New(agent.Options{Strategy: agent.TryAgain, Turns: 3, Model: "fake"}, client(t, srv, nil))
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "trajectories")

	// First run: killed (its context cancelled) once 2 tasks are done.
	ctx, cancel := context.WithCancel(context.Background())
	r := &agent.Runner{Agent: a, Ex: ex, Cache: db, Concurrency: 1, LogDir: logs,
		Progress: func(p agent.Progress) {
			if p.Done == 2 {
				cancel()
			}
		}}
	if _, err := r.Run(ctx, ts); !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: err = %v, want context.Canceled", err)
	}
	first := map[string]int{}
	for k, v := range calls {
		first[k] = v
	}
	if len(first) < 2 {
		t.Fatalf("first run touched %v, want at least 2 tasks", first)
	}

	// Second run: the 2 finished tasks come from the store, untouched.
	var last agent.Progress
	r = &agent.Runner{Agent: a, Ex: ex, Cache: db, Concurrency: 2, LogDir: logs, Progress: func(p agent.Progress) { last = p }}
	eps, err := r.Run(context.Background(), ts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ts[0].ID, ts[1].ID} {
		if calls[id] != first[id] {
			t.Errorf("%s: %d model calls after resuming, want the first run's %d (finished tasks are not repeated)", id, calls[id], first[id])
		}
	}
	if !eps[0].Cached || !eps[1].Cached || eps[2].Cached || eps[3].Cached {
		t.Errorf("cached = %v %v %v %v, want true true false false", eps[0].Cached, eps[1].Cached, eps[2].Cached, eps[3].Cached)
	}
	if last.Done != 4 || last.Cached != 2 || last.Successes != 2 {
		t.Errorf("progress = %+v, want 4 done, 2 cached, 2 successes", last)
	}

	ms := agent.Summarize(eps)
	want := agent.Metrics{Env: "python", Strategy: agent.TryAgain, Model: "fake", TurnsMax: 3, Tasks: 4, Successes: 2,
		SuccessRate: 0.5, MeanReward: 0.625, Actions: 9, FailedActions: 4, ErrorRate: 4.0 / 9,
		MeanTurnsToSuccess: 1.5, TurnsToSuccess: map[string]int{"1": 1, "2": 1}, MeanTurns: 9.0 / 4}
	if len(ms) != 1 || !reflect.DeepEqual(ms[0], want) {
		t.Errorf("metrics =\n%+v\nwant\n%+v", ms, want)
	}

	// Every task's log parses back to its episode's trajectory.
	for i, ep := range eps {
		got, err := env.ReadTrajectories(filepath.Join(logs, agent.LogName(i, ep.Task)))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], ep.Trajectory()) {
			t.Errorf("task %d log = %+v, want %+v", i, got, ep.Trajectory())
		}
		tr := got[0]
		if tr.Environment != "ic_python" || tr.Query != ep.Task.Query || tr.Summary.TurnsMax != 3 ||
			len(tr.TurnHistory.Actions) != ep.AgentTurns() || tr.Success() != ep.Success {
			t.Errorf("task %d log = %+v", i, tr)
		}
	}
	if err := agent.WriteRun(dir, eps, ms); err != nil {
		t.Fatal(err)
	}
	all, err := env.ReadTrajectories(filepath.Join(dir, "ic_python_tryagain_fake_3_turns.json"))
	if err != nil || len(all) != 4 {
		t.Fatalf("combined log: %d trajectories, %v", len(all), err)
	}
	if all[0].TurnHistory.Rewards[1] != 1 || *all[0].TurnHistory.ValidAction[0] {
		t.Errorf("add: rewards %v valid %v, want success at turn 2 after an invalid turn 1", all[0].TurnHistory.Rewards, all[0].TurnHistory.ValidAction)
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics.json")); err != nil {
		t.Error(err)
	}
}
