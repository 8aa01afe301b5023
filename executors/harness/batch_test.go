package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
)

// sameVerdict fails unless a and b say the same: feedback, outcome and the
// execution record apart from when and how long it ran.
func sameVerdict(t *testing.T, name string, a, b harness.Verdict) {
	t.Helper()
	rec := func(v harness.Verdict) string {
		e := v.Execution()
		e.Duration = 0
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if a.Feedback != b.Feedback || a.Outcome() != b.Outcome() {
		t.Errorf("%s: batch feedback %q (%s), alone %q (%s)", name, a.Feedback, a.Outcome(), b.Feedback, b.Outcome())
	}
	if ra, rb := rec(a), rec(b); ra != rb {
		t.Errorf("%s: batch record\n%s\nalone\n%s", name, ra, rb)
	}
}

// TestJudgeBatch judges candidates of every outcome in one batch and each
// alone: usable batch verdicts must equal the lone ones, and what a shared
// interpreter could change (exit, stderr, a long test, deep recursion) must
// be flagged unusable, not judged differently.
func TestJudgeBatch(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := mbpp(addTests...)
	p.ID = "batch"
	opts := harness.Options{Timeout: 10 * time.Second, CaseTimeout: 5 * time.Second}
	items := []struct {
		name, code string
		usable     bool
	}{
		{"pass", "def f(a, b):\n    return a + b\n", true},
		{"wrong answer with output", "def f(a, b):\n    print('sum of', a, b)\n    return a * b\n", true},
		{"name error", "def f(a, b):\n    return a + c\n", true},
		{"type error", "def f(a, b):\n    return str(a) + b\n", true},
		{"syntax error", "def f(a, b)\n    return a + b\n", true},
		{"exception at load", "import json\nx = json.loads('{')\ndef f(a, b):\n    return a + b\n", true},
		{"sys.exit in a test", "import sys\ndef f(a, b):\n    sys.exit(3)\n", true},
		{"patches builtins", "def f(a, b):\n    import builtins\n    builtins.len = None\n    return a + b\n", true},
		{"recursion that fits", "def f(a, b):\n    return a if b == 0 else f(a + 1, b - 1)\n", true},
		{"os._exit", "import os\ndef f(a, b):\n    os._exit(0)\n", false},
		{"stderr", "import sys\ndef f(a, b):\n    sys.stderr.write('note\\n')\n    return a + b\n", false},
		{"hangs", "def f(a, b):\n    while True:\n        pass\n", false},
		{"unbounded recursion", "def f(a, b):\n    return f(a, b)\n", false},
		{"pass after the others", "def f(a, b):\n    return b + a\n", true},
	}
	var batch []harness.BatchItem
	for _, it := range items {
		batch = append(batch, harness.BatchItem{Code: it.code})
	}
	b, err := harness.JudgeBatch(ctx, ex, p, opts, batch, harness.BatchOptions{CaseTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	vs, ok := b.Verdicts, b.Usable
	for i, it := range items {
		if ok[i] != it.usable {
			t.Errorf("%s: usable %v, want %v", it.name, ok[i], it.usable)
		}
		if !ok[i] {
			continue
		}
		alone, err := harness.Judge(ctx, ex, p, it.code, opts)
		if err != nil {
			t.Fatal(err)
		}
		sameVerdict(t, it.name, vs[i], alone)
	}
}

// TestJudgeBatchStopRule: a group stops at its quota of accepted outcomes,
// a failing gate stops the batch, and skipped items are unusable.
func TestJudgeBatchStopRule(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := mbpp(addTests...)
	wrong := []string{harness.OutcomeWrongAnswer}
	items := []harness.BatchItem{
		{Code: "def f(a, b):\n    return a + b\n", Gate: true},
		{Code: "def f(a, b):\n    return a + b\n", Group: "logic", Accept: wrong},                // passes: not accepted
		{Code: "def f(a, b):\n    return a - b\n", Group: "logic", Accept: wrong},                // accepted
		{Code: "def f(a, b):\n    return a * b\n", Group: "logic", Accept: wrong},                // skipped: quota 1
		{Code: "def f(a, b):\n    return a + q\n", Group: "name", Accept: []string{"NameError"}}, // other group
	}
	b, err := harness.JudgeBatch(ctx, ex, p, harness.Options{}, items, harness.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, false, true}; !slices.Equal(b.Usable, want) {
		t.Errorf("usable %v, want %v", b.Usable, want)
	}
	items[0].Code = "def f(a, b):\n    return 0\n" // the gate fails: nothing after it runs
	b, err = harness.JudgeBatch(ctx, ex, p, harness.Options{}, items, harness.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, false, false}; !slices.Equal(b.Usable, want) {
		t.Errorf("failing gate: usable %v, want %v", b.Usable, want)
	}
}

// TestJudgeBatchFrom: items a prelude makes in the run are judged as
// given ones are, and its data comes back; a failing prelude is an error.
func TestJudgeBatchFrom(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := mbpp(addTests...)
	prelude := `def cf_items(arg):
    codes = ["def f(a, b):\n    return a %s b\n" % op for op in arg["ops"]]
    return {"made": len(codes)}, [{"code": c, "group": "g", "accept": ["wrong_answer"]} for c in codes]
`
	b, err := harness.JudgeBatchFrom(ctx, ex, p, harness.Options{}, prelude, map[string]any{"ops": []string{"+", "*", "-"}}, harness.BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Data) != `{"made": 3}` || len(b.Items) != 3 || b.Items[1].Code != "def f(a, b):\n    return a * b\n" {
		t.Fatalf("data %s, items %+v", b.Data, b.Items)
	}
	if want := []bool{true, true, false}; !slices.Equal(b.Usable, want) {
		t.Errorf("usable %v, want %v (the third is past the group's quota)", b.Usable, want)
	}
	for i := range 2 {
		alone, err := harness.Judge(ctx, ex, p, b.Items[i].Code, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sameVerdict(t, b.Items[i].Code, b.Verdicts[i], alone)
	}
	_, err = harness.JudgeBatchFrom(ctx, ex, p, harness.Options{}, "def cf_items(arg):\n    raise ValueError('no')\n", 0, harness.BatchOptions{})
	if !errors.Is(err, harness.ErrBatchPrelude) || !strings.Contains(err.Error(), "ValueError: no") {
		t.Errorf("failing prelude: err %v, want ErrBatchPrelude with the traceback", err)
	}
}
