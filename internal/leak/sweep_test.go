package leak

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// sweep audits one dialogue per task, built by render, and counts the
// tasks whose dialogue is flagged against that same task.
func sweep(t *testing.T, a *Auditor, bench string, ps []schema.Problem, render func(p schema.Problem) string, user bool) (found int, missed []string) {
	t.Helper()
	ds := make([]schema.Dialogue, len(ps))
	for i, p := range ps {
		ds[i] = schema.Dialogue{ID: p.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: "Can you explain what this does?"},
			{Role: schema.RoleAssistant, Content: render(p)},
		}}
		if user {
			ds[i].Messages[0].Content, ds[i].Messages[1].Content = render(p), "Sure, let me work through it step by step."
		}
	}
	rep, err := a.Run(context.Background(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Benchmark == bench && f.TaskID == f.DialogueID {
			own[f.DialogueID] = true
		}
	}
	for _, p := range ps {
		if own[p.ID] {
			found++
		} else {
			missed = append(missed, p.ID)
		}
	}
	return found, missed
}

// Whole-benchmark sweeps on the real files: every task's code, copied in
// the ways a corpus holds it, is found against its own task.
func TestRealSweeps(t *testing.T) {
	a := testAuditor(t, Options{})
	he, mb := testHumanEval(t), testMBPP(t)
	cases := []struct {
		name   string
		bench  string
		ps     []schema.Problem
		render func(schema.Problem) string
		user   bool // rendered as the user's turn
	}{
		{"humaneval body without docstring", "humaneval", he, func(p schema.Problem) string {
			return "Here it is:\n" + stripDocstrings(p.Prompt) + p.Solution + "\nIt works on the examples."
		}, false},
		{"mbpp code unfenced", "mbpp", mb, func(p schema.Problem) string {
			return "Here is the function:\n" + p.Solution + "\nThat should do it."
		}, false},
		{"mbpp asserts unfenced", "mbpp", mb, func(p schema.Problem) string {
			return "You can check it with these tests:\n" + strings.Join(p.Tests, "\n") + "\nAll of them pass."
		}, false},
		// Statements of any length, down to "Write a function to find
		// the perimeter of a square." (short ones are matched whole).
		{"mbpp statement asked", "mbpp", mb, func(p schema.Problem) string {
			return "Hi! " + p.Text + " Thanks in advance."
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found, missed := sweep(t, a, c.bench, c.ps, c.render, c.user)
			t.Logf("%s: %d/%d found", c.name, found, len(c.ps))
			if found != len(c.ps) {
				t.Errorf("%s: found %d of %d; missed %s", c.name, found, len(c.ps), head(missed, 20))
			}
		})
	}
}

func head(s []string, n int) string {
	if len(s) > n {
		return fmt.Sprint(s[:n], " ...")
	}
	return fmt.Sprint(s)
}
