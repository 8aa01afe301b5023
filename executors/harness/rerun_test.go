package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/schema"
)

// firstLine is the candidate line of the verdict's first failure.
func firstLine(v harness.Verdict) int {
	if v.Load != nil {
		return v.Load.Line
	}
	for _, c := range v.Cases {
		if !c.Passed {
			return c.Line
		}
	}
	return 0
}

// TestOutcomeAndRerun judges candidates, turns each verdict into its
// execution record, re-runs the record and checks that the fresh verdict
// tells the same story: same outcome, same record fields.
func TestOutcomeAndRerun(t *testing.T) {
	ex := sandbox(t)
	opts := harness.Options{Timeout: 3 * time.Second, CaseTimeout: time.Second}
	two := mbpp("assert f(1, 2) == 3", "assert f(2, 2) == 4")
	tests := []struct {
		name     string
		problem  schema.Problem
		code     string
		outcome  string
		line     int  // candidate line of the first failure
		timedOut bool // the record's TimedOut
	}{
		{"pass", two, "def f(a, b):\n    return a + b\n", harness.OutcomePass, 0, false},
		{"wrong answer", two, "def f(a, b):\n    return a * b\n", harness.OutcomeWrongAnswer, 0, false},
		{"name error in a case", two, "def f(a, b):\n    s = a\n    return s + c\n", "NameError", 3, false},
		{"type error after a pass", mbpp("assert f(1, 2) == 3", "assert f('a', 2) == 3"), "def f(a, b):\n    return a + b\n", "TypeError", 2, false},
		{"syntax error", two, "def f(a, b):\n    return (a + b\n\nx = 1\n", "SyntaxError", 2, false},
		{"indentation error", two, "def f(a, b):\n    s = a\n      return s + b\n", "IndentationError", 3, false},
		{"exception while loading", two, "def f(a, b):\n    return a + b\n\nf(1)\n", "TypeError", 4, false},
		{"per-case timeout", mbpp("assert f(1, 2) == 3"), "def f(a, b):\n    while True:\n        pass\n", harness.OutcomeTimeout, 0, true},
		{"timeout while loading", two, "while True:\n    pass\n", harness.OutcomeTimeout, 0, true},
		// The run's own limit ends it during the second test: the five after
		// it are not run, and the record must render them as such.
		{"run timeout leaves tests not run", mbpp("assert f(1, 1) == 2", "assert f(0, 0) == 0", "assert f(2, 2) == 4",
			"assert f(3, 3) == 6", "assert f(4, 4) == 8", "assert f(5, 5) == 10", "assert f(6, 6) == 12"),
			"import signal\ndef f(a, b):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while a == 0:\n        pass\n    return a + b\n",
			harness.OutcomeTimeout, 0, true},
		{"setup needs the solution's class", schema.Problem{Query: schema.Query{ID: "m"}, Setup: "root = Node(1)\r\nroot.left = Node(2)\r\n",
			Tests: []string{"assert depth(root) == 2"}},
			"class Node:\n    def __init__(self, v):\n        self.v, self.left = v, None\ndef depth(n):\n    return 0 if n is None else 1 + depth(n.left)\n",
			harness.OutcomePass, 0, false},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := harness.Judge(ctx, ex, tt.problem, tt.code, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Outcome(); got != tt.outcome {
				t.Fatalf("Outcome() = %q, want %q\nfeedback:\n%s", got, tt.outcome, v.Feedback)
			}
			if got := firstLine(v); got != tt.line {
				t.Errorf("first failure's line = %d, want %d\nfeedback:\n%s", got, tt.line, v.Feedback)
			}
			rec := v.Execution()
			if rec.Judge == nil || rec.Code != tt.code || strings.Contains(rec.Code, "_cf_boot") {
				t.Fatalf("record holds code %q and judge %v, want the candidate's code and the judge by reference", rec.Code, rec.Judge)
			}
			if text, ok := harness.RenderRecorded(rec); !ok || text != strings.TrimRight(v.Feedback, "\n") {
				t.Errorf("RenderRecorded:\n%s\nwant the turn's text:\n%s", text, v.Feedback)
			}
			if b, _ := json.Marshal(rec); len(b) > 4*len(v.Feedback)+len(tt.code)+2000 {
				t.Errorf("record is %d bytes for %d bytes of feedback", len(b), len(v.Feedback))
			}
			if rec.TimedOut != tt.timedOut || strings.Contains(rec.Exception, "CaseTimeout") {
				t.Errorf("record timed_out %v exception %q, want timed_out %v and no judge-internal exception", rec.TimedOut, rec.Exception, tt.timedOut)
			}
			again, err := harness.Rerun(ctx, ex, rec)
			if err != nil {
				t.Fatalf("Rerun: %v", err)
			}
			if got := again.Outcome(); got != tt.outcome {
				t.Errorf("re-run Outcome() = %q, want %q\nfeedback:\n%s", got, tt.outcome, again.Feedback)
			}
			fresh := again.Execution()
			if *fresh.Passed != *rec.Passed || fresh.TimedOut != rec.TimedOut || fresh.Exception != rec.Exception ||
				fresh.TimeoutMS != rec.TimeoutMS || fresh.Code != rec.Code {
				t.Errorf("re-run record passed/timed_out/exception/timeout %v/%v/%q/%d, want %v/%v/%q/%d (same code: %v)",
					*fresh.Passed, fresh.TimedOut, fresh.Exception, fresh.TimeoutMS,
					*rec.Passed, rec.TimedOut, rec.Exception, rec.TimeoutMS, fresh.Code == rec.Code)
			}
			if again.Feedback != v.Feedback && tt.outcome != harness.OutcomeTimeout {
				t.Errorf("re-run feedback differs:\n%s\nwant:\n%s", again.Feedback, v.Feedback)
			}
		})
	}
}

// A program recorded by another version of the judge re-runs with the judge
// it embeds (not this version's precompiled one), and records that are not
// judge programs are refused with ErrNotJudgeProgram.
func TestRerunRecords(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	v, err := harness.Judge(ctx, ex, mbpp("assert f(1, 2) == 3"), "def f(a, b):\n    return a - b\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := v.Execution()
	// Records written before the judge was referenced stored the program.
	older := rec
	older.Judge = nil
	// The judge's source sits in the program as a JSON string: \n is escaped.
	older.Code = "# an older judge\n" + strings.Replace(v.Program, "def _cf_judge(P):", `def _cf_judge(P):\n    P['value_cap'] = 1`, 1)
	if older.Code == "# an older judge\n"+v.Program {
		t.Fatal("the judge source no longer holds its entry point; update the test")
	}
	again, err := harness.Rerun(ctx, ex, older)
	if err != nil {
		t.Fatal(err)
	}
	// value_cap 1 cuts every value: only the embedded judge does that.
	if c := again.Cases[0]; c.Kind != harness.KindWrongAnswer || !strings.Contains(c.Actual, "more chars") {
		t.Errorf("re-run of the older judge: case %+v, want a wrong answer with values cut by its own cap", c)
	}

	// A lean record whose tests were edited does not rebuild the program
	// its hash names.
	edited := rec
	j := *rec.Judge
	j.Tests = []string{"assert f(1, 2) == -1"}
	edited.Judge = &j
	if _, err := harness.Rerun(ctx, ex, edited); !errors.Is(err, harness.ErrRebuild) {
		t.Errorf("edited record: Rerun error %v, want ErrRebuild", err)
	}

	for _, tc := range []struct {
		name string
		e    schema.Execution
	}{
		{"notebook cell", schema.Execution{Language: "python", Code: "print(1)\n"}},
		{"other language", func() schema.Execution { e := rec; e.Language = "bash"; return e }()},
		{"forged payload", schema.Execution{Language: "python", Code: `_cf_boot()({"marker": "not-a-judge"})`}},
		{"broken payload", schema.Execution{Language: "python", Code: `_cf_boot()({"marker": )`}},
	} {
		if _, err := harness.Rerun(ctx, ex, tc.e); !errors.Is(err, harness.ErrNotJudgeProgram) {
			t.Errorf("%s: Rerun error %v, want ErrNotJudgeProgram", tc.name, err)
		}
	}
}
