package agent_test

import (
	"reflect"
	"testing"

	"github.com/codefeedback/codefeedback/internal/agent"
)

func TestParseAction(t *testing.T) {
	for _, tc := range []struct {
		name, answer, lang string
		want               agent.Action
		ok                 bool
	}{
		{"block", "Run:\n```bash\nls /testbed\n```", "bash", agent.Action{Code: "ls /testbed"}, true},
		{"unlabelled block", "```\nSELECT 1\n```", "sql", agent.Action{Code: "SELECT 1"}, true},
		{"other language only", "```python\nprint(1)\n```", "bash", agent.Action{}, false},
		{"submit line", "The output is right.\nsubmit", "bash", agent.Action{Submit: true}, true},
		{"submit in backticks", "Done: `submit`", "sql", agent.Action{}, false},
		{"submit own line backticks", "Done.\n`submit`", "sql", agent.Action{Submit: true}, true},
		{"submit with arg", "submit min_cost", "python", agent.Action{Submit: true, Arg: "min_cost"}, true},
		{"submit block", "```bash\nsubmit\n```", "bash", agent.Action{Submit: true}, true},
		{"react", "Thought: look first.\nAction: ```bash\nls\n```", "bash", agent.Action{Code: "ls", Thought: "look first."}, true},
		{"react submit", "Thought: done.\nAction: submit", "bash", agent.Action{Submit: true, Thought: "done."}, true},
		{"prose", "I think the answer is 4.", "sql", agent.Action{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := agent.ParseAction(tc.answer, tc.lang)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("ParseAction(%q) = %+v, %v; want %+v, %v", tc.answer, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParsePlan(t *testing.T) {
	got := agent.ParsePlan("Plan:\n1. Look.\n2) Filter rows.\n  3. Check.\nThat is all.", 2)
	if want := []string{"Look.", "Filter rows."}; !reflect.DeepEqual(got, want) {
		t.Errorf("plan = %q, want %q", got, want)
	}
}
