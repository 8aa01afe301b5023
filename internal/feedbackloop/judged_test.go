package feedbackloop

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// sumTask is a test-less task whose first answer runs cleanly and prints
// a wrong value; the second is right.
var sumTask = Task{ID: "q-sum", Turns: []Turn{{Text: "Write a function to find the sum of a list of numbers."}}}

const (
	sumWrong = "def total(xs):\n    return sum(xs) + 1\n\nprint(total([1, 2, 3]))"
	sumRight = "def total(xs):\n    return sum(xs)\n\nprint(total([1, 2, 3]))"
)

func sumWriter(call llmtest.Call) llmtest.Reply {
	if call.AssistantTurns() == 0 {
		return llmtest.Reply{Text: "`total` adds the numbers of the list.\n\n" + block(sumWrong)}
	}
	return llmtest.Reply{Text: "The line named above adds one too many; this version returns the sum itself.\n\n" + block(sumRight)}
}

// runSum runs sumTask with the writer and judge scripts; a request to any
// other role fails the test.
func runSum(t *testing.T, writer, judge llmtest.Script) (*llmtest.Server, Result) {
	t.Helper()
	ex := sandbox(t, "")
	srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		switch llmtest.Role(call) {
		case "writer":
			return writer(call)
		case "judge":
			return judge(call)
		}
		t.Errorf("unexpected request: %q", call.LastUser())
		return llmtest.Reply{Text: "?"}
	}, nil)
	return srv, runTask(t, Options{}, c, c, nil, ex, func(*Simulator) (Task, error) { return sumTask, nil })
}

// judgeSays is a judge that always answers verdict (JSON).
func judgeSays(verdict string) llmtest.Script {
	return func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: verdict} }
}

// TestJudgeReasonEntersDialogue: after the judge model rejects a clean
// test-less run, the dialogue carries its reason as the next user turn, and
// the writer's fix answers that turn, not the bare output.
func TestJudgeReasonEntersDialogue(t *testing.T) {
	if !strings.HasPrefix(JudgedLead, llmtest.JudgedPrefix) {
		t.Fatalf("JudgedLead %q does not start with the persona's llmtest.JudgedPrefix %q", JudgedLead, llmtest.JudgedPrefix)
	}
	srv, res := runSum(t, sumWriter, func(call llmtest.Call) llmtest.Reply {
		if strings.Contains(call.LastUser(), "sum(xs) + 1") {
			return llmtest.Reply{Text: "{\"correct\": false, \"reason\": \"Incorrect: the line `return sum(xs) + 1` adds one\\nto the sum.\"}"}
		}
		return llmtest.Reply{Text: `{"correct": true, "reason": "it prints 6, the sum of 1, 2 and 3"}`}
	})
	if !res.Passed {
		t.Fatalf("got not passed (%s), want passed", res.Reason)
	}
	ms := res.Dialogue.Messages
	roles := make([]string, len(ms))
	for i, m := range ms {
		roles[i] = m.Role
	}
	if got, want := strings.Join(roles, " "), "user assistant execution user assistant execution assistant"; got != want {
		t.Fatalf("roles %q, want %q", got, want)
	}
	want := JudgedLead + "the line `return sum(xs) + 1` adds one to the sum."
	if ms[3].Content != want {
		t.Errorf("the turn after the rejected run is %q, want %q", ms[3].Content, want)
	}
	// The writer was asked to fix with the reason as the last message.
	var fix llmtest.Call
	for _, r := range srv.Requests() {
		if r.Chat == nil {
			continue
		}
		if call := (llmtest.Call{Request: *r.Chat}); llmtest.Role(call) == "writer" && call.AssistantTurns() == 1 {
			fix = call
			break
		}
	}
	if got := fix.LastUser(); got != want {
		t.Errorf("the writer's fix request ends with %q, want the judge's reason %q", got, want)
	}
}

// TestJudgeRejectionWithoutReason: a judge that rejects a clean run and
// names nothing is asked again for a reason; one that still names none
// ends the dialogue at the judge gate, and no turn claims a fault.
func TestJudgeRejectionWithoutReason(t *testing.T) {
	srv, res := runSum(t, sumWriter, judgeSays(`{"correct": false, "reason": "The code is not correct."}`))
	if res.Passed {
		t.Fatalf("got passed, want the dialogue stopped at the judge")
	}
	var got []string
	for _, ck := range res.Checks {
		if ck.Gate == GateJudge && !ck.Verdict.OK() {
			got = append(got, ck.Verdict.Reason)
		}
	}
	if strings.Join(got, ",") != "no_reason" {
		t.Errorf("judge gate rejections %v, want [no_reason]", got)
	}
	for _, m := range res.Dialogue.Messages[1:] {
		if m.Role == schema.RoleUser {
			t.Errorf("a user turn after a reasonless rejection: %q", m.Content)
		}
	}
	repaired := false
	for _, r := range srv.Requests() {
		if r.Chat == nil {
			continue
		}
		if call := (llmtest.Call{Request: *r.Chat}); llmtest.Role(call) == "judge" && strings.Contains(call.LastUser(), "does not say what is wrong") {
			repaired = true
		}
	}
	if !repaired {
		t.Errorf("the judge was not asked again for a reason")
	}
}

// TestRunEvidenceOverrulesJudge: a judge model that accepts a run whose
// output contradicts the task (a bare False where the task asks for a
// sum) does not get the dialogue through; it is rejected under
// GateEvidence with the reason.
func TestRunEvidenceOverrulesJudge(t *testing.T) {
	_, res := runSum(t, func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "`total` adds the numbers.\n\n" + block("def total(xs):\n    return not (sum(xs))\n\nprint(total([1, 2, 3]))")}
	}, judgeSays(`{"correct": true, "reason": "The code ran and looks right."}`))
	if res.Passed {
		t.Fatalf("got passed, want the dialogue rejected on the run's evidence")
	}
	var v gates.Verdict
	for _, ck := range res.Checks {
		if ck.Gate == GateEvidence {
			v = ck.Verdict
		}
	}
	if v.Reason != "output_contradicts_task" || !strings.Contains(v.Detail, "False") {
		t.Errorf("evidence verdict %+v, want output_contradicts_task naming False", v)
	}
	if !strings.Contains(res.Reason, "contradicts the task") {
		t.Errorf("reason %q does not say the output contradicts the task", res.Reason)
	}
}

// TestWriterFillerCut: a stock claim of fit in a writer's answer is cut,
// and counted; the rest of the answer stays.
func TestWriterFillerCut(t *testing.T) {
	_, res := runSum(t, func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "`total` adds the numbers of the list. Its result is what the task asks for.\n\n" + block(sumRight)}
	}, judgeSays(`{"correct": true, "reason": "it prints 6"}`))
	first := res.Dialogue.Messages[1].Content
	if strings.Contains(first, "what the task asks for") || !strings.HasPrefix(first, "`total` adds the numbers of the list.") {
		t.Errorf("first answer %q: want the filler sentence cut and the rest kept", first)
	}
	if got := res.Dialogue.Labels[LabelFillerCut]; got != "1" {
		t.Errorf("label %s = %q, want 1", LabelFillerCut, got)
	}
}
