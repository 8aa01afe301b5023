package evaluate_test

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

func client(tb testing.TB, srv *llmtest.Server, model string, cache store.Cache) *llm.Client {
	tb.Helper()
	c, err := llm.New(llm.Config{Stage: "eval", BaseURL: srv.URL, APIKeyEnv: "CODEFEEDBACK_TEST_NO_KEY",
		Params: llm.Params{Model: model}, MaxAttempts: 1}, llm.Options{HTTPClient: srv.Client(), Cache: cache})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func fence(code string) string { return "Here is the code:\n```python\n" + code + "\n```\n" }

// stubThenSolution is a writer model that answers each task first with a
// stub that returns nothing, then, asked again, with the task's solution;
// refined, when not nil, sees each request for the second answer.
func stubThenSolution(t *testing.T, tasks []evaluate.Task, refined func(llmtest.Call)) func(llmtest.Call) llmtest.Reply {
	return func(c llmtest.Call) llmtest.Reply {
		i, task := taskOf(t, tasks, c)
		if i < 0 {
			return llmtest.Reply{Text: "no"}
		}
		if len(c.Request.Messages) == 1 {
			return llmtest.Reply{Text: fence("def " + task.EntryPoint + "(*a):\n    pass")}
		}
		if refined != nil {
			refined(c)
		}
		return llmtest.Reply{Text: fence(task.Problem.Solution)}
	}
}

// taskOf finds the task whose prompt opens the conversation.
func taskOf(tb testing.TB, tasks []evaluate.Task, c llmtest.Call) (int, evaluate.Task) {
	first := c.Request.Messages[0].Content
	for i, t := range tasks {
		if strings.Contains(first, t.Problem.Prompt) && (t.Problem.Prompt != "" || strings.Contains(first, t.Problem.Text)) {
			return i, t
		}
	}
	tb.Errorf("no task matches the request %q", first)
	return -1, evaluate.Task{}
}

// TestScriptedModelRefinement: a fake model answers the odd tasks wrongly
// first and right after feedback, the even ones right at once; pass@1 goes
// from 5/10 to 10/10 after one round, the feedback carries the failing test,
// and a second run from the same store sends no model request at all.
func TestScriptedModelRefinement(t *testing.T) {
	tasks := load(t, evaluate.HumanEval, 10)
	ex := sandbox(t)
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "eval.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var mu sync.Mutex
	feedbackSeen := map[int]string{}
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		i, task := taskOf(t, tasks, c)
		if i < 0 {
			return llmtest.Reply{Text: "no"}
		}
		p := task.Problem
		turn := (len(c.Request.Messages) + 1) / 2 // 1 for the first answer
		switch {
		case turn == 1 && i%2 == 1:
			return llmtest.Reply{Text: fence("def " + task.EntryPoint + "(*args, **kwargs):\n    return None")}
		case turn == 1 && i == 0:
			// Only the body, as completion-style models answer.
			return llmtest.Reply{Text: fence(strings.Trim(p.Solution, "\n"))}
		case turn == 2:
			mu.Lock()
			feedbackSeen[i] = c.LastUser()
			mu.Unlock()
		}
		return llmtest.Reply{Text: fence(p.Program())}
	})
	e, ss := evaluateAll(t, evaluate.Options{Model: "fake-chat", Rounds: 2, Feedback: evaluate.FeedbackExecution, Concurrency: 2},
		client(t, srv, "fake-chat", db), nil, ex, db, tasks)
	rep := e.Score([]string{evaluate.HumanEval}, ss)
	got := []int{}
	for _, r := range rep.Benchmarks[0].Rounds {
		got = append(got, r.Passed)
	}
	if want := []int{5, 10, 10}; !slices.Equal(got, want) {
		t.Fatalf("passed per round = %v, want %v", got, want)
	}
	if r := rep.Benchmarks[0].Rounds; r[0].PassAt1 != 50 || r[1].PassAt1 != 100 {
		t.Errorf("pass@1 = %.1f, %.1f; want 50.0, 100.0", r[0].PassAt1, r[1].PassAt1)
	}
	for i, s := range ss {
		wantRounds := 1 + i%2
		if len(s.Rounds) != wantRounds {
			t.Errorf("%s: %d rounds, want %d (refinement stops when the tests pass)", s.TaskID, len(s.Rounds), wantRounds)
		}
		if i%2 == 1 {
			fb := feedbackSeen[i]
			if !strings.Contains(fb, "Execution feedback") || !strings.Contains(fb, "got None") {
				t.Errorf("%s: feedback turn %q lacks the execution feedback with the actual value", s.TaskID, fb)
			}
			roles := []string{}
			for _, m := range s.Messages {
				roles = append(roles, m.Role)
			}
			want := "user assistant execution user assistant execution"
			if strings.Join(roles, " ") != want {
				t.Errorf("%s: roles %v, want %s", s.TaskID, roles, want)
			}
			if s.Messages[2].Exec == nil || s.Messages[2].Exec.Passed == nil || *s.Messages[2].Exec.Passed {
				t.Errorf("%s: first execution record should say failed: %+v", s.TaskID, s.Messages[2].Exec)
			}
		}
	}
	if got := ss[0].Rounds[0].Extraction; got != evaluate.ExtractBody {
		t.Errorf("body-only answer extraction = %q, want %q", got, evaluate.ExtractBody)
	}
	calls := srv.Calls("/v1/chat/completions")
	if calls != 15 {
		t.Errorf("model calls = %d, want 15 (10 first answers + 5 refinements)", calls)
	}

	// Resume: the same store answers everything.
	srv2 := llmtest.New(t)
	srv2.Script(func(c llmtest.Call) llmtest.Reply {
		t.Errorf("unexpected model call on a resumed run")
		return llmtest.Reply{Text: "x"}
	})
	e2, ss2 := evaluateAll(t, evaluate.Options{Model: "fake-chat", Rounds: 2, Feedback: evaluate.FeedbackExecution, Concurrency: 2},
		client(t, srv2, "fake-chat", db), nil, ex, db, tasks)
	rep2 := e2.Score([]string{evaluate.HumanEval}, ss2)
	if rep2.CachedSamples != len(tasks) || rep2.Benchmarks[0].Rounds[1].Passed != 10 {
		t.Errorf("resumed: %d cached samples, round 1 passed %d; want %d and 10", rep2.CachedSamples, rep2.Benchmarks[0].Rounds[1].Passed, len(tasks))
	}
}

// TestHumanFeedback: in human and oracle modes the feedback model sees the
// code and what the tests said, sees the canonical solution only in oracle
// mode, and its words become the next user turn.
func TestHumanFeedback(t *testing.T) {
	tasks := load(t, evaluate.MBPP, 2)
	ex := sandbox(t)
	for _, mode := range []string{evaluate.FeedbackHuman, evaluate.FeedbackOracle} {
		t.Run(mode, func(t *testing.T) {
			const advice = "Your function returns nothing; compute and return the result."
			fbSrv := llmtest.New(t)
			var mu sync.Mutex
			var fbRequests []string
			fbSrv.Script(func(c llmtest.Call) llmtest.Reply {
				mu.Lock()
				fbRequests = append(fbRequests, c.LastUser())
				mu.Unlock()
				return llmtest.Reply{Text: advice}
			})
			srv := llmtest.New(t)
			srv.Script(stubThenSolution(t, tasks, func(c llmtest.Call) {
				if !strings.Contains(c.LastUser(), advice) {
					t.Errorf("refinement request %q lacks the feedback model's words", c.LastUser())
				}
			}))
			_, ss := evaluateAll(t, evaluate.Options{Model: "fake-chat", Rounds: 1, Feedback: mode, Concurrency: 2},
				client(t, srv, "fake-chat", nil), client(t, fbSrv, "fake-feedback", nil), ex, nil, tasks)
			for _, s := range ss {
				if s.PassedRound != 1 {
					t.Errorf("%s passed at round %d, want 1", s.TaskID, s.PassedRound)
				}
				fb := s.Messages[3]
				if fb.Role != schema.RoleUser || fb.Feedback == nil || fb.Feedback.Oracle != (mode == evaluate.FeedbackOracle) {
					t.Errorf("%s: feedback turn %+v, want a user turn marked oracle=%v", s.TaskID, fb, mode == evaluate.FeedbackOracle)
				}
			}
			if len(fbRequests) != len(tasks) {
				t.Fatalf("feedback requests = %d, want %d", len(fbRequests), len(tasks))
			}
			for _, r := range fbRequests {
				var task evaluate.Task
				for _, tk := range tasks {
					if strings.Contains(r, tk.Problem.Text) {
						task = tk
					}
				}
				sol := strings.TrimSpace(task.Problem.Solution)
				if got := strings.Contains(r, sol); got != (mode == evaluate.FeedbackOracle) {
					t.Errorf("feedback request shows the canonical solution = %v in %s mode", got, mode)
				}
				if !strings.Contains(r, "tests failed") {
					t.Errorf("feedback request lacks the test results: %q", r)
				}
			}
		})
	}
}

// TestHumanFeedbackWithCodeIsRejected: a feedback model that pastes the
// corrected program (as 274 of 274 feedback turns did) is repaired, then
// rejected; the refinement stops, so the human score is not an oracle
// score, and the report says so. A feedback model that writes words passes.
func TestHumanFeedbackWithCodeIsRejected(t *testing.T) {
	tasks := load(t, evaluate.MBPP, 2)
	ex := sandbox(t)
	solve := func(task string) (string, string, bool) {
		for _, tk := range tasks {
			if strings.Contains(task, strings.TrimSpace(tk.Problem.Text)) {
				return tk.Problem.Solution, "", true
			}
		}
		return "", "", false
	}
	for _, bad := range []bool{true, false} {
		t.Run(map[bool]string{true: "code", false: "words"}[bad], func(t *testing.T) {
			persona := &llmtest.Persona{Solve: solve}
			if bad {
				persona.Bad = map[llmtest.Misbehaviour]bool{llmtest.CodeInFeedback: true}
			}
			fbSrv := llmtest.New(t)
			fbSrv.Script(persona.Script())
			srv := llmtest.New(t)
			srv.Script(stubThenSolution(t, tasks, nil))
			e, ss := evaluateAll(t, evaluate.Options{Model: "fake-chat", Rounds: 1, Feedback: evaluate.FeedbackHuman, Concurrency: 2},
				client(t, srv, "fake-chat", nil), client(t, fbSrv, "fake-feedback", nil), ex, nil, tasks)
			rep := e.Score([]string{evaluate.MBPP}, ss)
			for _, s := range ss {
				for _, rd := range s.Rounds {
					if strings.Contains(rd.Feedback, "```") {
						t.Errorf("%s: feedback holds code: %q", s.TaskID, rd.Feedback)
					}
				}
				if bad && (s.PassedRound != -1 || s.Rounds[len(s.Rounds)-1].FeedbackRejected != "feedback_code") {
					t.Errorf("%s: passed at round %d, rounds %+v; want no pass and the feedback rejected", s.TaskID, s.PassedRound, s.Rounds)
				}
				if !bad && s.PassedRound != 1 {
					t.Errorf("%s: passed at round %d, want 1 with feedback in words", s.TaskID, s.PassedRound)
				}
			}
			if got := len(rep.Benchmarks[0].FeedbackRejected); got != map[bool]int{true: len(tasks), false: 0}[bad] {
				t.Errorf("report lists %d rejected feedback answers", got)
			}
			// first answer + two repairs per task when the feedback holds code
			if want := map[bool]int{true: 3, false: 1}[bad] * len(tasks); fbSrv.Calls("/v1/chat/completions") != want {
				t.Errorf("feedback model calls = %d, want %d", fbSrv.Calls("/v1/chat/completions"), want)
			}
		})
	}
}
