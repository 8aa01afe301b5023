package feedbackloop

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

func sharedPath(t testing.TB, rel string) string { return sharedtest.Path(t, rel) }

// plantBugs returns, per problem id, its reference solution with one bug
// planted by the correct stage's mutation engine (kinds cycle through
// syntax, name, type and logic; a problem with no mutant of its kind takes
// the first of any kind).
func plantBugs(t testing.TB, ex executors.Executor, ps []schema.Problem) map[string]string {
	t.Helper()
	m := &mutate.Mutator{Exec: ex, PerOperator: 1}
	kinds := []mutate.Kind{mutate.Syntax, mutate.Name, mutate.Type, mutate.Logic}
	out := map[string]string{}
	for i, p := range ps {
		all, err := m.Mutate(context.Background(), p.Solution, 1, mutate.Operators(kinds...))
		if err != nil {
			t.Fatalf("%s: mutate: %v", p.ID, err)
		}
		want := kinds[i%len(kinds)]
		for _, mu := range all {
			if mu.Kind == want {
				out[p.ID] = mu.Code
				break
			}
		}
		if out[p.ID] == "" && len(all) > 0 {
			out[p.ID] = all[0].Code
		}
		if out[p.ID] == "" {
			out[p.ID] = p.Solution + "\nundefined_name_planted_by_test\n"
		}
	}
	return out
}

// TestMBPP50 runs 50 MBPP problems with a fake model whose first answer is
// the reference solution with a planted bug and whose later answers are the
// reference solution; every dialogue kept must end in code that passes the
// problem's tests when judged again on its own.
func TestMBPP50(t *testing.T) {
	ps, err := schema.LoadProblems(sharedPath(t, "mbpp/mbpp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ps = ps[:50]
	ex := sandbox(t, "pool=2")
	byText := map[string]*schema.Problem{}
	for i := range ps {
		byText[strings.TrimSpace(ps[i].Text)] = &ps[i]
	}
	buggy := plantBugs(t, ex, ps)
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		task := call.Request.Messages[min(1, len(call.Request.Messages)-1)].Content
		if llmtest.Role(call) == "feedback" {
			return llmtest.Reply{Text: `{"met": ["functionality"], "missed": ["clarity"], "feedback": "Please explain the approach in a comment."}`}
		}
		text, _, _ := strings.Cut(task, "\n\nYour code should pass")
		p := byText[strings.TrimSpace(text)]
		if p == nil {
			t.Errorf("fake model: unknown task %q", task)
			return llmtest.Reply{Text: "?"}
		}
		if call.AssistantTurns() == 0 {
			return llmtest.Reply{Text: "Here is my solution.\n\n" + block(buggy[p.ID])}
		}
		return llmtest.Reply{Text: "Fixed.\n\n" + block(p.Solution)}
	}, nil)
	s, err := New(Options{FeedbackRounds: 1}, c, nil, c, ex)
	if err != nil {
		t.Fatal(err)
	}
	failedFirst, kept := 0, 0
	results := make([]Result, len(ps))
	errs := make(chan error, len(ps))
	sem := make(chan struct{}, 4)
	for i := range ps {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			task, err := s.TaskFromProblem(ps[i])
			if err == nil {
				results[i], err = s.Run(context.Background(), task)
			}
			errs <- err
		}()
	}
	for range ps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range results {
		if !r.Passed { // dropped under the default policy
			t.Logf("%s dropped: %s (%s)", ps[i].ID, r.Reason, r.Dialogue.Labels["outcomes"])
			continue
		}
		kept++
		if !strings.HasPrefix(r.Dialogue.Labels["outcomes"], "1=pass") {
			failedFirst++
		}
		final := lastCode(r.Dialogue)
		v, err := harness.Judge(context.Background(), ex, ps[i], final, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Passed {
			t.Errorf("%s: final code fails on re-run:\n%s", ps[i].ID, v.Feedback)
		}
	}
	t.Logf("MBPP-50: %d dialogues kept, %d of them with a failing first run", kept, failedFirst)
	if kept < 45 || failedFirst < 40 {
		t.Errorf("kept %d (want >= 45), failing first runs %d (want >= 40)", kept, failedFirst)
	}
}

// lastCode returns the python code of the dialogue's last assistant turn
// that holds code.
func lastCode(d schema.Dialogue) string {
	for i := len(d.Messages) - 1; i >= 0; i-- {
		m := d.Messages[i]
		if m.Role == schema.RoleExecution && m.Exec != nil {
			// the assistant turn before an execution holds the code that ran
			for j := i - 1; j >= 0; j-- {
				if d.Messages[j].Role == schema.RoleAssistant {
					if b := codeOf(d.Messages[j].Content); b != "" {
						return b
					}
				}
			}
		}
	}
	return ""
}

func codeOf(text string) string {
	_, rest, ok := strings.Cut(text, "```python\n")
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, "\n```")
	return code
}
