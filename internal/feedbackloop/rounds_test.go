package feedbackloop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// rejections returns the failing checks of res as "gate=reason".
func rejections(res Result) []string {
	var out []string
	for _, c := range res.Checks {
		if !c.Verdict.OK() {
			out = append(out, c.Gate+"="+c.Verdict.Reason)
			if c.Verdict.Detail == "" {
				out = append(out, "(no detail)")
			}
		}
	}
	return out
}

func userTurns(d schema.Dialogue) []string {
	var out []string
	for _, m := range d.Messages {
		if m.Role == schema.RoleUser {
			out = append(out, m.Content)
		}
	}
	return out
}

// A feedback answer aimed at the wrong category gets a repair prompt that
// restates the exact JSON form; when the repairs do not parse either, the
// round is dropped and counted with the rejected text, and the dialogue,
// whose first answer passed, is kept.
func TestFeedbackRoundDroppedNotDialogue(t *testing.T) {
	ex := sandbox(t, "")
	var mu sync.Mutex
	var fbReqs [][]string
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "feedback":
			var msgs []string
			for _, m := range call.Request.Messages {
				msgs = append(msgs, m.Content)
			}
			mu.Lock()
			fbReqs = append(fbReqs, msgs)
			mu.Unlock()
			if len(msgs) == 1 {
				return llmtest.Reply{Text: `{"category": "clarity", "met": [], "missed": ["clarity"], "feedback": "Add a docstring."}`}
			}
			return llmtest.Reply{Text: "Sure, my feedback: add a docstring {category: security"}
		case "writer":
			return sumAnswer
		}
		t.Errorf("unexpected %s request", llmtest.Role(call))
		return llmtest.Reply{}
	}, nil)
	res := runMBPP(t, Options{FeedbackRounds: 1, Categories: map[string]float64{"security": 1}}, c, nil, c, ex)
	if !res.Passed || len(userTurns(res.Dialogue)) != 1 {
		t.Fatalf("passed=%v user turns %q, want a passing dialogue without the feedback turn", res.Passed, userTurns(res.Dialogue))
	}
	if got := strings.Join(rejections(res), " "); got != "feedback_round=unreadable" {
		t.Errorf("rejections %q, want feedback_round=unreadable with its text", got)
	}
	if got := res.Dialogue.Labels[LabelRejected]; got != "fb1=unreadable" {
		t.Errorf("label %s = %q, want fb1=unreadable", LabelRejected, got)
	}
	if len(fbReqs) != 1+repairs {
		t.Fatalf("got %d feedback requests, want %d (one and its repairs)", len(fbReqs), 1+repairs)
	}
	for i, msgs := range fbReqs[1:] {
		repair := msgs[len(msgs)-1]
		for _, want := range []string{`{"category": "security", "met": [`, `"feedback": "`, "nothing before or after it"} {
			if !strings.Contains(repair, want) {
				t.Errorf("repair %d %q lacks %q: it must restate the answer form", i+1, repair, want)
			}
		}
	}
	if !strings.Contains(fbReqs[1][2], `aimed at "clarity", but it must be aimed at "security"`) {
		t.Errorf("first repair %q does not say what was wrong", fbReqs[1][2])
	}
}

// A judge whose answer stays unreadable drops the round it judged; the
// dialogue keeps its first, judged answer.
func TestJudgeUnreadableDropsRound(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "judge":
			if strings.Contains(call.Request.Messages[0].Content, "The user then asked") {
				return llmtest.Reply{Text: "It looks correct to me."}
			}
			return llmtest.Reply{Text: `{"correct": true, "reason": "prints 42"}`}
		case "feedback":
			return llmtest.Reply{Text: `{"met": [], "missed": ["clarity"], "feedback": "Please print a label before the number."}`}
		case "writer":
			if call.AssistantTurns() == 0 {
				return llmtest.Reply{Text: "Add and print.\n\n" + block("print(40 + 2)")}
			}
			return llmtest.Reply{Text: "Now with a label.\n\n" + block("print('total:', 40 + 2)")}
		}
		return llmtest.Reply{}
	}, nil)
	s, err := New(Options{FeedbackRounds: 1}, c, c, c, ex)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), Task{ID: "q", Turns: []Turn{{Text: "Add 40 and 2 and print the total."}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || len(userTurns(res.Dialogue)) != 1 {
		t.Fatalf("passed=%v user turns %q, want the dialogue without the round", res.Passed, userTurns(res.Dialogue))
	}
	if got := strings.Join(rejections(res), " "); got != "judge_answer=unreadable" {
		t.Errorf("rejections %q, want judge_answer=unreadable", got)
	}
	if got := res.Dialogue.Labels["outcomes"]; got != "1=pass fb1.1=judge_unreadable" {
		t.Errorf("outcomes %q", got)
	}
	last := res.Dialogue.Messages[len(res.Dialogue.Messages)-1]
	if last.Role != schema.RoleAssistant || strings.Contains(last.Content, "label") {
		t.Errorf("dialogue ends with %+v, want the first turn's closing", last)
	}
}

// An unchanged revision is repaired; one that stays unchanged drops the
// round. A reply that thanks a program's output is repaired too.
func TestWriterRepairs(t *testing.T) {
	ex := sandbox(t, "")
	for _, tc := range []struct {
		name       string
		fixes      bool // the writer changes the code when told it did not
		wantOut    string
		wantReject string
	}{
		{"repaired", true, "1=wrong_answer 2=pass fb1.1=pass", ""},
		{"dropped", false, "1=wrong_answer 2=pass fb1.1=unchanged_revision", "feedback_round=unchanged_revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var writerReqs []string
			var mu sync.Mutex
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "feedback":
					return llmtest.Reply{Text: `{"met": [], "missed": ["clarity"], "feedback": "Please add a docstring to add."}`}
				case "writer":
					last := call.LastUser()
					mu.Lock()
					writerReqs = append(writerReqs, last)
					mu.Unlock()
					switch {
					case call.AssistantTurns() == 0:
						return llmtest.Reply{Text: "Subtract, I think.\n\n" + block("def add(a, b):\n    return a - b")}
					case strings.HasPrefix(last, "Execution result:"):
						return llmtest.Reply{Text: "You're right, thanks! Fixed.\n\n" + block("def add(a, b):\n    return a + b")}
					case strings.Contains(last, "program's output, not a person"):
						return llmtest.Reply{Text: "The test shows the difference instead of the sum, so the operator was wrong.\n\n" + block("def add(a, b):\n    return a + b")}
					case strings.Contains(last, "the code is the same as before") && tc.fixes:
						return llmtest.Reply{Text: "Added the docstring.\n\n" + block("def add(a, b):\n    \"\"\"Return a + b.\"\"\"\n    return a + b")}
					}
					return llmtest.Reply{Text: "Done.\n\n" + block("def add(a, b):\n    return a + b")}
				}
				return llmtest.Reply{}
			}, nil)
			res := runMBPP(t, Options{FeedbackRounds: 1}, c, nil, c, ex)
			if !res.Passed {
				t.Fatalf("failed: %s", res.Reason)
			}
			if got := res.Dialogue.Labels["outcomes"]; got != tc.wantOut {
				t.Errorf("outcomes %q, want %q", got, tc.wantOut)
			}
			if got := strings.Join(rejections(res), " "); got != tc.wantReject {
				t.Errorf("rejections %q, want %q", got, tc.wantReject)
			}
			for _, m := range res.Dialogue.Messages {
				if m.Role == schema.RoleAssistant && ThanksOutput(m.Content) {
					t.Errorf("assistant turn %q thanks a program's output", m.Content)
				}
			}
			repaired := 0
			for _, r := range writerReqs {
				if strings.Contains(r, "program's output, not a person") {
					repaired++
				}
			}
			if repaired != 1 {
				t.Errorf("%d thanks repairs, want 1", repaired)
			}
		})
	}
}

// A follow-up request is a new user turn answered with code that runs
// against the problem's tests again, then replied to in prose.
func TestFollowupRound(t *testing.T) {
	ex := sandbox(t, "")
	var fuPrompt string
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "followup":
			fuPrompt = call.LastUser()
			return llmtest.Reply{Text: `{"kind": "tests", "request": "Please add a few tests for add, including negative numbers."}`}
		case "writer":
			last := call.LastUser()
			switch {
			case strings.HasPrefix(last, "The run above is accepted") && call.AssistantTurns() == 1:
				return llmtest.Reply{Text: "Both tests pass: `add` returns the sum of its two arguments, which is all the task asks of it."}
			case strings.HasPrefix(last, "The run above is accepted"):
				return llmtest.Reply{Text: "The tests pass: `add` returns the sum of its two arguments, and the harness checked it on positive and negative numbers without a failure."}
			case call.AssistantTurns() == 0:
				return sumAnswer
			}
			return llmtest.Reply{Text: "Tests added below the function.\n\n" + block("def add(a, b):\n    return a + b\n\nassert add(-2, -3) == -5\nassert add(0, 0) == 0\nprint('tests passed')")}
		}
		t.Errorf("unexpected %s request", llmtest.Role(call))
		return llmtest.Reply{}
	}, nil)
	res := runMBPP(t, Options{Followups: 1, FollowupKinds: map[string]float64{"tests": 1}, Closing: ClosingModel}, c, nil, c, ex)
	d := res.Dialogue
	if !res.Passed || d.Labels["outcomes"] != "1=pass fu1.1=pass" || d.Labels[LabelFollowups] != "tests" {
		t.Fatalf("passed=%v labels %v, want fu1.1=pass and followups=tests", res.Passed, d.Labels)
	}
	var roles []string
	for _, m := range d.Messages {
		roles = append(roles, m.Role)
	}
	if got, want := strings.Join(roles, ","), "user,assistant,execution,assistant,user,assistant,execution,assistant"; got != want {
		t.Errorf("roles %s, want %s", got, want)
	}
	if d.Messages[4].Content != "Please add a few tests for add, including negative numbers." || d.Messages[4].Feedback != nil {
		t.Errorf("follow-up turn %+v, want the request as a plain user turn", d.Messages[4])
	}
	if e := d.Messages[6].Exec; e == nil || e.Passed == nil || !*e.Passed || !strings.Contains(e.Code, "assert add(-2, -3)") {
		t.Errorf("follow-up run %+v, want the new code passing the problem's tests", e)
	}
	if !strings.Contains(d.Messages[7].Content, "negative numbers") {
		t.Errorf("closing %q, want the writer's prose reply", d.Messages[7].Content)
	}
	if !strings.Contains(fuPrompt, "add tests:") || !strings.Contains(fuPrompt, "All 2 tests passed") {
		t.Errorf("follow-up prompt lacks the kind or the last run: %q", fuPrompt)
	}
}

// A prose reply to a run that keeps holding code falls back to the
// templated closing, counted under the closing gate.
func TestClosingFallsBackToTemplate(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if strings.HasPrefix(call.LastUser(), "The run above is accepted") || strings.HasPrefix(call.LastUser(), "Your reply could not be used") {
			return llmtest.Reply{Text: "Here it is again:\n\n" + block("def add(a, b):\n    return a + b")}
		}
		return sumAnswer
	}, nil)
	res := runMBPP(t, Options{Closing: ClosingModel}, c, nil, nil, ex)
	last := res.Dialogue.Messages[len(res.Dialogue.Messages)-1].Content
	if !res.Passed || !strings.Contains(last, "`add`") || strings.Contains(last, "```") {
		t.Errorf("passed=%v closing %q, want the templated closing", res.Passed, last)
	}
	if got := strings.Join(rejections(res), " "); got != "closing=code" {
		t.Errorf("rejections %q, want closing=code", got)
	}
}

// The templated closing of a tested run names the function the tests
// call, not a companion the example line also ran.
func TestTemplatedClosingNamesTheTestedFunction(t *testing.T) {
	ex := sandbox(t, "")
	const code = "def add(a, b):\n    return a + b\n\n\ndef add_all(cases):\n    return [add(*c) for c in cases]\n\n\nprint(add_all([(1, 2)]))"
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "Return the sum, with a companion for many pairs.\n\n" + block(code)}
	}, nil)
	res := runMBPP(t, Options{Closing: ClosingTemplate}, c, nil, nil, ex)
	last := res.Dialogue.Messages[len(res.Dialogue.Messages)-1].Content
	if !res.Passed || !strings.Contains(last, "`add`") || strings.Contains(last, "add_all") {
		t.Errorf("passed=%v closing %q, want it to name `add`, which the tests call", res.Passed, last)
	}
}

func TestRequestedLanguage(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"Write a SQL query to find the second highest salary.", "sql"},
		{"Create an HTML page with a form and a submit button.", "html"},
		{"Write a JavaScript function that reverses a string.", "javascript"},
		{"Write a Python function that prints an HTML table.", "python"},
		{"Write a bash script that counts the lines of every file.", "bash"},
		{"Implement a linked list in C++.", "cpp"},
		{"Write a Java program that sorts an array.", "java"},
		{"Write a function to find the maximum of two numbers.", ""},
		{"Style the header with CSS so it is centred.", "css"},
		{"Write a program in C that prints hello.", "c"},
		{"Explain the difference between concurrency and parallelism in code.", ""},
	} {
		if got := RequestedLanguage(tc.text); got != tc.want {
			t.Errorf("RequestedLanguage(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// A test-less query is answered and run in the language it asks for; a
// language the sandbox cannot run is labelled not executable and judged
// from the code, never run as Python.
func TestQueryLanguageHonoured(t *testing.T) {
	ex := sandbox(t, "")
	sts, err := executors.Languages(context.Background(), ex)
	if err != nil {
		t.Fatal(err)
	}
	hasNode := false
	for _, st := range sts {
		if st.Language == executors.JavaScript && st.Available {
			hasNode = true
		}
	}
	t.Logf("javascript runner in the sandbox: %v", hasNode)
	for _, tc := range []struct {
		name, text, fence, code string
		wantLang, wantOut       string
		runs                    bool
	}{
		{"sql", "Write a SQL query that returns the number 42 in a column named answer.", "sql", "SELECT 42 AS answer;", "sql", "42", true},
		{"html", "Create an HTML page with a heading that says Hello.", "html", "<!DOCTYPE html>\n<html><body><h1>Hello</h1></body></html>", "html", "", false},
		{"javascript", "Write a JavaScript snippet that prints the sum of 40 and 2.", "javascript", "console.log(40 + 2);", "javascript", "42", hasNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var judgePrompt string
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "judge":
					judgePrompt = call.LastUser()
					return llmtest.Reply{Text: `{"correct": true, "reason": "it does what was asked"}`}
				case "writer":
					if !strings.Contains(call.Request.Messages[0].Content, "```"+tc.wantLang) {
						t.Errorf("writer system prompt does not ask for %s: %q", tc.wantLang, call.Request.Messages[0].Content)
					}
					return llmtest.Reply{Text: "This does it.\n\n```" + tc.fence + "\n" + tc.code + "\n```"}
				}
				return llmtest.Reply{}
			}, nil)
			s, err := New(Options{}, c, c, nil, ex)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background(), Task{ID: tc.name, Turns: []Turn{{Text: tc.text}}})
			if err != nil {
				t.Fatal(err)
			}
			d := res.Dialogue
			if !res.Passed || d.Labels["language"] != tc.wantLang {
				t.Fatalf("passed=%v labels %v, want language %s", res.Passed, d.Labels, tc.wantLang)
			}
			runs := execTurns(d)
			if tc.runs {
				if len(runs) != 1 || runs[0].Exec == nil || runs[0].Exec.Language != tc.wantLang || !strings.Contains(runs[0].Content, tc.wantOut) {
					t.Fatalf("runs %+v, want one %s run printing %s", runs, tc.wantLang, tc.wantOut)
				}
				if d.Labels[LabelExecutable] != "" {
					t.Errorf("a run dialogue is labelled %v", d.Labels)
				}
				return
			}
			if len(runs) != 0 || d.Labels[LabelExecutable] != "false" || d.Labels[LabelNotExecutable] == "" {
				t.Fatalf("runs %d labels %v, want no run and executable=false with a reason", len(runs), d.Labels)
			}
			if !strings.Contains(judgePrompt, "The code was not run") || !strings.Contains(judgePrompt, "in the language it asks for ("+tc.wantLang+")") {
				t.Errorf("judge prompt %q, want it told the code did not run and the language asked for", judgePrompt)
			}
		})
	}
}

// A revision that fails and is then "fixed" back to the code before the
// round changed nothing: the round is dropped.
func TestRevisionFixedBackToOriginalDropped(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "feedback":
			return llmtest.Reply{Text: `{"met": [], "missed": ["security"], "feedback": "Please check that both arguments are numbers."}`}
		case "writer":
			switch {
			case call.AssistantTurns() == 0:
				return sumAnswer
			case strings.HasPrefix(call.LastUser(), "Execution result:"):
				return llmtest.Reply{Text: "The check used an undefined name; back to the plain sum.\n\n" + block("def add(a, b):\n    return a + b")}
			}
			return llmtest.Reply{Text: "Added a check.\n\n" + block("def add(a, b):\n    check_numbers(a, b)\n    return a + b")}
		}
		return llmtest.Reply{}
	}, nil)
	res := runMBPP(t, Options{FeedbackRounds: 1}, c, nil, c, ex)
	if !res.Passed || len(userTurns(res.Dialogue)) != 1 {
		t.Fatalf("passed=%v user turns %q, want the dialogue without the round", res.Passed, userTurns(res.Dialogue))
	}
	if got := strings.Join(rejections(res), " "); got != "feedback_round=unchanged_revision" {
		t.Errorf("rejections %q, want feedback_round=unchanged_revision", got)
	}
}

// On a test-judged turn the tests only show that a revision still works;
// the judge model decides whether it does what the user asked, and a
// revision that does not is dropped with its round.
func TestTestedRoundJudgedForTheRequest(t *testing.T) {
	ex := sandbox(t, "")
	for _, tc := range []struct {
		name      string
		addresses bool
		want      string
	}{{"met", true, ""}, {"not met", false, "feedback_round=request_not_met"}} {
		t.Run(tc.name, func(t *testing.T) {
			var judged []string
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "feedback":
					return llmtest.Reply{Text: `{"met": [], "missed": ["bugs"], "feedback": "Please reject arguments that are not numbers."}`}
				case "judge":
					judged = append(judged, call.LastUser())
					return llmtest.Reply{Text: fmt.Sprintf(`{"correct": %v, "reason": "checked the type guard"}`, tc.addresses)}
				case "writer":
					if call.AssistantTurns() == 0 {
						return sumAnswer
					}
					// A change of the code (a docstring alone is no answer to
					// this request: the round gate sends it back before any
					// judge reads it); whether it meets the request is the
					// judge's to say.
					return llmtest.Reply{Text: "The sum now has a name.\n\n" + block("def add(a, b):\n    total = a + b\n    return total")}
				}
				return llmtest.Reply{}
			}, nil)
			res := runMBPP(t, Options{FeedbackRounds: 1}, c, c, c, ex)
			if got := strings.Join(rejections(res), " "); got != tc.want || !res.Passed {
				t.Errorf("passed=%v rejections %q, want %q", res.Passed, got, tc.want)
			}
			if wantTurns := map[bool]int{true: 2, false: 1}[tc.addresses]; len(userTurns(res.Dialogue)) != wantTurns {
				t.Errorf("user turns %q, want %d", userTurns(res.Dialogue), wantTurns)
			}
			if len(judged) != 1 || !strings.Contains(judged[0], "The user then asked: Please reject arguments that are not numbers.") || !strings.Contains(judged[0], "All 2 tests passed") {
				t.Errorf("judge requests %q, want one with the request and the test run", judged)
			}
		})
	}
}

// TestClosingClaimsOnlyWhatRan: a closing may not claim tests where none
// ran, nor an output where the run printed nothing, nor a change in a
// round that kept the code as it was.
func TestClosingClaimsOnlyWhatRan(t *testing.T) {
	const printed = "[1, 4, 9]"
	for _, tc := range []struct {
		name, text, output string
		tests              int
		kept               bool
		want               string
		code               string
	}{
		{"tests ran and pass", "All 3 tests pass now: `squares` returns the squares of the numbers it is given, in order.", "All 3 tests passed.", 3, false, "", ""},
		{"no tests, claims them", "Everything passes now. `is_monotonic` returns the value the task asks for on every input.", printed, 0, false, "claims_unrun_tests", ""},
		{"no tests, checks above", "The run confirms it: `pos_count` gives the expected result on the checks above, in one pass.", printed, 0, false, "claims_unrun_tests", ""},
		{"own asserts printed", "All the tests pass: the asserts added after `pos_count` hold, and the run printed tests passed.", "tests passed", 0, false, "", ""},
		{"silent, claims output", "That run is clean: `is_samepatterns` produced the expected result without errors on its input.", SilentRun, 0, false, "claims_unseen_output", ""},
		{"silent, honest", "The code ran without errors and defines `is_monotonic`, which is true when a list never falls or never rises.", SilentRun, 0, false, "", ""},
		{"printed, output shown", "The output shows the squares of 1, 2 and 3, which is what `squares` computes from its argument.", printed, 0, false, "", ""},
		{"printed, stock claim of fit", "The output above is what `squares` gives for the example call. It returns the value the task describes, so it can be used directly from other code.", printed, 0, false, "filler", ""},
		{"tests ran, stock claim of fit", "That run is clean: `squares` produced the expected result without errors, which is what the checks compared.", "All 3 tests passed.", 3, false, "filler", ""},
		{"kept, says so", "The code was kept as it was in this round, and the run shows `add` still returns 3 for 1 and 2, as the task's example expects.", "All 2 tests passed.", 2, true, "", ""},
		{"kept, claims the change is in", "This run checks `add` as revised in answer 5: the change asked for is in, and the result is still the one the task describes.", "All 2 tests passed.", 2, true, "claims_unmade_change", ""},
		{"kept, claims an update", "I updated the function so it uses less memory; the run shows all 2 tests still pass on the examples.", "All 2 tests passed.", 2, true, "claims_unmade_change", ""},
		{"changed, the change is in", "This run checks `add` as revised in answer 5: the change asked for is in, and the result is still the one the task describes.", "All 2 tests passed.", 2, false, "", ""},
		{"one pass, recursive code", "The run confirms it: `fib` gives the expected result on the checks above. It works through its input once and returns the value the task describes.", "All 3 tests passed.", 3, false, "claims_one_pass",
			"def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)"},
		{"one pass, nested loops", "All 3 tests passed: `pairs` counts equal pairs in a single pass over the list.", "All 3 tests passed.", 3, false, "claims_one_pass",
			"def pairs(xs):\n    n = 0\n    for i in range(len(xs)):\n        for j in range(i):\n            n += xs[i] == xs[j]\n    return n"},
		{"one pass, one loop", "The run confirms it: `total` gives the expected result on the 3 tests. It works through its input once and returns the sum.", "All 3 tests passed.", 3, false, "",
			"def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s"},
		{"companion never called", "The output confirms that `pair_all` handles the request correctly.", "4", 0, false, "claims_uncalled",
			"def pair(a, n):\n    return n\n\nprint(pair([1, 2], 2))\n\ndef pair_all(cases):\n    return [pair(*c) for c in cases]"},
		{"companion called", "The output confirms that `pair_all` handles the request: it printed [2], the example's result in a list.", "4\n[2]", 0, false, "",
			"def pair(a, n):\n    return n\n\nprint(pair([1, 2], 2))\n\ndef pair_all(cases):\n    return [pair(*c) for c in cases]\n\nprint(pair_all([([1, 2], 2)]))"},
	} {
		var harness []string
		if m := defNameRe.FindStringSubmatch(tc.code); m != nil && tc.tests > 0 {
			harness = []string{m[1]} // the tests call the entry point
		}
		if got := closingVerdict(tc.text, tc.tests, tc.output, nil, tc.kept, tc.code, harness...).Reason; got != tc.want {
			t.Errorf("%s: reason %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A model closing that repeats an earlier reply of the dialogue word for
// word is sent back once; repeated again, the templated closing takes its
// place, in a phrasing the dialogue has not used.
func TestClosingRepeatingEarlierTurn(t *testing.T) {
	ex := sandbox(t, "")
	const rote = "The run confirms it: `add` gives the expected result on the checks above and returns the sum of its two arguments."
	for _, tc := range []struct {
		name   string
		varies bool
	}{{"varies when asked", true}, {"repeats again", false}} {
		t.Run(tc.name, func(t *testing.T) {
			sentBack := 0
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "feedback":
					return llmtest.Reply{Text: `{"met": [], "missed": ["readability"], "feedback": "Please give the arguments clearer names."}`}
				case "writer":
					last := call.LastUser()
					switch {
					case strings.HasPrefix(last, "Your reply could not be used: it repeats"):
						sentBack++
						if tc.varies {
							return llmtest.Reply{Text: "After the rename the run still passes both tests: `add` now reads `left + right`, and only the names changed since the earlier run."}
						}
						return llmtest.Reply{Text: rote}
					case strings.HasPrefix(last, "The run above is accepted"):
						return llmtest.Reply{Text: rote}
					case call.AssistantTurns() == 0:
						return sumAnswer
					}
					return llmtest.Reply{Text: "Renamed the arguments.\n\n" + block("def add(left, right):\n    return left + right")}
				}
				return llmtest.Reply{}
			}, nil)
			res := runMBPP(t, Options{FeedbackRounds: 1, Closing: ClosingModel}, c, nil, c, ex)
			if !res.Passed || len(userTurns(res.Dialogue)) != 2 {
				t.Fatalf("passed=%v user turns %q, want the round kept", res.Passed, userTurns(res.Dialogue))
			}
			said := map[string]int{}
			var closings []string
			for _, m := range res.Dialogue.Messages {
				if m.Role == schema.RoleAssistant {
					said[sameWords(m.Content)]++
					if !gates.HasCode(m.Content) {
						closings = append(closings, m.Content)
					}
				}
			}
			for text, n := range said {
				if n > 1 {
					t.Errorf("an assistant turn is said %d times: %q", n, text)
				}
			}
			if len(closings) != 2 || closings[0] != rote {
				t.Fatalf("closings %q, want the model's first and one more", closings)
			}
			if want := map[bool]string{true: "only the names changed"}[tc.varies]; want != "" && !strings.Contains(closings[1], want) {
				t.Errorf("second closing %q, want the model's varied one", closings[1])
			}
			if want := map[bool]int{true: 1, false: repairs}[tc.varies]; sentBack != want {
				t.Errorf("%d repair requests, want %d", sentBack, want)
			}
			repeats := 0
			for _, ch := range res.Checks {
				if ch.Gate == GateClosing && ch.Verdict.Reason == "repeats_earlier_turn" {
					repeats++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tc.varies]; repeats != want {
				t.Errorf("closing gate counted %d repeats, want %d", repeats, want)
			}
		})
	}
}

// A request the first revision does not meet (arguments documented by a
// docstring that names none of them; inputs "validated" by a docstring and
// a claim) is sent back with a repair that says what is missing, then the
// round is dropped; a repair that meets it keeps the round.
func TestRevisionMustMeetTheRequest(t *testing.T) {
	ex := sandbox(t, "")
	for _, rc := range []struct {
		name, feedback                          string
		bad, repairSays, good, goodMark, reason string
	}{
		{name: "document the arguments",
			feedback:   "It passes, though I want you to document the arguments of `add` and their types.",
			bad:        "I added a docstring.\n\n" + block("def add(a, b):\n    \"\"\"Return the task's result; the arguments are left unmodified.\"\"\"\n    return a + b"),
			repairSays: "names none of a, b",
			good:       "The docstring now names each argument with its type.\n\n" + block("def add(a, b):\n    \"\"\"Add two numbers.\n\n    a (int): the first addend.\n    b (int): the second addend.\n    \"\"\"\n    return a + b"),
			goodMark:   "a (int)", reason: "params_undocumented"},
		{name: "validate the arguments",
			feedback:   "It works, but please validate the arguments `add` receives before using them.",
			bad:        "No code change is needed: `add` already validates its inputs. I added a docstring.\n\n" + block("def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b"),
			repairSays: "checks none of them",
			good:       "`add` now raises a TypeError for an argument that is not a number.\n\n" + block("def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    for name, v in ((\"a\", a), (\"b\", b)):\n        if not isinstance(v, (int, float)):\n            raise TypeError(f\"{name} must be a number\")\n    return a + b"),
			goodMark:   "raise TypeError", reason: "inputs_unchecked"},
		{name: "a clearer layout met by an unasked docstring",
			feedback:   "It passes, though I want you to use a clearer layout for the condition in `add`.",
			bad:        "I added to `add` a docstring that states what it computes, as you asked. No code change is needed for the rest: the code already does what the task asks.\n\n" + block("def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b"),
			repairSays: "its reason is not about what the user asked",
			good:       "No change is needed for the layout: `add` has no condition to lay out.\n\n" + block("def add(a, b):\n    return a + b"),
			goodMark:   "for the layout", reason: "no_change_off_request"},
		{name: "less memory met by a reason about speed",
			feedback:   "Could you keep the memory `add` uses small for long inputs?",
			bad:        "No code change is needed for speed: it already makes a single pass over the input.\n\n" + block("def add(a, b):\n    return a + b"),
			repairSays: "its reason is not about what the user asked",
			good:       "No change is needed for memory: `add` keeps no list, only its two arguments and their sum.\n\n" + block("def add(a, b):\n    return a + b"),
			goodMark:   "for memory", reason: "no_change_off_request"},
		{name: "speed met by a fake speed-up",
			feedback:   "Could you make sure `add` still works quickly on much larger inputs?",
			bad:        "This version is faster: it keeps the sum in a variable before returning it.\n\n" + block("def add(a, b):\n    total = a + b\n    return total"),
			repairSays: "do the same work as before",
			good:       "No change is needed: `add` does one addition, so it works just as quickly on much larger inputs.\n\n" + block("def add(a, b):\n    return a + b"),
			goodMark:   "just as quickly", reason: "no_speedup"},
	} {
		for _, fixed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/fixed=%v", rc.name, fixed), func(t *testing.T) {
				_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
					switch llmtest.Role(call) {
					case "feedback":
						fb, _ := json.Marshal(map[string]any{"met": []string{}, "missed": []string{"the request"}, "feedback": rc.feedback})
						return llmtest.Reply{Text: string(fb)}
					case "writer":
						switch {
						case call.AssistantTurns() == 0:
							return sumAnswer
						case strings.Contains(call.LastUser(), rc.repairSays) && fixed:
							return llmtest.Reply{Text: rc.good}
						}
						return llmtest.Reply{Text: rc.bad}
					}
					return llmtest.Reply{}
				}, nil)
				res := runMBPP(t, Options{FeedbackRounds: 1}, c, nil, c, ex)
				want := ""
				if !fixed {
					want = "feedback_round=" + rc.reason
				}
				if got := strings.Join(rejections(res), " "); got != want || !res.Passed {
					t.Errorf("passed=%v rejections %q, want %q", res.Passed, got, want)
				}
				last := ""
				for _, m := range res.Dialogue.Messages {
					if m.Role == schema.RoleAssistant && gates.HasCode(m.Content) {
						last = m.Content
					}
				}
				if fixed != strings.Contains(last, rc.goodMark) {
					t.Errorf("last code %q, want the repaired code only when fixed", last)
				}
			})
		}
	}
}

// A revision that repeats an earlier answer word for word (the same "no
// change is needed" reply to a second request) loses its round.
func TestRevisionRepeatingEarlierAnswerDropped(t *testing.T) {
	ex := sandbox(t, "")
	const keep = "No code change is needed for speed: `add` already does one addition, so a faster version would have the same cost.\n\n"
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "feedback":
			return llmtest.Reply{Text: `{"met": [], "missed": ["efficiency"], "feedback": "Could you make it faster on large numbers?"}`}
		case "writer":
			if call.AssistantTurns() == 0 {
				return sumAnswer
			}
			return llmtest.Reply{Text: keep + block("def add(a, b):\n    return a + b")}
		}
		return llmtest.Reply{}
	}, nil)
	res := runMBPP(t, Options{FeedbackRounds: 2}, c, nil, c, ex)
	if !res.Passed || len(userTurns(res.Dialogue)) != 2 {
		t.Fatalf("passed=%v user turns %q, want the first round kept and the second dropped", res.Passed, userTurns(res.Dialogue))
	}
	if got := strings.Join(rejections(res), " "); got != "feedback_round=repeats_earlier_turn" {
		t.Errorf("rejections %q, want feedback_round=repeats_earlier_turn", got)
	}
}

// "Add tests" met by asserts that never call the code with inputs
// ("assert callable(add)"), or only with the task's own example, which
// has passed already, is sent back; still no such test, the follow-up
// loses its round.
func TestTestsFollowupCallsTheCode(t *testing.T) {
	ex := sandbox(t, "")
	const trivial, example = "assert callable(add)", "assert add(1, 2) == 3"
	for _, tc := range []struct {
		name  string
		tests string // the first answer's
		fixed bool
		want  string
	}{
		{"real tests after the repair", trivial, true, ""},
		{"never", trivial, false, "followup_round=no_behaviour_tests"},
		{"the task's example only, then real tests", example, true, ""},
		{"the task's example only", example, false, "followup_round=no_behaviour_tests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "followup":
					return llmtest.Reply{Text: `{"kind": "tests", "request": "Please add a few tests for add, including an edge case."}`}
				case "writer":
					switch {
					case call.AssistantTurns() == 0:
						return sumAnswer
					case strings.Contains(call.LastUser(), "no new test calls the code") && tc.fixed:
						return llmtest.Reply{Text: "Tests that call it.\n\n" + block("def add(a, b):\n    return a + b\n\nassert add(-2, -3) == -5\nassert add(0, 0) == 0\nprint('tests passed')")}
					}
					return llmtest.Reply{Text: "Tests added.\n\n" + block("def add(a, b):\n    return a + b\n\n"+tc.tests+"\nprint('tests passed')")}
				}
				return llmtest.Reply{}
			}, nil)
			res := runMBPP(t, Options{Followups: 1, FollowupKinds: map[string]float64{"tests": 1}}, c, nil, c, ex)
			if got := strings.Join(rejections(res), " "); got != tc.want || !res.Passed {
				t.Errorf("passed=%v rejections %q, want %q", res.Passed, got, tc.want)
			}
			if n := len(userTurns(res.Dialogue)); n != map[bool]int{true: 2, false: 1}[tc.fixed] {
				t.Errorf("%d user turns, want the follow-up kept only when fixed", n)
			}
		})
	}
}

// firstElement is a problem whose solution crashes on an empty list, for
// the tests of claims about empty input.
var firstElement = schema.Problem{Query: schema.Query{ID: "first", Text: "Write a function to return the first element of a list."},
	Solution: "def first(xs):\n    return xs[0]", Tests: []string{"assert first([3, 1]) == 3", "assert first(['a']) == 'a'"}, EntryPoint: "first"}

// "How does it handle an empty list?" answered "no change is needed" over
// code that crashes on one is caught by running the code on an empty list
// (outside the dialogue): the round is sent back, then dropped; a repair
// that raises a clear error on purpose, or returns a value, is kept.
func TestEmptyInputClaimIsRun(t *testing.T) {
	ex := sandbox(t, "")
	first := firstElement
	const claim = "No code change is needed: the same path already handles empty and single-element inputs. I added a docstring.\n\n"
	for _, tc := range []struct {
		name, repair string
		want         string
	}{
		{"never handled", "", "feedback_round=empty_input_crashes"},
		{"an explicit error after the repair", "def first(xs):\n    \"\"\"The first element; an empty list has none.\"\"\"\n    if not xs:\n        raise ValueError(\"xs is empty: it has no first element\")\n    return xs[0]", ""},
		{"a value after the repair", "def first(xs):\n    \"\"\"The first element, or None for an empty list.\"\"\"\n    return xs[0] if xs else None", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "feedback":
					return llmtest.Reply{Text: `{"met": [], "missed": ["functionality"], "feedback": "How does ` + "`first`" + ` handle an empty list? Please make that behaviour explicit."}`}
				case "judge":
					return llmtest.Reply{Text: `{"correct": true, "reason": "it does"}`}
				case "writer":
					switch {
					case call.AssistantTurns() == 0:
						return llmtest.Reply{Text: "Index the list.\n\n" + block(first.Solution)}
					case strings.Contains(call.LastUser(), "raises IndexError") && tc.repair != "":
						return llmtest.Reply{Text: "Empty input is now handled explicitly.\n\n" + block(tc.repair)}
					}
					return llmtest.Reply{Text: claim + block("def first(xs):\n    \"\"\"Return the first element.\"\"\"\n    return xs[0]")}
				}
				return llmtest.Reply{}
			}, nil)
			res := runTask(t, Options{FeedbackRounds: 1}, c, c, c, ex, func(s *Simulator) (Task, error) { return s.TaskFromProblem(first) })
			if got := strings.Join(rejections(res), " "); got != tc.want || !res.Passed {
				t.Errorf("passed=%v rejections %q, want %q", res.Passed, got, tc.want)
			}
			if tc.want != "" && !strings.Contains(res.Dialogue.Labels[LabelRejectedSample], "first([]) raises IndexError") {
				t.Errorf("rejected sample %q, want the probe's call and error", res.Dialogue.Labels[LabelRejectedSample])
			}
		})
	}
}

// TestUnaskedEdgeClaimIsRun: a first answer that says, unasked, that
// empty input is handled is run on one, and on a one-element input when
// the claim names one (and only then). A false claim is sent back; an
// answer that drops it or handles the input is kept, and one that keeps
// it has the claim cut out, the code kept. A true claim stays.
func TestUnaskedEdgeClaimIsRun(t *testing.T) {
	ex := sandbox(t, "")
	first := firstElement
	second := schema.Problem{Query: schema.Query{ID: "second", Text: "Write a function to return the second element of a list, or None for an empty list."},
		Solution: "def second(xs):\n    return xs[1] if xs else None", Tests: []string{"assert second([3, 1, 2]) == 1", "assert second([]) is None"}, EntryPoint: "second"}
	const (
		empty  = "Empty lists go through the same path, so they need no special branch."
		single = "Empty and single-element lists go through the same path, so they need no special branch."
	)
	handled := "def first(xs):\n    return xs[0] if xs else None"
	for _, tc := range []struct {
		name       string
		problem    schema.Problem
		claim      string
		code       string // the first answer's
		repaired   string // the answer after the repair; "" keeps the claim
		call       string // the failing call the repair must quote; "" when none is sent
		wantLabels map[string]string
		wantCode   string
	}{
		{"false, dropped after the repair", first, empty, first.Solution, "Index the list.\n\n" + block(first.Solution), "first([]) raises IndexError",
			map[string]string{LabelClaimsRepaired: "1"}, first.Solution},
		{"false, handled after the repair", first, empty, first.Solution, "Index the list; an empty list gives None.\n\n" + block(handled), "first([]) raises IndexError",
			map[string]string{LabelClaimsRepaired: "1"}, handled},
		{"false, kept: cut out", first, empty, first.Solution, "", "first([]) raises IndexError",
			map[string]string{LabelClaimsCut: "1"}, first.Solution},
		{"true: left alone", first, empty, handled, "", "", map[string]string{}, handled},
		{"names one-element input: run on one", second, single, second.Solution, "", "second([3]) raises IndexError",
			map[string]string{LabelClaimsCut: "1"}, second.Solution},
		{"names empty input only: not run on one", second, empty, second.Solution, "", "", map[string]string{}, second.Solution},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := false
			_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				switch llmtest.Role(call) {
				case "judge":
					return llmtest.Reply{Text: `{"correct": true, "reason": "it does"}`}
				case "writer":
					if strings.HasPrefix(call.LastUser(), "Your answer could not be used: it says") {
						sent = true
						if tc.call == "" || !strings.Contains(call.LastUser(), tc.call) {
							t.Errorf("repair %q, want one quoting %q", call.LastUser(), tc.call)
						}
						if tc.repaired != "" {
							return llmtest.Reply{Text: tc.repaired}
						}
					}
					if call.AssistantTurns() == 0 || strings.HasPrefix(call.LastUser(), "Your answer") {
						return llmtest.Reply{Text: "Index the list. " + tc.claim + "\n\n" + block(tc.code) + "\n\nThat is all."}
					}
					return llmtest.Reply{Text: "It works."}
				}
				return llmtest.Reply{}
			}, nil)
			p := tc.problem
			res := runTask(t, Options{}, c, c, c, ex, func(s *Simulator) (Task, error) { return s.TaskFromProblem(p) })
			if !res.Passed {
				t.Fatalf("not passed: %v", res.Reason)
			}
			if sent != (tc.call != "") {
				t.Errorf("sent back: %v, want %v", sent, tc.call != "")
			}
			for _, l := range []string{LabelClaimsRepaired, LabelClaimsCut} {
				if got := res.Dialogue.Labels[l]; got != tc.wantLabels[l] {
					t.Errorf("label %s = %q, want %q", l, got, tc.wantLabels[l])
				}
			}
			answer := res.Dialogue.Messages[1].Content
			wantClaim := tc.call == "" // a claim the runs bear out stays
			if got := strings.Contains(answer, tc.claim); got != wantClaim {
				t.Errorf("published first answer %q: has the claim %v, want %v", answer, got, wantClaim)
			}
			if !strings.Contains(answer, tc.wantCode) {
				t.Errorf("published first answer %q lacks the code %q", answer, tc.wantCode)
			}
		})
	}
}

// TestHarnessCalls: the functions a problem's tests call count as run;
// a companion defined last and named by no test does not.
func TestHarnessCalls(t *testing.T) {
	const code = "def maximum_Sum(list1):\n    return max(sum(x) for x in list1)\n\n\ndef maximum_Sum_all(cases):\n    return [maximum_Sum(*args) for args in cases]\n"
	turn := Turn{Problem: &schema.Problem{Tests: []string{"assert maximum_Sum([[1,2,3],[4,5,6]]) == 15"}}}
	got := harnessCalls(turn)
	if !slices.Contains(got, "maximum_Sum") || slices.Contains(got, "maximum_Sum_all") {
		t.Errorf("harnessCalls = %v, want maximum_Sum and not the companion", got)
	}
	claim := "The run shows both functions: `maximum_Sum` gives the example's result, and `maximum_Sum_all`, called on a list holding the example's arguments, returns a list holding that same result."
	if v := closingVerdict(claim, 1, "All 1 tests passed.", nil, false, code, got...); v.Reason != "claims_uncalled" {
		t.Errorf("closing verdict %v, want claims_uncalled", v)
	}
	if got := harnessCalls(Turn{Problem: &schema.Problem{}}); got != nil {
		t.Errorf("harnessCalls without tests = %v, want none", got)
	}
}

// TestRevisionSpeedClaims: a revision that says it is faster passes when
// its code does less work (a set for a repeated search), and fails when
// it does the same work in other words.
func TestRevisionSpeedClaims(t *testing.T) {
	const (
		before = "def common(a, b):\n    out = []\n    for x in a:\n        if x in b:\n            out.append(x)\n    return out"
		real   = "def common(a, b):\n    seen = set(b)\n    out = []\n    for x in a:\n        if x in seen:\n            out.append(x)\n    return out"
		fake   = "def common(a, b):\n    out = []\n    for item in a:\n        if item in b:\n            out.append(item)\n    return out"
		asked  = "Can you make `common` faster for very large inputs?"
	)
	for _, c := range []struct{ name, after, answer, want string }{
		{"a set for the search", real, "It is faster now: `b` becomes a set once, so each search takes constant time.", ""},
		{"renamed loop variable", fake, "This version is faster: the loop variable has a clearer name.", "no_speedup"},
		{"memory only, no speed claimed", fake, "The names are clearer now.", ""},
	} {
		if got := revisionVerdict(before, c.after, asked, c.answer, "optimize").Reason; got != c.want {
			t.Errorf("%s: reason %q, want %q", c.name, got, c.want)
		}
	}
}
