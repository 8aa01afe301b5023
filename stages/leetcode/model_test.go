package leetcode

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

const preamble = "from typing import *\nfrom collections import *\n"

// problem is a small LeetCode-style problem: method name, operator and tags.
func problem(name, op string, tags ...string) schema.Problem {
	tj, _ := json.Marshal(tags)
	return schema.Problem{
		Query: schema.Query{ID: "LeetCode/" + name, Language: "python",
			Text:  "PROBLEM-" + strings.ToUpper(name) + ": given two integers a and b, return a " + op + " b.\nPlease complete the following python code precisely:\n```python\nclass Solution:\n    def " + name + "(self, a: int, b: int) -> int:\n```",
			Extra: map[string]json.RawMessage{"tags": tj}},
		Prompt:     preamble,
		Solution:   "class Solution:\n    def " + name + "(self, a: int, b: int) -> int:\n        return a " + op + " b\n",
		Tests:      []string{"def check(candidate):\n    assert candidate(a = 1, b = 2) == 1 " + op + " 2\n    assert candidate(a = 7, b = 3) == 7 " + op + " 3\n    assert candidate(a = 0, b = 5) == 0 " + op + " 5\n"},
		EntryPoint: "Solution()." + name,
	}
}

func problems() []schema.Problem {
	return []schema.Problem{problem("add", "+", "Math"), problem("mul", "*", "Math"), problem("sub", "-", "Math")}
}

// request is the latest user request of a call (not an execution result).
func request(c llmtest.Call) (req string, afterRun bool) {
	msgs := c.Request.Messages
	afterRun = strings.HasPrefix(msgs[len(msgs)-1].Content, strings.TrimSpace(schema.ExecutionPrefix))
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == openai.ChatMessageRoleUser && !strings.HasPrefix(m.Content, strings.TrimSpace(schema.ExecutionPrefix)) {
			return m.Content, afterRun
		}
	}
	return "", afterRun
}

func solution(name, op string) string {
	return "```python\nclass Solution:\n    def " + name + "(self, a: int, b: int) -> int:\n        return a " + op + " b\n```"
}

// script answers as a model would: the add problem wrong first (a - b),
// fixed after seeing the run; brute force with a loop; JavaScript on request.
func script(neverFix bool) llmtest.Script {
	ops := map[string]string{"add": "+", "mul": "*", "sub": "-"}
	return func(c llmtest.Call) llmtest.Reply {
		req, afterRun := request(c)
		switch {
		case strings.Contains(req, "in JavaScript"):
			return llmtest.Reply{Text: "Same approach:\n```javascript\nclass Solution { add(a, b) { return a + b; } }\n```"}
		case strings.Contains(req, "brute-force"):
			return llmtest.Reply{Text: "Counting up one step at a time, O(b):\n```python\nclass Solution:\n    def add(self, a: int, b: int) -> int:\n        r = a\n        for _ in range(b):\n            r += 1\n        return r\n```"}
		case strings.Contains(req, "optimal"):
			return llmtest.Reply{Text: "Use the + operator, O(1):\n" + solution("add", "+")}
		case strings.Contains(req, "PROBLEM-ALT"):
			return llmtest.Reply{Text: "In Python:\n" + solution("add", "+")}
		}
		for name, op := range ops {
			if strings.Contains(req, "PROBLEM-"+strings.ToUpper(name)) {
				if name == "add" && (!afterRun || neverFix) {
					return llmtest.Reply{Text: "First try:\n" + solution("add", "-")}
				}
				return llmtest.Reply{Text: "Here:\n" + solution(name, op)}
			}
		}
		return llmtest.Reply{Text: "I do not know."}
	}
}

func fakeModel(tb testing.TB, s llmtest.Script) *llm.Client {
	srv := llmtest.New(tb)
	srv.Script(s)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake-chat"}, MaxAttempts: 1, Concurrency: 8},
		llm.Options{HTTPClient: srv.Client()})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestModelChain(t *testing.T) {
	ex := sandbox(t)
	for _, tc := range []struct {
		name       string
		neverFix   bool
		wantChains int
	}{{"fixed after feedback", false, 1}, {"never fixed", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions
			o.Modes, o.Sizes, o.Floor = []string{ModeChains}, []int{3}, 0
			g := &Generator{Opts: o, Exec: ex, Embedder: embed.NewTFIDF(0), Chat: fakeModel(t, script(tc.neverFix))}
			out, err := g.Generate(context.Background(), problems())
			if err != nil {
				t.Fatal(err)
			}
			if out.Chains != tc.wantChains || len(out.Dialogues) != tc.wantChains || out.ChainsFailed != 1-tc.wantChains {
				t.Fatalf("got %d chains (%d failed), want %d", out.Chains, out.ChainsFailed, tc.wantChains)
			}
			if tc.wantChains == 0 {
				return
			}
			d := out.Dialogues[0]
			if d.Stage != "leetcode" || d.Method != "chain-model" || d.Labels["chain_length"] != "3" || d.Labels["final_status"] != "pass" {
				t.Errorf("got stage %s method %s labels %v", d.Stage, d.Method, d.Labels)
			}
			var runs []bool
			for _, m := range d.Messages {
				if m.Role == schema.RoleExecution {
					if m.Exec == nil || m.Exec.Passed == nil {
						t.Fatalf("execution turn without a test verdict: %q", m.Content)
					}
					runs = append(runs, *m.Exec.Passed)
				}
			}
			// add: wrong then fixed; then mul and sub (in chain order) pass.
			if len(runs) != 4 || runs[0] || !runs[1] || !runs[2] || !runs[3] {
				t.Errorf("got run verdicts %v, want [false true true true]", runs)
			}
			// Every final answer passes its problem's tests when re-run.
			byID := map[string]schema.Problem{}
			for _, p := range problems() {
				byID[p.ID] = p
			}
			codes := assistantCode(d)
			finals := []string{codes[1], codes[2], codes[3]} // codes[0] is the wrong first try
			for i, id := range d.Sources {
				v, err := harness.Judge(context.Background(), ex, byID[id], finals[i], harness.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !v.Passed {
					t.Errorf("%s: final answer fails on re-run:\n%s", id, v.Feedback)
				}
			}
		})
	}
}

func TestModelAlternatives(t *testing.T) {
	ex := sandbox(t)
	c := fakeModel(t, script(false))
	o := DefaultOptions
	o.Languages = []string{"javascript", "cpp"}
	mg, err := NewModelGen(c, ex, o)
	if err != nil {
		t.Fatal(err)
	}
	p := problem("add", "+")
	p.Text = strings.Replace(p.Text, "PROBLEM-ADD", "PROBLEM-ALT", 1) // the script's brute/optimal/JS branches answer
	t.Run("complexity", func(t *testing.T) {
		d, passed, err := mg.Alternative(context.Background(), p, AltComplexity)
		if err != nil || !passed {
			t.Fatalf("got passed=%v err=%v labels %v", passed, err, d.Labels)
		}
		var verdicts []bool
		for _, m := range d.Messages {
			if m.Role == schema.RoleExecution {
				verdicts = append(verdicts, *m.Exec.Passed)
			}
		}
		codes := assistantCode(d)
		if len(verdicts) != 2 || !verdicts[0] || !verdicts[1] || len(codes) != 2 || !strings.Contains(codes[0], "for _ in range(b)") {
			t.Errorf("got verdicts %v and codes %q, want a passing brute force loop then a passing optimal solution", verdicts, codes)
		}
		if d.Method != "alternatives-complexity" || d.Labels["checked_languages"] != "python" {
			t.Errorf("got method %s labels %v", d.Method, d.Labels)
		}
	})
	t.Run("languages", func(t *testing.T) {
		d, passed, err := mg.Alternative(context.Background(), p, AltLanguages)
		if err != nil || !passed {
			t.Fatalf("got passed=%v err=%v", passed, err)
		}
		n := len(d.Messages)
		answer, run := d.Messages[n-2], d.Messages[n-1]
		if answer.Role != schema.RoleAssistant || !strings.Contains(answer.Content, "```javascript") {
			t.Errorf("got turn %+v, want the JavaScript answer", answer)
		}
		if run.Role != schema.RoleExecution || run.Exec == nil || run.Exec.Language != "javascript" || run.Exec.Passed == nil || !*run.Exec.Passed {
			t.Fatalf("got %+v, want the JavaScript answer judged in JavaScript and passing", run)
		}
		if !strings.Contains(run.Exec.Code, "assert.deepStrictEqual(new Solution().add(7, 3), 7 + 3);") {
			t.Errorf("the JavaScript judge does not hold the translated tests:\n%s", run.Exec.Code)
		}
		if d.Labels["checked_languages"] != "python,javascript" || d.Labels["missing_languages"] != "cpp" || d.Labels["rejected"] != "" {
			t.Errorf("got labels %v, want javascript checked and cpp missing (the model gave no C++ block)", d.Labels)
		}
	})
}

func items(t *testing.T, ps []schema.Problem, extra ...pipeline.Item) iter.Seq2[pipeline.Item, error] {
	var its []pipeline.Item
	for _, p := range ps {
		it, err := pipeline.ProblemItem(p)
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	its = append(its, extra...)
	return func(yield func(pipeline.Item, error) bool) {
		for _, it := range its {
			if !yield(it, nil) {
				return
			}
		}
	}
}

// TestStageWithoutModel runs the registered stage's All over problems and
// a query: chains from references, the query passed through, alternatives
// reported as skipped in the stats and the log.
func TestStageWithoutModel(t *testing.T) {
	ex := sandbox(t)
	var logs bytes.Buffer
	stats := pipeline.NewStats()
	svc := &pipeline.Services{Name: "leetcode", Stats: stats, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Executor: func(context.Context) (executors.Executor, error) { return ex, nil }}
	o := DefaultOptions
	o.Sizes, o.Floor = []int{2}, 0
	st, err := newStage(o, svc)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := pipeline.QueryItem(schema.Query{ID: "q1", Text: "hello"})
	broken := problem("div", "//")
	broken.Solution = strings.Replace(broken.Solution, "a // b", "a % b", 1) // fails its own tests: never used
	var out []pipeline.Item
	err = st.All(context.Background(), items(t, append(problems(), broken, problem("pow", "**")), q), func(it pipeline.Item) error {
		out = append(out, it)
		st.Observe(it)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, it := range out {
		kinds[it.Kind]++
		if it.Kind == pipeline.KindDialogue && strings.Contains(string(it.Data), "LeetCode/div") {
			t.Error("a problem whose reference fails was used")
		}
	}
	if kinds[pipeline.KindQuery] != 1 || kinds[pipeline.KindDialogue] != 2 || kinds[pipeline.KindProblem] != 0 {
		t.Errorf("got output kinds %v, want 1 query and 2 chains of 2 (4 good problems), no problems", kinds)
	}
	vals, _ := stats.Snapshot()
	for k, want := range map[string]float64{"problems/input": 5, "problems/reference_failed": 1, "chains/length/2": 2,
		"runs/judged": 4, "runs/passed": 4, "alternatives/skipped_no_model": 1, "dialogues/chain-reference": 2} {
		if vals[k] != want {
			t.Errorf("stats %s: got %v, want %v (all: %v)", k, vals[k], want, vals)
		}
	}
	if !strings.Contains(logs.String(), "alternatives skipped, no model configured") {
		t.Errorf("got log %q, want it to say alternatives were skipped", logs.String())
	}
}
