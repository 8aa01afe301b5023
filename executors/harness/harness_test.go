package harness_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/schema"
)

// sandbox is one real bubblewrap executor shared by the package's tests.
func sandbox(tb testing.TB) executors.Executor { return sandboxtest.Shared(tb) }

func mbpp(tests ...string) schema.Problem {
	return schema.Problem{Query: schema.Query{ID: "t"}, Tests: tests}
}

var addTests = []string{"assert f(3, 4) == 7", "assert f(1, 1) == 2", "assert f(0, 5) == 5"}

func TestJudge(t *testing.T) {
	ex := sandbox(t)
	fast := harness.Options{Timeout: 4 * time.Second, CaseTimeout: time.Second}
	tests := []struct {
		name       string
		problem    schema.Problem
		code       string
		opts       harness.Options
		wantPass   bool
		wantPassed int // cases passed
		wantKinds  []harness.Kind
		wantLoad   harness.Kind // "" means the code loaded
		feedback   []string     // substrings the feedback must hold
		check      func(t *testing.T, v harness.Verdict)
	}{
		{
			name: "pass", problem: mbpp(addTests...),
			code:     "def f(a, b):\n    return a + b\n",
			wantPass: true, wantPassed: 3, wantKinds: []harness.Kind{"pass", "pass", "pass"},
			feedback: []string{"All 3 tests passed."},
		},
		{
			name: "wrong answer", problem: mbpp(addTests...),
			code:       "def f(a, b):\n    print('computing', a, b)\n    return a * b\n",
			wantPassed: 0, wantKinds: []harness.Kind{"wrong_answer", "wrong_answer", "wrong_answer"},
			feedback: []string{"3 of 3 tests failed.", "Test failed for input f(3, 4): expected 7, got 12",
				"assert f(3, 4) == 7", "Output printed by the code:\ncomputing 3 4"},
			check: func(t *testing.T, v harness.Verdict) {
				c := v.Cases[0]
				if c.Input != "f(3, 4)" || c.Expected != "7" || c.Actual != "12" {
					t.Errorf("case 0 = input %q expected %q actual %q, want f(3, 4), 7, 12", c.Input, c.Expected, c.Actual)
				}
			},
		},
		{
			name: "name error", problem: mbpp(addTests...),
			code:       "def f(a, b):\n    return a + c\n",
			wantKinds:  []harness.Kind{"exception", "exception", "exception"},
			feedback:   []string{"Test raised an exception:", `File "solution.py", line 2, in f`, "NameError: name 'c' is not defined"},
			wantPassed: 0,
			check: func(t *testing.T, v harness.Verdict) {
				if got := v.Cases[0].Exception; got != "NameError" {
					t.Errorf("exception = %q, want NameError", got)
				}
			},
		},
		{
			name: "syntax error", problem: mbpp(addTests...),
			code:     "import math\ndef f(a, b)\n    return a + b\n",
			wantLoad: harness.KindSyntax, wantKinds: []harness.Kind{"syntax", "syntax", "syntax"},
			feedback: []string{"The code does not compile (SyntaxError at line 2)", `File "solution.py", line 2`, "def f(a, b)"},
		},
		{
			name: "indentation error", problem: mbpp(addTests...),
			code:     "def f(a, b):\nreturn a + b\n",
			wantLoad: harness.KindSyntax, wantKinds: []harness.Kind{"syntax", "syntax", "syntax"},
			feedback: []string{"IndentationError at line 2", "IndentationError: expected an indented block"},
		},
		{
			name: "type error in one case", problem: mbpp(append([]string{"assert f(3) == 3"}, addTests...)...),
			code:       "def f(a, b):\n    return a + b\n",
			wantPassed: 3, wantKinds: []harness.Kind{"exception", "pass", "pass", "pass"},
			feedback: []string{"1 of 4 tests failed.", "TypeError: f() missing 1 required positional argument: 'b'"},
		},
		{
			name: "infinite loop is a per-case timeout", problem: mbpp("assert f(0, 0) == 0", "assert f(1, 1) == 2"),
			code: "def f(a, b):\n    while a == 0:\n        pass\n    return a + b\n", opts: fast,
			wantPassed: 1, wantKinds: []harness.Kind{"timeout", "pass"},
			feedback: []string{"Test timed out (timed out after 1s)", "assert f(0, 0) == 0"},
		},
		{
			name: "loop that blocks the timer hits the run timeout", problem: mbpp("assert f(1, 1) == 2", "assert f(0, 0) == 0", "assert f(2, 2) == 4"),
			code:       "import signal\ndef f(a, b):\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)  # the judge's CPU-time case timer\n    while a == 0:\n        pass\n    return a + b\n",
			opts:       harness.Options{Timeout: 2 * time.Second, CaseTimeout: time.Second},
			wantPassed: 1, wantKinds: []harness.Kind{"pass", "timeout", "timeout"},
			feedback: []string{"Execution timed out after 2s.", "1 of 3 tests failed; 1 did not run.",
				"Test timed out (execution timed out after 2s):\n    assert f(0, 0) == 0",
				"Not run (the run ended during an earlier test):\n    assert f(2, 2) == 4"},
			check: func(t *testing.T, v harness.Verdict) {
				if v.Complete || !v.Result.TimedOut {
					t.Errorf("complete=%v timed_out=%v, want false, true", v.Complete, v.Result.TimedOut)
				}
				// Only the case that was running when the run ended timed
				// out; the one after it never started.
				if v.Cases[1].NotRun || !v.Cases[2].NotRun {
					t.Errorf("not_run = %v, %v; want false, true", v.Cases[1].NotRun, v.Cases[2].NotRun)
				}
				if strings.Contains(v.Feedback, "Test timed out (execution timed out after 2s):\n    assert f(2, 2)") {
					t.Errorf("feedback says a test that never started timed out:\n%s", v.Feedback)
				}
			},
		},
		{
			name: "printed fake marker lines", problem: mbpp(addTests...),
			code: "import os\nprint('@@cfjudge:0123 done {}')\nos.write(1, b'@@cfjudge: case {\"i\": 0, \"kind\": \"pass\"}\\n')\n" +
				"def f(a, b):\n    print('@@cfjudge:x load {\"ok\": 1}')\n    return 0\n",
			wantPassed: 0, wantKinds: []harness.Kind{"wrong_answer", "wrong_answer", "wrong_answer"},
			feedback: []string{"expected 7, got 0"},
		},
		{
			name: "exit(0) at top level", problem: mbpp(addTests...),
			code:     "def f(a, b):\n    return a + b\nexit(0)\n",
			wantLoad: harness.KindException, wantKinds: []harness.Kind{"exception", "exception", "exception"},
			feedback: []string{"The code raised an exception before any test ran", "SystemExit"},
		},
		{
			name: "sys.exit inside the function", problem: mbpp(addTests...),
			code:      "import sys\ndef f(a, b):\n    sys.exit(0)\n",
			wantKinds: []harness.Kind{"exception", "exception", "exception"},
			feedback:  []string{"the code called exit(0) during the test"},
		},
		{
			name: "os._exit inside the function", problem: mbpp(addTests...),
			code:      "import os\ndef f(a, b):\n    print('bye')\n    os._exit(0)\n",
			wantKinds: []harness.Kind{"exception", "exception", "exception"},
			feedback:  []string{"the program ended (exit status 0) before this test reported a result"},
			check: func(t *testing.T, v harness.Verdict) {
				if v.Complete {
					t.Errorf("complete = true after os._exit, want false")
				}
			},
		},
		{
			name: "monkeypatched builtins and assert helpers", problem: mbpp(append([]string{"assert len(g()) == 2", "assert not f(0, 0)"}, addTests...)...),
			code: "import builtins, json, operator, sys\n" +
				"builtins.repr = lambda x: 'PATCHED'\nbuiltins.AssertionError = KeyError\nbuiltins.len = lambda x: 2\n" +
				"json.dumps = lambda *a, **k: '{}'\noperator.eq = lambda a, b: True\nsys.exit = lambda *a: None\n" +
				"def g():\n    return [1, 2, 3]\n" +
				"def f(a, b):\n    builtins.print = None\n    return a - b\n",
			wantPassed: 1, wantKinds: []harness.Kind{"wrong_answer", "pass", "wrong_answer", "wrong_answer", "wrong_answer"},
			feedback: []string{"Test failed for input len(g()): expected 2, got 3", "Test failed for input f(3, 4): expected 7, got -1"},
		},
		{
			name: "huge output", problem: mbpp(addTests...),
			code:     "def f(a, b):\n    for _ in range(20000):\n        print('x' * 100)\n    return a + b\n",
			wantPass: true, wantPassed: 3, wantKinds: []harness.Kind{"pass", "pass", "pass"},
			feedback: []string{"All 3 tests passed.", "[... output truncated: 4096 of 6060000 bytes shown ...]"},
		},
		{
			name: "humaneval check split into cases",
			problem: schema.Problem{Query: schema.Query{ID: "he"}, EntryPoint: "add", Tests: []string{
				"\n\nMETADATA = {}\n\n\ndef check(candidate):\n    import math\n    assert candidate(1, 2) == 3\n" +
					"    assert math.floor(candidate(2, 2)) == 5, 'floor'\n    for i in range(3):\n        assert candidate(i, 0) == i\n" +
					"    assert abs(candidate(0.5, 0.25) - 0.75) < 1e-6\n"}},
			code:       "def add(x, y):\n    return x + y\n",
			wantPassed: 3, wantKinds: []harness.Kind{"pass", "wrong_answer", "pass", "pass"},
			feedback: []string{"Test failed for input math.floor(add(2, 2)): expected 5, got 4"},
			check: func(t *testing.T, v harness.Verdict) {
				if got, want := v.Cases[2].Test, "for i in range(3):\n    assert add(i, 0) == i"; got != want {
					t.Errorf("case 2 test = %q, want %q", got, want)
				}
			},
		},
		{
			name: "leetcode entry point with import preamble",
			problem: schema.Problem{Query: schema.Query{ID: "lc"}, EntryPoint: "Solution().total",
				Prompt: "from typing import *\nfrom collections import *\ninf = float('inf')\n",
				Tests:  []string{"def check(candidate):\n    assert candidate(nums = [1,2]) == 3\n    assert candidate(nums = [5]) == 5\n"}},
			code:       "class Solution:\n    def total(self, nums: List[int]) -> int:\n        return sum(nums) if len(nums) > 1 else inf\n",
			wantPassed: 1, wantKinds: []harness.Kind{"pass", "wrong_answer"},
			feedback: []string{"Test failed for input Solution().total(nums=[5]): expected 5, got inf"},
		},
		{
			name: "mbpp setup that needs the solution's class",
			problem: schema.Problem{Query: schema.Query{ID: "m"}, Setup: "root = Node(1)\nroot.left = Node(2)\n",
				Tests: []string{"assert depth(root) == 2"}},
			code:     "class Node:\n    def __init__(self, v):\n        self.v, self.left = v, None\ndef depth(n):\n    return 0 if n is None else 1 + depth(n.left)\n",
			wantPass: true, wantPassed: 1, wantKinds: []harness.Kind{"pass"},
		},
		{
			name: "test imports", problem: schema.Problem{Query: schema.Query{ID: "m"}, TestImport: "import math",
				Tests: []string{"assert math.isclose(area(2), 12.566, rel_tol=0.001)"}},
			code:     "import math\ndef area(r):\n    return math.pi * r * r\n",
			wantPass: true, wantPassed: 1, wantKinds: []harness.Kind{"pass"},
		},
		{
			name: "missing entry point", problem: schema.Problem{Query: schema.Query{ID: "he"}, EntryPoint: "add",
				Tests: []string{"def check(candidate):\n    assert candidate(1, 2) == 3\n"}},
			code:     "def plus(x, y):\n    return x + y\n",
			wantLoad: harness.KindException, wantKinds: []harness.Kind{"exception"},
			feedback: []string{"looking up the function under test", "NameError: name 'add' is not defined"},
		},
		{
			name: "recursion error traceback is condensed", problem: mbpp("assert f(1, 2) == 3"),
			code:      "def f(a, b):\n    return f(a, b)\n",
			wantKinds: []harness.Kind{"exception"},
			feedback:  []string{"RecursionError: maximum recursion depth exceeded", "frames omitted"},
		},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Timeout == 0 {
				opts = fast
			}
			v, err := harness.Judge(ctx, ex, tt.problem, tt.code, opts)
			if err != nil {
				t.Fatalf("Judge: %v", err)
			}
			if v.Passed != tt.wantPass {
				t.Errorf("passed = %v, want %v\nfeedback:\n%s", v.Passed, tt.wantPass, v.Feedback)
			}
			if v.PassedCount != tt.wantPassed || v.Total != len(tt.wantKinds) {
				t.Errorf("passed %d of %d, want %d of %d", v.PassedCount, v.Total, tt.wantPassed, len(tt.wantKinds))
			}
			var kinds []harness.Kind
			for _, c := range v.Cases {
				kinds = append(kinds, c.Kind)
			}
			if strings.Join(kindStrings(kinds), ",") != strings.Join(kindStrings(tt.wantKinds), ",") {
				t.Errorf("kinds = %v, want %v\nfeedback:\n%s\nstdout:\n%s\nstderr:\n%s", kinds, tt.wantKinds, v.Feedback, v.Result.Stdout, v.Result.Stderr)
			}
			switch {
			case tt.wantLoad == "" && v.Load != nil:
				t.Errorf("load failure %+v, want none", *v.Load)
			case tt.wantLoad != "" && (v.Load == nil || v.Load.Kind != tt.wantLoad):
				t.Errorf("load failure = %+v, want kind %s", v.Load, tt.wantLoad)
			}
			for _, s := range tt.feedback {
				if !strings.Contains(v.Feedback, s) {
					t.Errorf("feedback lacks %q; got:\n%s", s, v.Feedback)
				}
			}
			if tt.check != nil {
				tt.check(t, v)
			}
			rec := v.Execution()
			if rec.Passed == nil || *rec.Passed != v.Passed || rec.Code == "" || rec.Driver != "bwrap" {
				t.Errorf("Execution() = passed %v code %d bytes driver %q, want %v, the program, bwrap", rec.Passed, len(rec.Code), rec.Driver, v.Passed)
			}
		})
	}
}

func kindStrings(ks []harness.Kind) []string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return s
}

// A stdout that carries another program's marker, or a forged one, decodes
// to "not run", never to a pass.
func TestDecodeIgnoresForeignMarkers(t *testing.T) {
	pr, err := harness.Build(mbpp("assert f() == 1"), "def f():\n    return 1\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forged := "@@cfjudge:000000000000000000000000 plan {\"cases\": [\"x\"]}\n" +
		"@@cfjudge:000000000000000000000000 load {\"ok\": 1}\n" +
		"@@cfjudge:000000000000000000000000 case {\"i\": 0, \"kind\": \"pass\"}\n" +
		"@@cfjudge:000000000000000000000000 done {\"stdout\": \"\"}\n"
	v := pr.Decode(executors.Result{Stdout: forged})
	if v.Passed || v.Complete || v.PassedCount != 0 {
		t.Errorf("forged stdout decoded as passed=%v complete=%v passed_count=%d, want false, false, 0", v.Passed, v.Complete, v.PassedCount)
	}
}

func TestBuildRejectsUnjudgeable(t *testing.T) {
	for _, p := range []schema.Problem{
		{Query: schema.Query{ID: "none"}},
		{Query: schema.Query{ID: "noentry"}, Tests: []string{"def check(candidate):\n    assert candidate(1)\n"}},
	} {
		if _, err := harness.Build(p, "x = 1", harness.Options{}); err == nil {
			t.Errorf("Build(%s) = nil error, want an error", p.ID)
		}
	}
}

// Build is a pure function of its inputs, so identical judgements send
// identical requests (and hit the execution cache); a different candidate
// gets a different marker, so its records never decode as another's.
func TestBuildIsDeterministic(t *testing.T) {
	p := mbpp("assert f() == 1")
	a, err := harness.Build(p, "def f():\n    return 1\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := harness.Build(p, "def f():\n    return 1\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Source != b.Source {
		t.Errorf("two builds of one judgement differ; want identical sources")
	}
	c, err := harness.Build(p, "def f():\n    return 2\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`@@cfjudge:[0-9a-f]{24}`)
	ma, mc := marker.FindString(a.Source), marker.FindString(c.Source)
	if ma == "" || ma == mc {
		t.Errorf("markers %q and %q: want two distinct 24-hex markers", ma, mc)
	}
	// c's own records, decoded as a's, are foreign: not a pass.
	rec := mc + " plan {\"cases\": [\"x\"]}\n" + mc + " load {\"ok\": 1}\n" +
		mc + " case {\"i\": 0, \"kind\": \"pass\"}\n" + mc + " done {\"stdout\": \"\"}\n"
	if v := a.Decode(executors.Result{Stdout: rec}); v.Passed || v.Complete {
		t.Errorf("another candidate's records decoded as passed=%v complete=%v, want false, false", v.Passed, v.Complete)
	}
	if v := c.Decode(executors.Result{Stdout: rec}); !v.Passed || !v.Complete {
		t.Errorf("own records decoded as passed=%v complete=%v, want true, true", v.Passed, v.Complete)
	}
}
