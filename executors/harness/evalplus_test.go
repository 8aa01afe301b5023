package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
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
		// A loop inside C code never sees the timer's signal: the set's
		// process is killed at the set's deadline, as EvalPlus kills its
		// untrusted_check process, long before the run's own limit.
		{name: "stuck in C code", p: add, code: "import itertools\ndef add(a, b):\n    return sum(itertools.count())\n",
			// Which limit ends it (the set's CPU budget or its wall-clock
			// cap) depends on the machine's load; both are the set's.
			kind: harness.KindTimeout, want: []string{"the base inputs"}},
		{name: "stuck in C code while loading", p: add, code: "import itertools\nsum(itertools.count())\ndef add(a, b):\n    return a + b\n",
			loadStage: "solution"},
		{name: "ends the process", p: add, code: "import os\n_end = os._exit\ndef add(a, b):\n    _end(0)\n",
			kind: harness.KindException, want: []string{"process ended"}},
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
			v := judgePlus(t, ex, tc.p, tc.code, harness.PlusOptions{MinCaseTimeout: 300 * time.Millisecond})
			fb := harness.PlusFeedback(v)
			if v.Result.TimedOut {
				t.Fatalf("the run hit its overall limit; want the set's deadline to end it; feedback:\n%s", fb)
			}
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

// judgePlus judges code against all of p's inputs.
func judgePlus(t *testing.T, ex executors.Executor, p schema.Problem, code string, o harness.PlusOptions) harness.PlusVerdict {
	t.Helper()
	pt, err := harness.PlusTestsOf(p, true)
	if err != nil {
		t.Fatal(err)
	}
	v, err := harness.JudgePlus(context.Background(), ex, pt, code, o)
	if err != nil {
		t.Fatal(err)
	}
	return v
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
			v := judgePlus(t, ex, p, p.Program(), harness.PlusOptions{})
			if !v.Passed {
				t.Errorf("%s canonical fails its own inputs: %s", p.ID, harness.PlusFeedback(v))
			}
		}
	}
}

// TestJudgePlusEvalPlusRules: EvalPlus's comparison rules and quirks
// (evalplus/eval/__init__.py unsafe_execute), each with the verdict EvalPlus
// gives written down, and feedback that never says "expected X, got X".
func TestJudgePlusEvalPlusRules(t *testing.T) {
	ex := sandbox(t)
	// Mbpp/737's shape: the reference returns a match object or None, and
	// EvalPlus keeps only whether it is None.
	match := plusProblem("Mbpp/737", "check_str", "",
		"import re\ndef check_str(s):\n    return re.search('^[aeiou]', s)\n",
		`[["annie"], ["dawood"]]`, `[["else"], ["xyz"], ["u"]]`, "0")
	// atol 0, but the first expected value is a float: from then on EvalPlus
	// compares within 1e-6 (rtol 1e-7) for the rest of the set.
	sticky := plusProblem("HumanEval/902", "f", "def f(x):\n", "    return x / 2 if x < 10 else 10 ** 18\n",
		`[[1]]`, `[[3], [50]]`, "0")
	intsOnly := plusProblem("HumanEval/903", "f", "def f(x):\n", "    return 10 ** 20\n", `[[1]]`, `[[3]]`, "0")
	nan := plusProblem("HumanEval/904", "f", "def f(x):\n", "    return float('nan') if x else 1.0\n", `[[0]]`, `[[1]]`, "0")
	empty := plusProblem("Mbpp/793", "last", "", "def last(arr, x):\n    return len(arr) - arr[::-1].index(x) - 1\n",
		`[[[1, 2, 3], 1]]`, `{}`, "0")
	// With a task atol, a result that is not equal goes to numpy.allclose,
	// which broadcasts a 2x1 nest against a 2x2 one.
	grid := plusProblem("HumanEval/905", "g", "def g(n):\n", "    return [[float(i)] * 2 for i in range(n)]\n",
		`[[2]]`, `[[3]]`, "1e-9")
	tests := []struct {
		name     string
		p        schema.Problem
		code     string
		passed   bool
		sets     string   // the sets that ran, "base,plus"
		want     []string // substrings of the feedback
		wantNot  []string
		loadFail bool
	}{
		{name: "match objects judged as not-None", p: match, code: match.Solution, passed: true, sets: "base,plus"},
		{name: "a bool for a match object", p: match,
			code: "def check_str(s):\n    return s[0] in 'aeiou'\n", passed: true, sets: "base,plus"},
		{name: "None where a match is expected", p: match, code: "def check_str(s):\n    return None\n", sets: "base",
			want: []string{"check_str('annie'): expected a result other than None, got None"}},
		{name: "atol sticks after a float", p: sticky,
			code: "def f(x):\n    return x / 2 if x < 10 else 10 ** 18 + 1\n", passed: true, sets: "base,plus"},
		{name: "ints alone compare exactly", p: intsOnly, code: "def f(x):\n    return 10 ** 20 + 1\n", sets: "base",
			want: []string{"expected 100000000000000000000, got 100000000000000000001"}},
		{name: "an int for a float that equals it", p: sticky,
			code: "def f(x):\n    return 0.5 if x == 1 else (1.5 if x == 3 else 10 ** 18)\n", passed: true, sets: "base,plus"},
		{name: "a float where a close int is expected fails the type check", p: intsOnly,
			code: "def f(x):\n    return 1e20 + 1e5\n", sets: "base", want: []string{"expected 100000000000000000000, got 1.000000000000001e+20"}},
		{name: "NaN equals nothing", p: nan, code: nan.Prompt + nan.Solution, sets: "base,plus",
			want:    []string{"got nan, which prints like the expected value but does not compare equal to it (NaN equals nothing)"},
			wantNot: []string{"expected nan, got nan"}},
		{name: "an empty plus_input object is no input", p: empty, code: empty.Solution, passed: true, sets: "base,plus"},
		{name: "no input still needs the code to load", p: empty, code: "import no_such_module\n", loadFail: true},
		{name: "nested lists broadcast in allclose", p: grid,
			code: "def g(n):\n    return [[float(i)] for i in range(n)]\n", passed: true, sets: "base,plus"},
		{name: "open() is taken away as in EvalPlus", p: intsOnly,
			code: "def f(x):\n    open('/dev/null')\n    return 10 ** 20\n", sets: "base", want: []string{"TypeError"}},
		{name: "a base failure leaves the plus set unrun", p: sticky,
			code: "def f(x):\n    return 0\n", sets: "base", want: []string{"1 of 1 base inputs tested failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judgePlus(t, ex, tc.p, tc.code, harness.PlusOptions{MinCaseTimeout: time.Second})
			fb := harness.PlusFeedback(v)
			if v.Passed != tc.passed {
				t.Fatalf("passed = %v, want %v; feedback:\n%s\nstderr: %s", v.Passed, tc.passed, fb, v.Result.Stderr)
			}
			if tc.loadFail != (v.Load != nil) {
				t.Errorf("load failure = %+v, want one: %v", v.Load, tc.loadFail)
			}
			var sets []string
			for _, s := range v.Sets {
				sets = append(sets, s.Name)
			}
			if got := strings.Join(sets, ","); !tc.loadFail && got != tc.sets {
				t.Errorf("sets run = %q, want %q", got, tc.sets)
			}
			for _, w := range tc.want {
				if !strings.Contains(fb, w) {
					t.Errorf("feedback %q does not contain %q", fb, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(fb, w) {
					t.Errorf("feedback %q contains %q", fb, w)
				}
			}
		})
	}
}

// TestPlusRealQuirks: real records whose inputs need EvalPlus's reading to
// be tested at all: Mbpp/404's -Infinity (a float, not the loader's
// string) and Mbpp/255's expected outputs, beyond 512 MiB. The canonical
// solution passes with no input skipped. Mbpp/255 takes most of a minute
// on a loaded machine: it runs with CODEFEEDBACK_EVALPLUS_FULL set.
func TestPlusRealQuirks(t *testing.T) {
	ex := sandbox(t)
	ids := []string{"Mbpp/404"}
	if os.Getenv("CODEFEEDBACK_EVALPLUS_FULL") != "" {
		ids = append(ids, "Mbpp/255")
	}
	ps, err := schema.LoadProblems(sharedtest.Path(t, "evalplus/MbppPlus.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !slices.Contains(ids, p.ID) {
			continue
		}
		t.Run(p.ID, func(t *testing.T) {
			v := judgePlus(t, ex, p, p.Program(), harness.PlusOptions{})
			if !v.Passed || v.Skipped != 0 || v.Total != v.Inputs {
				t.Errorf("passed %v, %d of %d inputs tested, %d skipped; want all tested: %s", v.Passed, v.Total, v.Inputs, v.Skipped, harness.PlusFeedback(v))
			}
		})
	}
}
