package feedbackloop

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// TestPackedDialogue answers a packed group's requests in order in one
// session: the second request's code uses what the first one defined.
func TestPackedDialogue(t *testing.T) {
	ex := sandbox(t, "")
	packed := schema.Dialogue{ID: "pack-1", Sources: []string{"q1", "q2"}, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Define a list of the squares of 1..5."},
		{Role: schema.RoleUser, Content: "Now print their sum."},
	}}
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if llmtest.Role(call) == "judge" {
			return llmtest.Reply{Text: `{"correct": true, "reason": "fine"}`}
		}
		if strings.Contains(call.LastUser(), "print their sum") {
			return llmtest.Reply{Text: block("print(sum(squares))")}
		}
		return llmtest.Reply{Text: block("squares = [i * i for i in range(1, 6)]\nsquares")}
	}, nil)
	s, err := New(Options{FeedbackRounds: 0}, c, c, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	task, err := TaskFromDialogue(packed)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	ex1 := execTurns(res.Dialogue)
	if !res.Passed || len(ex1) != 2 {
		t.Fatalf("passed %v with %d runs, want passed with 2", res.Passed, len(ex1))
	}
	if ex1[0].Content != "[1, 4, 9, 16, 25]" || ex1[1].Content != "55" {
		t.Errorf("runs showed %q and %q, want the list and 55 (state kept across requests)", ex1[0].Content, ex1[1].Content)
	}
	if got := res.Dialogue.Labels["outcomes"]; got != "1=pass t2.1=pass" {
		t.Errorf("outcomes %q, want 1=pass t2.1=pass", got)
	}
	if strings.Join(res.Dialogue.Sources, ",") != "q1,q2" {
		t.Errorf("sources %v, want the packed queries", res.Dialogue.Sources)
	}
}

func TestFailedLabelPolicy(t *testing.T) {
	ex := sandbox(t, "")
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "No code this time, sorry."}
	}, nil)
	s, err := New(Options{FeedbackRounds: 0, Failed: FailedLabel}, c, nil, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	task, _ := s.TaskFromProblem(mbppLike)
	res, err := s.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Dialogue
	if res.Passed || d.Labels["final_status"] != "fail" || d.Labels["rejected"] == "" || d.Labels["outcomes"] != "1=no_code" {
		t.Errorf("passed %v labels %v, want a failed dialogue labelled rejected with outcome no_code", res.Passed, d.Labels)
	}
}
