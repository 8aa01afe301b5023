package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
)

// closingOf returns the closing turn of a solved episode whose last steps
// are steps.
func closingOf(t *testing.T, id, envName string, steps ...agent.Step) string {
	t.Helper()
	ep := agent.Episode{Task: env.Task{ID: id, Env: envName, Query: "q"}, Strategy: agent.TryAgain, Model: "m",
		Steps: steps, Reward: 1, Success: true}
	d, err := ep.Dialogue("interact")
	if err != nil {
		t.Fatal(err)
	}
	return d.Messages[len(d.Messages)-1].Content
}

// jsonRows is rows as a trajectory file gives them back.
func jsonRows(t *testing.T, rows [][]any) any {
	b, _ := json.Marshal(rows)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestClosing: the closing turn states what the last run showed and no
// more: a short output or single value quoted, a count otherwise, no claim
// about output when the run printed an error.
func TestClosing(t *testing.T) {
	table := "+----------+\n| count(*) |\n+----------+\n| 7        |\n+----------+\n(1 row)\n"
	cases := []struct {
		name, env string
		steps     []agent.Step
		want      []string // every one in the closing
		not       []string // none of these
	}{
		{"bash value", "bash", []agent.Step{{Action: "grep -c ERROR f", Observation: "2\n", Valid: true, Reward: 1}}, []string{"`2`"}, []string{"lines"}},
		{"bash lines", "bash", []agent.Step{{Action: "ls", Observation: "a.py\nb.py\nc.py\n", Valid: true, Reward: 1}}, []string{"3 lines"}, []string{"`"}},
		{"bash quiet", "bash", []agent.Step{{Action: "rm x", Observation: "", Valid: true, Reward: 1}}, nil, []string{"`", "lines", "prints"}},
		{"bash error output", "bash", []agent.Step{{Action: "rm x y", Observation: "rm: cannot remove 'y'\n", Valid: false, Reward: 1}}, nil, []string{"`", "lines", "without output"}},
		{"bash long line", "bash", []agent.Step{{Action: "cat f", Observation: strings.Repeat("x", 100), Valid: true, Reward: 1}}, []string{"line"}, []string{"`", "lines"}},
		{"sql value", "sql", []agent.Step{{Action: "SELECT count(*) FROM t", Observation: table, Valid: true, Reward: 1,
			Info: map[string]any{"rows": [][]any{{int64(7)}}}}}, []string{"`7`"}, nil},
		{"sql value from file", "sql", []agent.Step{{Action: "SELECT count(*) FROM t", Observation: "(1 row)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": jsonRows(t, [][]any{{1234567}})}}}, []string{"`1234567`"}, []string{"e+"}},
		{"sql value as shown", "sql", []agent.Step{{Action: "SELECT avg(days) FROM loan", Observation: "+-----------+\n| avg(days) |\n+-----------+\n| 11.0      |\n+-----------+\n(1 row)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": [][]any{{11.0}}}}}, []string{"`11.0`"}, nil},
		{"sql rows", "sql", []agent.Step{{Action: "SELECT a, b FROM t", Observation: "...\n(3 rows)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": [][]any{{1, 2}, {3, 4}, {5, 6}}}}}, []string{"3 rows"}, []string{"`"}},
		{"sql none", "sql", []agent.Step{{Action: "SELECT a FROM t WHERE 0", Observation: "(0 rows)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": [][]any{}, env.InfoRowCount: 0, env.InfoRowsShown: 0}}}, []string{"no row"}, nil},
		// A cut table: the footer is not "(N rows)", and the count comes
		// from the result, not the text (it said "No row matches").
		{"sql cut", "sql", []agent.Step{{Action: "SELECT a FROM t", Observation: "| 1 |\n(58 rows, first 50 shown)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": make([][]any, 58), env.InfoRowCount: 58, env.InfoRowsShown: 50}}}, []string{"58 rows", "first 50"}, []string{"no row", "empty"}},
		{"sql cut from file", "sql", []agent.Step{{Action: "SELECT a FROM t", Observation: "(58 rows, first 50 shown)\n", Valid: true, Reward: 1,
			Info: map[string]any{env.InfoRowCount: float64(58), env.InfoRowsShown: float64(50)}}}, []string{"58 rows", "first 50"}, []string{"no row", "empty", "the 58 rows above"}},
		// Stored before the counts were recorded: the rows say how many.
		{"sql cut legacy", "sql", []agent.Step{{Action: "SELECT a FROM t", Observation: "(58 rows, first 50 shown)\n", Valid: true, Reward: 1,
			Info: map[string]any{"rows": jsonRows(t, make([][]any, 58))}}}, []string{"58 rows"}, []string{"no row", "empty", "above"}},
		// No result set known: nothing is claimed about rows.
		{"sql no result set", "sql", []agent.Step{{Action: "SELECT a FROM t WHERE 0", Observation: "(0 rows)\n", Valid: true, Reward: 1}}, []string{"question"}, []string{"row", "empty"}},
		{"python submit", "python", []agent.Step{{Action: "def f(x): return x", Observation: "", Valid: true},
			{Action: "submit f", Observation: "3 of 3 tests passed.", Valid: true, Reward: 1, Submit: true}}, []string{"`f`", "3 tests"}, nil},
		{"ctf flag", "ctf", []agent.Step{{Action: "cat flag.txt", Observation: "picoCTF{x}\n", Valid: true},
			{Action: "submit picoCTF{x}", Observation: "Correct!", Valid: true, Reward: 1, Submit: true}}, []string{"`picoCTF{x}`"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Every phrasing must hold: try ids until each variant was seen.
			seen := map[string]bool{}
			for i := 0; i < 64 && len(seen) < 4; i++ {
				got := closingOf(t, c.name+string(rune('a'+i%26))+strings.Repeat("x", i/26), c.env, c.steps...)
				seen[got] = true
				low := strings.ToLower(got)
				for _, w := range c.want {
					if !strings.Contains(low, strings.ToLower(w)) {
						t.Errorf("closing %q lacks %q", got, w)
					}
				}
				for _, w := range c.not {
					if strings.Contains(low, strings.ToLower(w)) {
						t.Errorf("closing %q says %q", got, w)
					}
				}
			}
			if len(seen) < 2 {
				t.Errorf("one phrasing for every dialogue: %v", seen)
			}
		})
	}
}
