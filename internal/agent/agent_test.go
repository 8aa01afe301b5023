package agent_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	_ "github.com/codefeedback/codefeedback/executors/env/all"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// sandbox is a shared bwrap executor (2 warm instances: the machine has 2 cores).
func sandbox(tb testing.TB) executors.Executor { return sandboxtest.Shared(tb) }

func client(tb testing.TB, srv *llmtest.Server, cache store.Cache) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Config{Stage: "intercode", BaseURL: srv.URL, APIKeyEnv: "CODEFEEDBACK_TEST_NO_KEY",
		Params: llm.Params{Model: "fake"}, MaxAttempts: 1}, llm.Options{HTTPClient: srv.Client(), Cache: cache})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func tasks(tb testing.TB, file string) []env.Task {
	tb.Helper()
	ts, err := agent.LoadTasks(filepath.Join("testdata", file), "")
	if err != nil {
		tb.Fatal(err)
	}
	return ts
}

// taskOf finds the task whose query the conversation carries.
func taskOf(c llmtest.Call, ts []env.Task) (env.Task, bool) {
	for _, m := range c.Request.Messages {
		for _, t := range ts {
			if strings.Contains(m.Content, t.Query) {
				return t, true
			}
		}
	}
	return env.Task{}, false
}

// turn is the 1-based number of this model call in its conversation.
func turn(c llmtest.Call) int {
	n := 1
	for _, m := range c.Request.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

func py(code string) string { return "Let me write it.\n```python\n" + code + "\n```\n" }

// TestStrategiesRunToTurnLimit: a model that never solves the task uses
// every turn each strategy allows: single 1, Try Again and Plan & Solve n,
// ReAct n actions and then the loop's own submit.
func TestStrategiesRunToTurnLimit(t *testing.T) {
	ex := sandbox(t)
	ts := tasks(t, "sql_tasks.jsonl")
	const turns = 3
	for _, tc := range []struct {
		strategy      string
		agentTurns    int
		steps         int
		modelCalls    int
		lastIsAutoSub bool
	}{
		{agent.Single, 1, 1, 1, false},
		{agent.TryAgain, turns, turns, turns, false},
		{agent.ReAct, turns, turns + 1, turns, true},
		{agent.PlanSolve, turns, turns, turns + 1, false}, // the plan is one more call
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Script(func(c llmtest.Call) llmtest.Reply {
				if tc.strategy == agent.PlanSolve && turn(c) == 1 {
					return llmtest.Reply{Text: "1. Look at the items.\n2. Filter them."} // 2 steps, then 1 refine turn
				}
				wrong := "I will run this:\n```sql\nSELECT name FROM item WHERE price < 10\n```"
				if tc.strategy == agent.ReAct {
					return llmtest.Reply{Text: "Thought: cheap ones first.\nAction:\n" + wrong}
				}
				return llmtest.Reply{Text: wrong}
			})
			a, err := agent.New(agent.Options{Strategy: tc.strategy, Turns: turns, Model: "fake"}, client(t, srv, nil))
			if err != nil {
				t.Fatal(err)
			}
			e, err := env.Open(context.Background(), "sql", ex, env.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ep, err := a.Run(context.Background(), e, ts[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := ep.AgentTurns(); got != tc.agentTurns {
				t.Errorf("agent turns = %d, want %d", got, tc.agentTurns)
			}
			if len(ep.Steps) != tc.steps {
				t.Errorf("steps = %d, want %d", len(ep.Steps), tc.steps)
			}
			if got := srv.Calls("/v1/chat/completions"); got != tc.modelCalls {
				t.Errorf("model calls = %d, want %d", got, tc.modelCalls)
			}
			last := ep.Steps[len(ep.Steps)-1]
			if last.Auto != tc.lastIsAutoSub || (tc.lastIsAutoSub && last.Action != "submit") {
				t.Errorf("last step = %+v, want auto submit %v", last, tc.lastIsAutoSub)
			}
			for i, st := range ep.Steps {
				if !st.Valid || !strings.Contains(st.Observation, "pen") && !st.Auto {
					t.Errorf("step %d = %+v, want a valid action showing pen", i, st)
				}
			}
			if ep.Success || ep.Reward != 0 { // the cheap item is not among the expensive ones
				t.Errorf("reward = %v, success %v; want 0 and false", ep.Reward, ep.Success)
			}
			if tc.strategy == agent.ReAct && ep.Steps[0].Thought != "cheap ones first." {
				t.Errorf("thought = %q", ep.Steps[0].Thought)
			}
			// InterCode's ReAct logs keep one thought per turn, the turn-limit
			// submit's being "EXCEEDED MAX TURNS: submit"; other logs have none.
			th := ep.Trajectory().TurnHistory
			if tc.strategy == agent.ReAct {
				want := []string{}
				for _, s := range ep.Steps {
					w := "cheap ones first."
					if s.Auto {
						w = agent.ExceededThought
					}
					want = append(want, w)
				}
				if !reflect.DeepEqual(th.Thoughts, want) || len(th.Thoughts) != len(th.Actions) {
					t.Errorf("logged thoughts = %q, want %q", th.Thoughts, want)
				}
			} else if th.Thoughts != nil {
				t.Errorf("%s logged thoughts %q", tc.strategy, th.Thoughts)
			}
			if tc.strategy == agent.PlanSolve && !reflect.DeepEqual(ep.Plan, []string{"Look at the items.", "Filter them."}) {
				t.Errorf("plan = %q", ep.Plan)
			}
		})
	}
}
