package feedbackloop

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestSilentRunAskedToDemonstrate: a test-less answer whose clean run
// prints nothing is asked for again, once and outside the dialogue, with a
// call that prints; the printing answer replaces the silent one (its run is
// the one shown), and a writer that stays silent keeps its answer, counted.
func TestSilentRunAskedToDemonstrate(t *testing.T) {
	const def = "def double(x):\n    return 2 * x"
	cases := []struct {
		name     string
		repaired string // the writer's code after the demonstration repair
		want     string // the execution turn shown
		outcomes string
		labels   map[string]string
		asks     int // writer requests
	}{
		{"adds a call", def + "\n\nprint(double(21))", "42", "1=pass",
			map[string]string{LabelDemonstrated: "1", LabelSilent: ""}, 2},
		{"stays silent", def, SilentRun, "1=pass",
			map[string]string{LabelDemonstrated: "", LabelSilent: "1"}, 2},
		{"the call fails", def + "\n\nprint(double(21) + 'x')", "TypeError", "1=TypeError 2=pass",
			map[string]string{LabelDemonstrated: "1", LabelSilent: ""}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex := sandbox(t, "")
			writes := 0
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch {
				case llmtest.Role(call) == "judge":
					return llmtest.Reply{Text: `{"correct": true, "reason": "it doubles"}`}
				case strings.HasPrefix(call.LastUser(), "The run above is accepted"):
					return llmtest.Reply{Text: "The run shows what `double` returns for 21."}
				}
				writes++
				switch {
				case call.LastUser() == demoRepair:
					return llmtest.Reply{Text: "I double the argument and print an example.\n\n" + block(tc.repaired) + "\n\nIt doubles its input."}
				case strings.HasPrefix(call.LastUser(), "Execution result:"):
					return llmtest.Reply{Text: "The example added a string to a number; it prints the number now.\n\n" + block(def+"\n\nprint(double(21))") + "\n\nIt doubles its input."}
				}
				return llmtest.Reply{Text: "I double the argument.\n\n" + block(def) + "\n\nIt doubles its input."}
			}, nil)
			s, err := New(Options{FeedbackRounds: 0}, c, c, nil, ex)
			if err != nil {
				t.Fatal(err)
			}
			task, err := TaskFromDialogue(schema.Dialogue{ID: "d", Sources: []string{"q"}, Messages: []schema.Message{
				{Role: schema.RoleUser, Content: "Write a function that doubles a number."}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Dialogue
			runs := execTurns(d)
			if !res.Passed || len(runs) == 0 || !strings.Contains(runs[0].Content, tc.want) {
				t.Fatalf("passed %v, runs %v; want passed with a first run showing %q", res.Passed, runs, tc.want)
			}
			if got := d.Labels["outcomes"]; got != tc.outcomes {
				t.Errorf("outcomes %q, want %q", got, tc.outcomes)
			}
			for k, v := range tc.labels {
				if d.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, d.Labels[k], v)
				}
			}
			if writes != tc.asks {
				t.Errorf("writer asked %d times, want %d", writes, tc.asks)
			}
			// The silent answer is not in the dialogue when it was replaced:
			// the first answer holds the code of the first run shown.
			first := d.Messages[1]
			if first.Role != schema.RoleAssistant || !strings.Contains(first.Content, runs[0].Exec.Code) {
				t.Errorf("first answer %q does not hold the code its run shows (%q)", first.Content, runs[0].Exec.Code)
			}
			for _, m := range d.Messages {
				if strings.Contains(m.Content, demoRepair) {
					t.Errorf("the repair prompt is in the dialogue: %q", m.Content)
				}
			}
		})
	}
}
