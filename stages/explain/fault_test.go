package explain

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// planted is a correct-stage dialogue: its first reply holds a planted
// bug (`a - b`) that the run shows and the next reply fixes.
func planted() schema.Dialogue {
	no := false
	return schema.Dialogue{ID: "dlg-planted", Stage: "correct", Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Write a function to add two numbers a and b."},
		{Role: schema.RoleAssistant, Content: "This version of `add` should pass the tests:\n\n```python\n" + code1 + "```"},
		{Role: schema.RoleExecution, Content: "1 of 1 tests failed.\n\nTest failed for input add(1, 2): expected 3, got -1", Exec: &schema.Execution{Passed: &no}},
		{Role: schema.RoleAssistant, Content: "The sign was wrong. Fixed:\n\n```python\n" + code2 + "```"},
		{Role: schema.RoleExecution, Content: "All 1 tests passed."},
		{Role: schema.RoleAssistant, Content: "All tests pass now."},
	}}
}

// TestPrefaceDoesNotPresentTheFault: the preface of a reply whose run
// fails and is fixed next may not describe the part the fix replaces as
// the plan. The model is told the run failed; a preface quoting the
// planted `a - b` is sent back, and the one kept says what add is for.
func TestPrefaceDoesNotPresentTheFault(t *testing.T) {
	var prompts []string
	srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		prompts = append(prompts, call.LastUser())
		if strings.Contains(call.LastUser(), "Your preface cannot be used") {
			return llmtest.Reply{Text: "`add` adds two numbers a and b: it combines its two arguments in one expression and returns the sum."}
		}
		if strings.Contains(call.LastUser(), "<reply>\nThe sign was wrong") {
			return llmtest.Reply{Text: "`add` now adds two numbers a and b by returning `a + b`, the sum of its arguments."}
		}
		return llmtest.Reply{Text: "`add` adds two numbers a and b: it returns `a - b`, the difference of its arguments."}
	})
	got, rep := explainWith(t, c, 2, planted())
	first, _, _ := strings.Cut(got.Messages[1].Content, "```")
	if strings.Contains(first, "a - b") || !strings.Contains(first, "adds two numbers") {
		t.Errorf("first reply %q: want a preface that says what add is for without the planted `a - b`", first)
	}
	if rep.Repairs != 1 {
		t.Errorf("got %d repairs, want 1 (the preface quoting the fault)", rep.Repairs)
	}
	if len(prompts) == 0 || !strings.Contains(prompts[0], "The run after this reply failed") || !strings.Contains(prompts[0], "expected 3, got -1") {
		t.Errorf("the first request does not tell the model the run failed: %q", prompts[0])
	}
	if srv.Calls("/v1/chat/completions") != 3 {
		t.Errorf("got %d model calls, want 3 (preface, repair, fix's preface)", srv.Calls("/v1/chat/completions"))
	}
}

// TestPersonaPrefaceOfAFailingReply: the test model, told the run fails,
// quotes nothing the fix replaces (the good model the gate expects).
func TestPersonaPrefaceOfAFailingReply(t *testing.T) {
	_, c := fake(t, (&llmtest.Persona{}).Script())
	got, rep := explainWith(t, c, 0, planted())
	if len(rep.Rejected) != 0 {
		t.Fatalf("persona prefaces rejected: %+v", rep.Rejected)
	}
	pre, _, _ := strings.Cut(got.Messages[1].Content, "```")
	if q := gates.FaultQuoted(pre, code1, code2); len(q) > 0 {
		t.Errorf("persona preface %q quotes %v, the planted fault", pre, q)
	}
}

// TestPrefaceFillerSentBack: a preface that claims the code fits the
// request ("which is what the request asks for") is sent back.
func TestPrefaceFillerSentBack(t *testing.T) {
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if strings.Contains(call.LastUser(), "Your preface cannot be used") {
			return llmtest.Reply{Text: "`add` adds two numbers a and b and returns their sum."}
		}
		return llmtest.Reply{Text: "`add` adds two numbers a and b, which is what the request asks for."}
	})
	d := planted()
	d.Messages = d.Messages[:2] // the reply alone: no run after it
	got, rep := explainWith(t, c, 2, d)
	if pre, _, _ := strings.Cut(got.Messages[1].Content, "```"); strings.Contains(pre, "asks for") || rep.Repairs != 1 {
		t.Errorf("preface %q after %d repairs, want the filler sent back once", pre, rep.Repairs)
	}
}

// TestPersonaPrefaceOfAnIndentedDef: a planted indentation that moves the
// def line still leaves the function to name.
func TestPersonaPrefaceOfAnIndentedDef(t *testing.T) {
	_, c := fake(t, (&llmtest.Persona{}).Script())
	d := planted()
	d.Messages[1].Content = "Let me define `add` for this:\n\n```python\nimport re\n  def add(a, b):\n    return a + b\n```"
	d.Messages[2] = schema.Message{Role: schema.RoleExecution, Content: "The code does not compile (IndentationError at line 2)", Exec: &schema.Execution{ExitCode: 1, Exception: "IndentationError"}}
	d.Messages[3].Content = "The indentation was wrong.\n\n```python\nimport re\ndef add(a, b):\n    return a + b\n```"
	_, rep := explainWith(t, c, 0, d)
	if len(rep.Rejected) != 0 {
		t.Errorf("persona prefaces rejected: %+v", rep.Rejected)
	}
}
