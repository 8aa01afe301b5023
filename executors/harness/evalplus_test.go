package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

func plusProblem(id, entry, prompt, solution, base, plus string, atol string) schema.Problem {
	extra := map[string]json.RawMessage{"plus_input": json.RawMessage(plus), "base_input": json.RawMessage(base)}
	if atol != "" {
		extra["atol"] = json.RawMessage(atol)
	}
	return schema.Problem{Query: schema.Query{ID: id, Extra: extra}, Prompt: prompt, Solution: solution, EntryPoint: entry}
}

func TestJudgePlus(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	add := plusProblem("HumanEval/900", "add", "def add(a, b):\n    \"\"\"Add.\"\"\"\n", "    return a + b\n",
		`[[1, 2]]`, `[[3, 4], [10, -10], [0.1, 0.2]]`, "0")
	fadd := plusProblem("HumanEval/901", "add", "def add(a, b):\n    \"\"\"Add.\"\"\"\n", "    return a + b\n",
		`[[1.5, 2.25]]`, `[[0.1, 0.2]]`, "0")
	tup := plusProblem("Mbpp/2", "similar_elements", "", "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
		`[[[3, 4], [4, 5]]]`, `[[[1, 2, 3], [3, 2]]]`, "0")
	tests := []struct {
		name      string
		p         schema.Problem
		code      string
		passed    bool
		kind      harness.Kind
		loadStage string
		want      []string // substrings of the feedback
	}{
		{name: "reference passes", p: add, code: "def add(a, b):\n    return b + a\n", passed: true},
		// EvalPlus compares floats within atol (1e-6 when the task sets 0) and ints exactly.
		{name: "float within default atol", p: fadd, code: "def add(a, b):\n    return a + b + 1e-9\n", passed: true},
		{name: "float outside atol", p: fadd, code: "def add(a, b):\n    return a + b + 1e-3\n", kind: harness.KindWrongAnswer},
		{name: "int compared exactly", p: add, code: "def add(a, b):\n    return a + b + 1e-9\n", kind: harness.KindWrongAnswer},
		{name: "wrong answer shows input", p: add, code: "def add(a, b):\n    return a - b if a > 5 else a + b\n",
			kind: harness.KindWrongAnswer, want: []string{"add(10, -10): expected 0, got 20"}},
		{name: "exception", p: add, code: "def add(a, b):\n    return a + b + 1 // (b + 10)\n", kind: harness.KindException,
			want: []string{"exception for input add(10, -10)", "ZeroDivisionError"}},
		{name: "timeout per input", p: add, code: "def add(a, b):\n    while a == 3: pass\n    return a + b\n",
			kind: harness.KindTimeout, want: []string{"timed out for input add(3, 4)"}},
		{name: "syntax error", p: add, code: "def add(a, b)\n    return a\n", loadStage: "solution", want: []string{"does not compile"}},
		{name: "missing entry point", p: add, code: "def plus(a, b):\n    return a + b\n", loadStage: "entry_point"},
		// MBPP+ task 2 gets tuples back, and compares outputs as sets.
		{name: "mbpp tuple decoding and set oracle", p: tup,
			code: "def similar_elements(a, b):\n    assert isinstance(a, tuple)\n    return tuple(sorted(set(a) & set(b), reverse=True))\n", passed: true},
		{name: "printing cannot forge", p: add, code: "print('@@cfplus:00 done {}')\ndef add(a, b):\n    return 0\n",
			kind: harness.KindWrongAnswer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pt, err := harness.PlusTestsOf(tc.p, true)
			if err != nil {
				t.Fatal(err)
			}
			v, err := harness.JudgePlus(ctx, ex, pt, tc.code, harness.PlusOptions{MinCaseTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			fb := harness.PlusFeedback(v)
			if v.Passed != tc.passed {
				t.Fatalf("passed = %v, want %v; feedback:\n%s\nstderr: %s", v.Passed, tc.passed, fb, v.Result.Stderr)
			}
			if tc.kind != "" && (len(v.Failures) == 0 || v.Failures[0].Kind != tc.kind) {
				t.Errorf("failures = %+v, want first of kind %s", v.Failures, tc.kind)
			}
			if tc.loadStage != "" && (v.Load == nil || v.Load.Stage != tc.loadStage) {
				t.Errorf("load = %+v, want stage %s", v.Load, tc.loadStage)
			}
			for _, w := range tc.want {
				if !strings.Contains(fb, w) {
					t.Errorf("feedback %q does not contain %q", fb, w)
				}
			}
		})
	}
}

func TestPlusTestsOfWithoutInputs(t *testing.T) {
	_, err := harness.PlusTestsOf(schema.Problem{Query: schema.Query{ID: "x"}}, true)
	if !errors.Is(err, harness.ErrNoPlusInputs) {
		t.Fatalf("got %v, want ErrNoPlusInputs", err)
	}
}

// TestPlusCanonicalSample runs the canonical solutions of a slice of the
// real HumanEval+ and MBPP+ files against all their inputs: each must agree
// with itself (this exercises decoding, oracles and time limits on real data).
func TestPlusCanonicalSample(t *testing.T) {
	ex := sandbox(t)
	for _, f := range []string{"evalplus/HumanEvalPlus.jsonl.gz", "evalplus/MbppPlus.jsonl.gz"} {
		ps, err := schema.LoadProblems(sharedtest.Path(t, f))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(ps); i += 12 {
			p := ps[i]
			pt, err := harness.PlusTestsOf(p, true)
			if err != nil {
				t.Fatal(err)
			}
			v, err := harness.JudgePlus(context.Background(), ex, pt, p.Program(), harness.PlusOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !v.Passed {
				t.Errorf("%s canonical fails its own inputs: %s", p.ID, harness.PlusFeedback(v))
			}
		}
	}
}
