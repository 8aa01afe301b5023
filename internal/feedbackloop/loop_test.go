package feedbackloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// execTurns returns the execution turns of d.
func execTurns(d schema.Dialogue) []schema.Message {
	var out []schema.Message
	for _, m := range d.Messages {
		if m.Role == schema.RoleExecution {
			out = append(out, m)
		}
	}
	return out
}

func TestNameErrorThenFixWithJudgeModel(t *testing.T) {
	ex := sandbox(t, "")
	var judged []string
	srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "writer":
			if call.AssistantTurns() == 0 {
				return llmtest.Reply{Text: "I will define a total and print it.\n\n" + block("total = 40 + 2\nprint(totl)")}
			}
			return llmtest.Reply{Text: "The name was misspelled.\n\n" + block("print(total)")}
		case "judge":
			judged = append(judged, call.LastUser())
			return llmtest.Reply{Text: `{"correct": true, "reason": "it prints 42"}`}
		}
		t.Errorf("unexpected request: %q", call.LastUser())
		return llmtest.Reply{Text: "?"}
	}, nil)
	s, err := New(Options{FeedbackRounds: 0}, c, c, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Task{ID: "q1", Turns: []Turn{{Text: "Add 40 and 2 and print the total."}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed {
		t.Fatalf("got not passed (%s), want passed; labels %v", res.Reason, res.Dialogue.Labels)
	}
	ex1 := execTurns(res.Dialogue)
	if len(ex1) != 2 {
		t.Fatalf("got %d execution turns, want 2", len(ex1))
	}
	first := ex1[0]
	for _, want := range []string{"Traceback (most recent call last)", "NameError: name 'totl' is not defined"} {
		if !strings.Contains(first.Content, want) {
			t.Errorf("first execution turn %q lacks %q", first.Content, want)
		}
	}
	if first.Exec == nil || first.Exec.Exception != "NameError" || first.Exec.ExitCode == 0 || first.Exec.Driver == "" || first.Exec.Code != "total = 40 + 2\nprint(totl)" {
		t.Errorf("first execution record = %+v, want NameError with driver and the cell's code", first.Exec)
	}
	if first.Exec != nil && first.Exec.Stderr == "" {
		t.Errorf("first execution record has no stderr")
	}
	// The session keeps state: the second cell prints the first cell's total.
	if got := ex1[1].Content; got != "42" {
		t.Errorf("second execution turn = %q, want 42 (state kept across cells)", got)
	}
	// The writer's second request carried the real traceback.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d model calls, want 3 (writer, writer, judge)", len(reqs))
	}
	if last := reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1].Content; !strings.HasPrefix(last, schema.ExecutionPrefix) || !strings.Contains(last, "NameError") {
		t.Errorf("writer's fix request ends with %q, want the execution result with the NameError", last)
	}
	if len(judged) != 1 || !strings.Contains(judged[0], "42") {
		t.Errorf("judge saw %q, want one request showing the real output 42", judged)
	}
	d := res.Dialogue
	if got, want := d.Labels["outcomes"], "1=NameError 2=pass"; got != want {
		t.Errorf("outcomes label = %q, want %q", got, want)
	}
	if d.Labels["judge"] != "model" || d.Labels["judge_reason"] != "it prints 42" || d.Method != "execution-feedback" {
		t.Errorf("labels %v method %q, want judge=model with the reason, execution-feedback", d.Labels, d.Method)
	}
	roles := []string{}
	for _, m := range d.Messages {
		roles = append(roles, m.Role)
	}
	if got, want := strings.Join(roles, ","), "user,assistant,execution,assistant,execution,assistant"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("dialogue does not validate: %v", err)
	}
}

// mbppLike is a small problem in MBPP form.
var mbppLike = schema.Problem{
	Query:    schema.Query{ID: "p1", Text: "Write a function to add two numbers."},
	Solution: "def add(a, b):\n    return a + b",
	Tests:    []string{"assert add(1, 2) == 3", "assert add(-1, 1) == 0"},
}

func TestTestsJudgeNameErrorThenPass(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if llmtest.Role(call) != "writer" {
			t.Errorf("unexpected %s request", llmtest.Role(call))
		}
		if call.AssistantTurns() == 0 {
			return llmtest.Reply{Text: "Plan: return the sum.\n\n" + block("def add(a, b):\n    return a + c")}
		}
		return llmtest.Reply{Text: "`c` is undefined; it should be `b`.\n\n" + block("def add(a, b):\n    return a + b")}
	}, nil)
	s, err := New(Options{FeedbackRounds: 0}, c, nil, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	task, err := s.TaskFromProblem(mbppLike)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(task.Turns[0].Text, "assert add(1, 2) == 3") {
		t.Errorf("task text %q does not show a test", task.Turns[0].Text)
	}
	res, err := s.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	ex1 := execTurns(res.Dialogue)
	if !res.Passed || len(ex1) != 2 {
		t.Fatalf("passed=%v with %d execution turns, want passed with 2", res.Passed, len(ex1))
	}
	if !strings.Contains(ex1[0].Content, "NameError: name 'c' is not defined") || !strings.Contains(ex1[0].Content, "Traceback") {
		t.Errorf("first feedback turn %q lacks the real NameError traceback", ex1[0].Content)
	}
	if e := ex1[0].Exec; e == nil || e.Passed == nil || *e.Passed || e.Exception != "NameError" {
		t.Errorf("first execution record %+v, want failed tests with NameError", e)
	}
	if e := ex1[1].Exec; e == nil || e.Passed == nil || !*e.Passed || !strings.Contains(ex1[1].Content, "All 2 tests passed") {
		t.Errorf("second execution turn %q record %+v, want all tests passed", ex1[1].Content, e)
	}
	if got := res.Dialogue.Messages[len(res.Dialogue.Messages)-1].Content; !strings.Contains(got, "2") || !strings.Contains(got, "test") || !strings.Contains(got, "`add`") {
		t.Errorf("closing turn %q, want it to mention the 2 tests and `add`", got)
	}
}

func TestNeverConvergesStopsAtLimit(t *testing.T) {
	ex := sandbox(t, "")
	for _, limit := range []int{1, 3} {
		srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
			return llmtest.Reply{Text: "Try this.\n\n" + block("def add(a, b):\n    return a - b")}
		}, nil)
		res := runMBPP(t, Options{MaxIterations: limit, FeedbackRounds: 1}, c, nil, c, ex)
		if res.Passed || res.Dialogue.Labels["final_status"] != "fail" {
			t.Errorf("limit %d: passed=%v status %q, want a failed dialogue", limit, res.Passed, res.Dialogue.Labels["final_status"])
		}
		if got := len(execTurns(res.Dialogue)); got != limit {
			t.Errorf("limit %d: got %d runs, want %d", limit, got, limit)
		}
		if got := srv.Calls("/v1/chat/completions"); got != limit {
			t.Errorf("limit %d: got %d model calls, want %d (no feedback on failing code)", limit, got, limit)
		}
		if !strings.Contains(res.Dialogue.Labels["outcomes"], "=wrong_answer") {
			t.Errorf("limit %d: outcomes %q, want wrong_answer", limit, res.Dialogue.Labels["outcomes"])
		}
	}
}

func TestTimeoutFeedbackTurn(t *testing.T) {
	// A generous wall cap: at load 30 the default (4x + 10 s) can end a
	// 1 CPU-second burn before its CPU time does, and the test wants cpu.
	ex := sandbox(t, "wall=5m")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "judge":
			return llmtest.Reply{Text: `{"correct": true, "reason": "done"}`}
		}
		if call.AssistantTurns() == 0 {
			return llmtest.Reply{Text: "Count forever.\n\n" + block("n = 0\nwhile True:\n    n += 1")}
		}
		return llmtest.Reply{Text: "The loop never ended; bound it.\n\n" + block("n = sum(range(10))\nprint(n)")}
	}, nil)
	s, err := New(Options{FeedbackRounds: 0, Timeout: time.Second}, c, c, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Task{ID: "loop", Turns: []Turn{{Text: "Sum 0..9."}}})
	if err != nil {
		t.Fatal(err)
	}
	ex1 := execTurns(res.Dialogue)
	if len(ex1) != 2 || !res.Passed {
		t.Fatalf("got %d runs passed=%v, want 2 runs and passed", len(ex1), res.Passed)
	}
	if e := ex1[0].Exec; e == nil || !e.TimedOut || e.TimeoutMS != 1000 || e.TimeLimit != executors.TimeLimitCPU {
		t.Errorf("first record %+v, want timed out with a 1000 ms limit, of CPU time", e)
	}
	if !strings.Contains(ex1[0].Content, "timed out after 1s") {
		t.Errorf("timeout turn %q does not say it timed out", ex1[0].Content)
	}
	if ex1[1].Content != "45" {
		t.Errorf("second run printed %q, want 45", ex1[1].Content)
	}
	if got := res.Dialogue.Labels["outcomes"]; got != "1=timeout 2=pass" {
		t.Errorf("outcomes %q, want 1=timeout 2=pass", got)
	}
}

func TestTimeoutWithTests(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if call.AssistantTurns() == 0 {
			return llmtest.Reply{Text: block("def add(a, b):\n    while True:\n        pass")}
		}
		return llmtest.Reply{Text: block("def add(a, b):\n    return a + b")}
	}, nil)
	res := runMBPP(t, Options{FeedbackRounds: 0, Timeout: 2 * time.Second}, c, nil, nil, ex)
	ex1 := execTurns(res.Dialogue)
	if len(ex1) != 2 || !res.Passed {
		t.Fatalf("got %d runs passed=%v, want 2 and passed", len(ex1), res.Passed)
	}
	if !strings.Contains(strings.ToLower(ex1[0].Content), "timed out") {
		t.Errorf("first feedback turn %q does not report the timeout", ex1[0].Content)
	}
	if got := res.Dialogue.Labels["outcomes"]; got != "1=timeout 2=pass" {
		t.Errorf("outcomes %q, want 1=timeout 2=pass", got)
	}
}

func TestHumanFeedbackRounds(t *testing.T) {
	ex := sandbox(t, "")
	for _, tc := range []struct {
		name       string
		oracle     float64
		wantOracle bool
	}{{"oracle", 1, true}, {"no-oracle", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var fbPrompts []string
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "feedback":
					fbPrompts = append(fbPrompts, call.LastUser())
					return llmtest.Reply{Text: `{"met": ["functionality"], "missed": ["security"], "feedback": "Please check that both arguments are numbers."}`}
				case "writer":
					if call.AssistantTurns() == 0 {
						return llmtest.Reply{Text: block("def add(a, b):\n    return a + b")}
					}
					if !requestHas(call, "Please check that both arguments are numbers.") {
						t.Errorf("writer revision request lacks the feedback")
					}
					round := 0
					for _, m := range call.Request.Messages {
						if m.Content == "Please check that both arguments are numbers." {
							round++
						}
					}
					return llmtest.Reply{Text: "Added a check.\n\n" + block(fmt.Sprintf("def add(a, b):\n    if not all(isinstance(x, (int, float)) for x in (a, b)):\n        raise TypeError('numbers only (check %d)')\n    return a + b", round))}
				}
				t.Errorf("unexpected %s request", llmtest.Role(call))
				return llmtest.Reply{}
			}, nil)
			res := runMBPP(t, Options{FeedbackRounds: 2, Oracle: tc.oracle, Categories: map[string]float64{"security": 1}}, c, nil, c, ex)
			if !res.Passed {
				t.Fatalf("got failed (%s), want passed", res.Reason)
			}
			var fbs []schema.Message
			for _, m := range res.Dialogue.Messages {
				if m.Feedback != nil {
					fbs = append(fbs, m)
				}
			}
			if len(fbs) != 2 {
				t.Fatalf("got %d feedback turns, want 2", len(fbs))
			}
			for _, m := range fbs {
				if m.Role != schema.RoleUser || m.Feedback.Category != "security" || m.Feedback.Oracle != tc.wantOracle {
					t.Errorf("feedback turn %+v, want a user turn with category security, oracle %v", m.Feedback, tc.wantOracle)
				}
				var body feedbackAnswer
				if err := json.Unmarshal(m.Feedback.Body, &body); err != nil || len(body.Missed) != 1 || body.Missed[0] != "security" {
					t.Errorf("feedback body %s, want the model's met/missed JSON", m.Feedback.Body)
				}
			}
			for _, p := range fbPrompts {
				if strings.Contains(p, "A reference solution") != tc.wantOracle {
					t.Errorf("oracle %v: feedback prompt %q", tc.wantOracle, p)
				}
				if !strings.Contains(p, "Aim your feedback at this goal: security") || !strings.Contains(p, "All 2 tests passed") {
					t.Errorf("feedback prompt lacks the category or the last run: %q", p)
				}
			}
			if got := res.Dialogue.Labels["outcomes"]; got != "1=pass fb1.1=pass fb2.1=pass" {
				t.Errorf("outcomes %q, want 1=pass fb1.1=pass fb2.1=pass", got)
			}
			if res.Dialogue.Method != "human-feedback" || res.Dialogue.Labels["feedback_categories"] != "security,security" {
				t.Errorf("method %q labels %v", res.Dialogue.Method, res.Dialogue.Labels)
			}
		})
	}
}

func TestCategoryDrawBalance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights map[string]float64
	}{
		{"uniform", nil},
		{"skewed", map[string]float64{"bugs": 3, "clarity": 1}},
	} {
		o := Options{Categories: tc.weights}
		w, err := o.categoryWeights()
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, x := range w {
			total += x
		}
		const n = 20000
		counts := make([]int, len(w))
		for i := range n {
			counts[pick(w, unit(strings.Repeat("k", i%7)+string(rune(i))))]++
		}
		for i, c := range counts {
			want := float64(n) * w[i] / total
			if d := float64(c) - want; d > 0.1*float64(n)/float64(len(w)) || d < -0.1*float64(n)/float64(len(w)) {
				t.Errorf("%s: category %s drawn %d times, want about %.0f", tc.name, schema.FeedbackCategories[i], c, want)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", DefaultOptions, true},
		{"bad failed", Options{Failed: "ignore"}, false},
		{"bad oracle", Options{Oracle: 2}, false},
		{"unknown category", Options{Categories: map[string]float64{"speed": 1}}, false},
		{"zero weights", Options{Categories: map[string]float64{"bugs": 0}}, false},
		{"unknown prompt", Options{Prompts: map[string]string{"nope": "x"}}, false},
		{"bad language", Options{Language: "cobol"}, false},
	} {
		err := tc.o.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: got err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestRenderResultTrims(t *testing.T) {
	long := strings.Repeat("line of output\n", 500)
	got := trimMiddle(strings.TrimRight(long, "\n"), 300)
	if len(got) > 400 || !strings.Contains(got, "bytes cut ...]") || !strings.HasPrefix(got, "line of output") || !strings.HasSuffix(got, "line of output") {
		t.Errorf("trimMiddle gave %d bytes: %q", len(got), got)
	}
}
