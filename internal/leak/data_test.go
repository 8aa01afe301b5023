package leak

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

// testBench loads a known benchmark from the shared data, checksum verified.
func testBench(t testing.TB, name string) []schema.Problem {
	t.Helper()
	s, _ := benchmarks.Lookup(name)
	sharedtest.Path(t, s.File) // skips when the shared data is absent
	bs, err := Load([]string{name}, LoadOptions{Dir: sharedtest.DataDir()})
	if err != nil {
		t.Fatal(err)
	}
	return bs[0].Problems
}

func testHumanEval(t testing.TB) []schema.Problem { return testBench(t, "humaneval") }
func testMBPP(t testing.TB) []schema.Problem      { return testBench(t, "mbpp") }

// testAlpacaDialogues turns Code Alpaca records into two-turn dialogues:
// user = instruction + input, assistant = output in a code fence.
func testAlpacaDialogues(t testing.TB) []schema.Dialogue {
	ps, err := schema.LoadProblems(sharedtest.Path(t, "queries/code_alpaca_2k.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]schema.Dialogue, len(ps))
	for i, p := range ps {
		out[i] = schema.Dialogue{ID: "alpaca-" + p.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: p.Text},
			{Role: schema.RoleAssistant, Content: "```\n" + p.Solution + "\n```"},
		}}
	}
	return out
}

// testDialogues reads a dialogue file (Code-Feedback format) with schema.
func testDialogues(t testing.TB, path string) []schema.Dialogue {
	src, err := schema.OpenSource(path, schema.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []schema.Dialogue
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *r.Dialogue)
	}
}

// plantHumanEval renders a HumanEval task as a realistic dialogue: the user
// pastes the signature and docstring, the assistant answers with the full
// function and a short explanation.
func plantHumanEval(p schema.Problem) schema.Dialogue {
	return schema.Dialogue{ID: "planted-" + p.ID, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Can you complete this Python function for me?\n\n```python\n" + p.Prompt + "```"},
		{Role: schema.RoleAssistant, Content: "Sure, here is a complete implementation:\n\n```python\n" + p.Prompt + p.Solution +
			"```\n\nThe function follows the docstring and handles the examples shown."},
		{Role: schema.RoleUser, Content: "Thanks, that works."},
	}}
}

// plantMBPP renders an MBPP task in the MBPP prompt style (problem plus the
// tests the code should pass), answered by the reference solution.
func plantMBPP(p schema.Problem) schema.Dialogue {
	return schema.Dialogue{ID: "planted-" + p.ID, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: p.Text + " Your code should pass these tests:\n\n" + strings.Join(p.Tests, "\n")},
		{Role: schema.RoleAssistant, Content: "```python\n" + p.Solution + "\n```\nThis solves the task."},
	}}
}
