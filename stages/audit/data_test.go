package audit

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/shared"
	"github.com/codefeedback/codefeedback/schema"
)

// The loaders below decode the shared data for the tests only.

func readJSONL(t testing.TB, path string, each func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) > 0 {
			each(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func testHumanEval(t testing.TB) []schema.Problem {
	var out []schema.Problem
	readJSONL(t, shared.Path(t, "humaneval/HumanEval.jsonl.gz"), func(b []byte) {
		var r struct {
			TaskID            string `json:"task_id"`
			Prompt            string `json:"prompt"`
			EntryPoint        string `json:"entry_point"`
			CanonicalSolution string `json:"canonical_solution"`
			Test              string `json:"test"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, schema.Problem{
			Query:    schema.Query{ID: r.TaskID, Text: r.Prompt, Source: "humaneval"},
			Prompt:   r.Prompt,
			Solution: r.CanonicalSolution, Tests: []string{r.Test}, EntryPoint: r.EntryPoint,
		})
	})
	return out
}

func testMBPP(t testing.TB) []schema.Problem {
	var out []schema.Problem
	readJSONL(t, shared.Path(t, "mbpp/mbpp.jsonl"), func(b []byte) {
		var r struct {
			Text     string   `json:"text"`
			Code     string   `json:"code"`
			TaskID   int      `json:"task_id"`
			Setup    string   `json:"test_setup_code"`
			TestList []string `json:"test_list"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, schema.Problem{
			Query:    schema.Query{ID: fmt.Sprintf("MBPP/%d", r.TaskID), Text: r.Text, Source: "mbpp"},
			Solution: r.Code, Tests: r.TestList, Setup: r.Setup,
		})
	})
	return out
}

// testAlpacaDialogues turns Code Alpaca records into two-turn dialogues:
// user = instruction + input, assistant = output in a code fence.
func testAlpacaDialogues(t testing.TB) []schema.Dialogue {
	b, err := os.ReadFile(shared.Path(t, "queries/code_alpaca_2k.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct{ Instruction, Input, Output string }
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	out := make([]schema.Dialogue, len(recs))
	for i, r := range recs {
		user := r.Instruction
		if r.Input != "" {
			user += "\n" + r.Input
		}
		out[i] = schema.Dialogue{ID: fmt.Sprintf("alpaca-%d", i), Messages: []schema.Message{
			{Role: schema.RoleUser, Content: user},
			{Role: schema.RoleAssistant, Content: "```\n" + r.Output + "\n```"},
		}}
	}
	return out
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
