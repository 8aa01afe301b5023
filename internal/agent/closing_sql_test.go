package agent_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

// sqlClosing runs action as the last step of a solved episode of t in e
// and returns the step and the episode's closing turn.
func sqlClosing(t *testing.T, e env.Env, task env.Task, action string) (agent.Step, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	r, err := e.Step(ctx, action)
	if err != nil {
		t.Fatal(err)
	}
	st := agent.Step{Answer: "```sql\n" + action + "\n```", Action: action, Observation: r.Observation, Valid: r.Valid, Reward: 1, Info: r.Info}
	ep := agent.Episode{Task: task, Strategy: agent.TryAgain, Model: "m", Steps: []agent.Step{st}, Reward: 1, Success: true}
	d, err := ep.Dialogue("interact")
	if err != nil {
		t.Fatal(err)
	}
	return st, d.Messages[len(d.Messages)-1].Content
}

var (
	reClaimRows  = regexp.MustCompile(`\b(\d+) rows?\b`)
	reClaimFirst = regexp.MustCompile(`first (\d+)`)
	reClaimQuote = regexp.MustCompile("`([^`]*)`")
)

// closingContradiction says how a sql closing contradicts the step's
// result (its row count from Info, its table), or "".
func closingContradiction(st agent.Step, closing string) string {
	n, _ := st.Info[env.InfoRowCount].(int)
	shown, _ := st.Info[env.InfoRowsShown].(int)
	low := strings.ToLower(closing)
	if _, ok := st.Info[env.InfoRowCount]; !ok {
		if reClaimRows.MatchString(low) || strings.Contains(low, "no row") || strings.Contains(low, "empty") {
			return "claims a row count for a statement with no result set"
		}
		return ""
	}
	empty := strings.Contains(low, "no row") || strings.Contains(low, "empty result")
	if empty != (n == 0) {
		return "says empty=" + strconv.FormatBool(empty) + " over " + strconv.Itoa(n) + " rows"
	}
	for _, m := range reClaimRows.FindAllStringSubmatch(low, -1) {
		if c, _ := strconv.Atoi(m[1]); c != n {
			return "claims " + m[0] + " over " + strconv.Itoa(n)
		}
	}
	if m := reClaimFirst.FindStringSubmatch(low); m != nil {
		if c, _ := strconv.Atoi(m[1]); c != shown {
			return "claims the first " + m[1] + " shown, the table shows " + strconv.Itoa(shown)
		}
	} else if shown < n && strings.Contains(low, "above") {
		return "points at rows above that the table does not show"
	}
	for _, m := range reClaimQuote.FindAllStringSubmatch(closing, -1) {
		if n != 1 || !strings.Contains(st.Observation, "| "+m[1]+" ") {
			return "quotes `" + m[1] + "`, not the single cell of the table"
		}
	}
	return ""
}

// TestSQLClosingOfACutTable: a result of more rows than the table shows
// (58 rows, the first 50 shown) is closed with its true count, never as
// an empty result (the footer "(58 rows, first 50 shown)" fooled a regex).
func TestSQLClosingOfACutTable(t *testing.T) {
	e, err := env.Open(context.Background(), "sql", sandbox(t), env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	task := tasks(t, "sql_tasks.jsonl")[0]
	cases := []struct {
		sql         string
		rows, shown int
	}{
		{"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 58) SELECT x FROM c", 58, 50},
		{"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) SELECT x, x * 2 FROM c", 50, 50},
		{"SELECT name FROM item WHERE price > 1000", 0, 0},
		{"SELECT count(*) FROM item", 1, 1},
	}
	for _, c := range cases {
		for i := 0; i < 8; i++ { // every phrasing (the variant follows the task id)
			task.ID = "cut/" + strconv.Itoa(i)
			st, closing := sqlClosing(t, e, task, c.sql)
			if got, _ := st.Info[env.InfoRowCount].(int); got != c.rows || st.Info[env.InfoRowsShown] != c.shown {
				t.Fatalf("%s: info %v rows, %v shown; want %d, %d", c.sql, st.Info[env.InfoRowCount], st.Info[env.InfoRowsShown], c.rows, c.shown)
			}
			if why := closingContradiction(st, closing); why != "" {
				t.Errorf("%s: closing %q %s (table ends %q)", c.sql, closing, why, tailLines(st.Observation, 2))
			}
		}
	}
}

// TestSpiderClosings: no closing contradicts its table over every Spider
// gold and 100 wrong answers (another task's gold on the same database),
// on InterCode's own data (CODEFEEDBACK_INTERCODE_DIR: a checkout of
// InterCode's repository or the cache `codefeedback intercode fetch`
// fills).
func TestSpiderClosings(t *testing.T) {
	ts := envtest.InterCodeTasks(t, "data/sql/spider/ic_spider_dev.json", "spider")
	e, err := env.Open(context.Background(), "sql", sandbox(t), env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	bad, cut, wrong := 0, 0, 0
	check := func(task env.Task, action string) {
		st, closing := sqlClosing(t, e, task, action)
		if n, _ := st.Info[env.InfoRowCount].(int); n > sqlShown(st) {
			cut++
		}
		if why := closingContradiction(st, closing); why != "" {
			bad++
			t.Errorf("%s: %q: closing %q %s", task.ID, action, closing, why)
		}
	}
	for i, task := range ts {
		check(task, task.Gold)
		if wrong < 100 {
			for j := i + 1; j < len(ts); j++ {
				if o := ts[j]; o.Setup[env.SetupDB] == task.Setup[env.SetupDB] && o.Gold != task.Gold {
					check(task, o.Gold)
					wrong++
					break
				}
			}
		}
	}
	if wrong < 100 {
		t.Errorf("only %d wrong answers checked", wrong)
	}
	t.Logf("%d golds and %d wrong answers: %d closings contradict their table; %d results cut", len(ts), wrong, bad, cut)
}

func sqlShown(st agent.Step) int {
	n, _ := st.Info[env.InfoRowsShown].(int)
	return n
}

func tailLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

type answerChatter string

func (a answerChatter) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Text: string(a)}, nil
}

// TestGoldErrorIsReported: a task whose gold does not run (WikiSQL's
// pseudo-SQL) scores an empty answer 0, not InterCode's 1, and the episode
// says why, so runs warn.
func TestGoldErrorIsReported(t *testing.T) {
	task := tasks(t, "sql_tasks.jsonl")[0]
	task.Gold = "SELECT name FROM item WHERE School/Club_Team = Butler CC (KS)"
	e, err := env.Open(context.Background(), "sql", sandbox(t), env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := agent.New(agent.Options{Strategy: agent.TryAgain, Turns: 1, Model: "m"}, answerChatter("```sql\nSELECT name FROM item WHERE price > 1000\n```"))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := a.Run(context.Background(), e, task)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Success || ep.GoldError == "" {
		t.Fatalf("success %v, gold error %q; want a failure that names the gold's error", ep.Success, ep.GoldError)
	}
	if w := agent.GoldErrorWarning([]agent.Episode{ep, {}}); !strings.Contains(w, "1 of 2 tasks' golds do not run") || !strings.Contains(w, task.ID) {
		t.Errorf("warning %q", w)
	}
}
