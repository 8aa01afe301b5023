package verify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

func sandbox(t testing.TB) executors.Executor {
	return sandboxtest.Open(t, "CODEFEEDBACK_VERIFY_SANDBOX", "")
}

func msgs(spec ...string) []schema.Message {
	var out []schema.Message
	for _, s := range spec {
		role, content, _ := strings.Cut(s, ":")
		out = append(out, schema.Message{Role: role, Content: content})
	}
	return out
}

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    []schema.Message
		want []int // turns with a mismatch
	}{
		{"plain", msgs("user:q", "assistant:a"), nil},
		{"system first", msgs("system:s", "user:q", "assistant:a", "execution:out", "assistant:ok"), nil},
		{"code-feedback execution as user", msgs("user:q", "assistant:a", "user:Execution result: \n42", "assistant:ok"), nil},
		{"two users", msgs("user:q", "user:q2", "assistant:a"), []int{1}},
		{"two assistants", msgs("user:q", "assistant:a", "assistant:b"), []int{2}},
		{"execution after user", msgs("user:q", "execution:out", "assistant:a"), []int{1}},
		{"unanswered end", msgs("user:q", "assistant:a", "user:more"), []int{2}},
		{"starts with assistant", msgs("assistant:a", "user:q", "assistant:b"), []int{0}},
		{"late system", msgs("user:q", "system:s", "assistant:a"), []int{1}},
	} {
		got := Roles(&schema.Dialogue{ID: "d", Messages: tc.m})
		var turns []int
		for _, m := range got {
			turns = append(turns, m.Turn)
		}
		if len(turns) != len(tc.want) || (len(turns) > 0 && turns[0] != tc.want[0]) {
			t.Errorf("%s: mismatches at %v (%v), want at %v", tc.name, turns, got, tc.want)
		}
	}
}

func TestExceptionIn(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"Traceback (most recent call last):\n  File \"x\", line 1\nNameError: name 'x' is not defined", "NameError"},
		{"\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)\nCell In[1], line 1\n----> 1 1/0\n", "ZeroDivisionError"},
		{"  Cell In[2], line 2\n    x = \\\"\\\"\n         ^\nSyntaxError: unexpected character after line continuation character\n", "SyntaxError"},
		{"array([[0.3], [1.6]])", ""},
		{"The Error rate is 3", ""},
	} {
		if got := exceptionIn(tc.text); got != tc.want {
			t.Errorf("exceptionIn(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// simulated builds two real dialogues with the simulate stage's loop: a
// notebook one (NameError, then a fix that uses the first cell's state) and
// a tests one (wrong answer, then a pass).
func simulated(t *testing.T, ex executors.Executor) []schema.Dialogue {
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		if strings.Contains(c.LastUser(), "You check whether") {
			return llmtest.Reply{Text: `{"correct": true, "reason": "ok"}`}
		}
		answers := 0
		for _, m := range c.Request.Messages {
			if m.Role == "assistant" {
				answers++
			}
		}
		task := c.Request.Messages[1].Content
		switch {
		case strings.Contains(task, "add") && answers == 0:
			return llmtest.Reply{Text: "```python\ndef add(a, b):\n    return a - b\n```"}
		case strings.Contains(task, "add"):
			return llmtest.Reply{Text: "```python\ndef add(a, b):\n    return a + b\n```"}
		case answers == 0:
			return llmtest.Reply{Text: "```python\nx = 6 * 7\nprint(y)\n```"}
		}
		return llmtest.Reply{Text: "```python\nprint(x)\n```"}
	})
	cl, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake"}}, llm.Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := feedbackloop.New(feedbackloop.Options{FeedbackRounds: 0}, cl, cl, nil, ex)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.Dialogue
	p := schema.Problem{Query: schema.Query{ID: "p", Text: "Write add."}, Tests: []string{"assert add(1, 2) == 3"}}
	for _, task := range []feedbackloop.Task{{ID: "q", Turns: []feedbackloop.Turn{{Text: "Compute 6*7 and print it."}}}} {
		r, err := s.Run(context.Background(), task)
		if err != nil || !r.Passed {
			t.Fatalf("simulate: %v %v", err, r.Reason)
		}
		out = append(out, r.Dialogue)
	}
	task, _ := s.TaskFromProblem(p)
	r, err := s.Run(context.Background(), task)
	if err != nil || !r.Passed {
		t.Fatalf("simulate: %v %v", err, r.Reason)
	}
	return append(out, r.Dialogue)
}

func TestSimulatedDialoguesVerify(t *testing.T) {
	ex := sandbox(t)
	ds := simulated(t, ex)
	c := &Checker{Exec: ex}
	for _, d := range ds {
		rep, err := c.Dialogue(context.Background(), &d)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Mismatches) != 0 || rep.Executions != 2 || rep.Agreed != 2 {
			t.Errorf("%s: report %+v, want 2 agreeing re-runs and no mismatch", d.ID, rep)
		}
	}

	// Tampered records must be caught, at the tampered turn.
	for _, tc := range []struct {
		name   string
		d      int
		tamper func(e *schema.Execution)
	}{
		{"cell exception renamed", 0, func(e *schema.Execution) { e.Exception = "TypeError" }},
		{"tests verdict flipped", 1, func(e *schema.Execution) { v := true; e.Passed = &v }},
	} {
		d := ds[tc.d]
		d.Messages = append([]schema.Message(nil), d.Messages...)
		first := -1
		for i := range d.Messages {
			if d.Messages[i].Exec != nil {
				e := *d.Messages[i].Exec
				tc.tamper(&e)
				d.Messages[i].Exec = &e
				first = i
				break
			}
		}
		rep, err := c.Dialogue(context.Background(), &d)
		if err != nil {
			t.Fatal(err)
		}
		// A flipped verdict also renders another text than the turn shows.
		rerun := 0
		for _, m := range rep.Mismatches {
			if m.Turn != first {
				t.Errorf("%s: mismatch at turn %d, want only turn %d: %v", tc.name, m.Turn, first, m)
			}
			if m.Check == CheckRerun {
				rerun++
			}
		}
		if rerun != 1 {
			t.Errorf("%s: mismatches %v, want one re-run mismatch at turn %d", tc.name, rep.Mismatches, first)
		}
	}
}

func TestPlainCodeFeedback(t *testing.T) {
	ex := sandbox(t)
	honest := schema.Dialogue{ID: "honest", Messages: []schema.Message{
		{Role: "user", Content: "Divide."},
		{Role: "assistant", Content: "```python\nx = 10\nprint(x / 0)\n```"},
		{Role: "user", Content: "Execution result: \n---------------------------------------------------------------------------\nZeroDivisionError                         Traceback (most recent call last)\nCell In[1], line 2\n----> 2 print(x / 0)\n\nZeroDivisionError: division by zero"},
		{Role: "assistant", Content: "Use a non-zero divisor:\n```python\nprint(x / 2)\n```"},
		{Role: "user", Content: "Execution result: \n5.0"},
		{Role: "assistant", Content: "Done."},
	}}
	liar := schema.Dialogue{ID: "liar", Messages: []schema.Message{
		{Role: "user", Content: "Print a value."},
		{Role: "assistant", Content: "```python\nprint(undefined_value)\n```"},
		{Role: "user", Content: "Execution result: \n42"},
		{Role: "assistant", Content: "```python\ndef broken(:\n    pass\n```"},
	}}
	c := &Checker{Exec: ex}
	rep, err := c.Dataset(context.Background(), func(yield func(*schema.Dialogue, error) bool) {
		if yield(&honest, nil) {
			yield(&liar, nil)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Executions != 3 || rep.Agreed != 2 {
		t.Errorf("executions %d agreed %d, want 3 and 2", rep.Executions, rep.Agreed)
	}
	want := []string{"liar/2/rerun", "liar/3/parse"}
	var got []string
	for _, m := range rep.Mismatches {
		got = append(got, m.DialogueID+"/"+strconv.Itoa(m.Turn)+"/"+m.Check)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("mismatches %v, want %v", rep.Mismatches, want)
	}
}

// TestCodeFeedbackSample verifies the real Code-Feedback records: they must
// be read and checked without sandbox errors; what they show is logged.
func TestCodeFeedbackSample(t *testing.T) {
	path := sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
	c := &Checker{Exec: sandbox(t)}
	rep, err := c.Dataset(context.Background(), leak.ReadDialogues(context.Background(), path))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dialogues != 10 || rep.Blocks == 0 {
		t.Errorf("report %+v, want 10 dialogues with code blocks compiled", rep)
	}
	t.Logf("sample: %d dialogues, %d blocks, %d executions re-run, %d agreed, %d unverifiable", rep.Dialogues, rep.Blocks, rep.Executions, rep.Agreed, len(rep.Unverifiable))
	for _, m := range rep.Mismatches {
		t.Logf("mismatch: %s", m)
	}
	for _, u := range rep.Unverifiable {
		t.Logf("unverifiable: %s turn %d: %s", u.DialogueID, u.Turn, u.Reason)
	}
}

// TestJudgeRecords re-runs test-program records: the harness's judge
// programs (including a timeout of its per-test timer, and one recorded by
// an earlier harness that wrote such timeouts without TimedOut) and a plain
// test script; a record whose exception was changed is caught.
func TestJudgeRecords(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := schema.Problem{Query: schema.Query{ID: "p"}, Tests: []string{"assert f(1, 2) == 3"}}
	opts := harness.Options{Timeout: 3 * time.Second, CaseTimeout: time.Second}
	judged := func(code string) *schema.Execution {
		v, err := harness.Judge(ctx, ex, p, code, opts)
		if err != nil {
			t.Fatal(err)
		}
		e := v.Execution()
		return &e
	}
	failed := false
	loop := judged("def f(a, b):\n    while True:\n        pass\n")
	earlier := *loop
	earlier.TimedOut = false // as an earlier harness recorded it
	name := judged("def f(a, b):\n    return a + c\n")
	renamed := *name
	renamed.Exception = "TypeError"
	for _, tc := range []struct {
		name     string
		e        *schema.Execution
		mismatch bool
	}{
		{"pass", judged("def f(a, b):\n    return a + b\n"), false},
		{"per-test timeout", loop, false},
		{"per-test timeout, earlier record", &earlier, false},
		{"name error", name, false},
		{"exception renamed", &renamed, true},
		{"plain test script", &schema.Execution{Language: "python", Code: "import sys\nsys.exit(1)\n", Passed: &failed, ExitCode: 1, TimeoutMS: 2000}, false},
	} {
		d := schema.Dialogue{ID: tc.name, Messages: []schema.Message{
			{Role: "user", Content: "Write f."},
			{Role: "assistant", Content: "```python\n" + tc.e.Code + "```"}, // the code the record ran
			{Role: "execution", Content: "output", Exec: tc.e},
			{Role: "assistant", Content: "Done."},
		}}
		if text, ok := harness.RenderRecorded(*tc.e); ok {
			d.Messages[2].Content = text
		}
		rep, err := (&Checker{Exec: ex}).Dialogue(ctx, &d)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rep.Executions != 1 || (len(rep.Mismatches) == 1) != tc.mismatch || len(rep.Mismatches) > 1 {
			t.Errorf("%s: executions %d, mismatches %v, want 1 execution and mismatch %v", tc.name, rep.Executions, rep.Mismatches, tc.mismatch)
		}
	}
}

// TestTextAndRecordEdits: on a native dialogue, an edited visible execution
// text is caught without a re-run, and so is a record whose tests were
// edited (it no longer rebuilds its program); the untouched dialogue has
// no mismatch.
func TestTextAndRecordEdits(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := schema.Problem{Query: schema.Query{ID: "p"}, Tests: []string{"assert f(1, 2) == 3", "assert f(2, 2) == 4"}}
	v, err := harness.Judge(ctx, ex, p, "def f(a, b):\n    return a * b\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := v.Execution()
	dialogue := func() schema.Dialogue {
		ec := e
		return schema.Dialogue{ID: "d", Messages: []schema.Message{
			{Role: "user", Content: "Write f."},
			{Role: "assistant", Content: "```python\ndef f(a, b):\n    return a * b\n```"},
			{Role: "execution", Content: strings.TrimRight(v.Feedback, "\n"), Exec: &ec},
			{Role: "assistant", Content: "Fixed."},
		}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(d *schema.Dialogue)
		check string // without a re-run
		rerun string // with one
	}{
		{"untouched", func(*schema.Dialogue) {}, "", ""},
		{"text edited", func(d *schema.Dialogue) {
			d.Messages[2].Content = strings.Replace(d.Messages[2].Content, "got 2", "got 3", 1)
		}, CheckText, CheckText + "," + CheckOutput},
		{"tests edited", func(d *schema.Dialogue) {
			j := *d.Messages[2].Exec.Judge
			j.Tests = []string{"assert f(1, 2) == 2"}
			d.Messages[2].Exec.Judge = &j
		}, "", CheckRecord},
		{"code edited", func(d *schema.Dialogue) {
			d.Messages[1].Content = strings.Replace(d.Messages[1].Content, "a * b", "a + b", 1)
		}, "", CheckCode},
	} {
		d := dialogue()
		tc.edit(&d)
		for _, noRerun := range []bool{true, false} {
			want := tc.rerun
			if noRerun {
				want = tc.check
			}
			rep, err := (&Checker{Exec: ex, Opts: Options{NoRerun: noRerun}}).Dialogue(ctx, &d)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range rep.Mismatches {
				got = append(got, m.Check)
			}
			if strings.Join(got, ",") != want {
				t.Errorf("%s (no re-run %v): mismatches %v, want %q", tc.name, noRerun, rep.Mismatches, want)
			}
			if rep.Texts != 1 {
				t.Errorf("%s: %d texts checked, want 1", tc.name, rep.Texts)
			}
		}
	}
}

// TestPlainTestVerdicts: in the Code-Feedback layout a test verdict whose
// request does not show the tests cannot be re-run: it is counted with its
// reason, never a mismatch; a compile failure and an exception while
// loading are what the code does on its own and are re-run and compared.
func TestPlainTestVerdicts(t *testing.T) {
	ex := sandbox(t)
	p := schema.Problem{Query: schema.Query{ID: "f"}, Tests: []string{"assert f(1, 2) == 3", "assert f(2, 2) == 4"}}
	var msgs []schema.Message
	msgs = append(msgs, schema.Message{Role: "user", Content: "Write f."})
	for _, code := range []string{"def f(a, b):\n    return a * b\n", "def f(a, b)\n    return a + b\n", "x = 1 / 0\n", "def f(a, b):\n    return a + b\n"} {
		v, err := harness.Judge(context.Background(), ex, p, code, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, schema.Message{Role: "assistant", Content: "```python\n" + code + "```"},
			schema.Message{Role: "user", Content: schema.ExecutionPrefix + strings.TrimRight(v.Feedback, "\n")})
	}
	d := schema.Dialogue{ID: "cf", Messages: append(msgs, schema.Message{Role: "assistant", Content: "Done."})}
	rep, err := (&Checker{Exec: ex}).Dialogue(context.Background(), &d)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Executions != 2 || rep.Agreed != 2 || len(rep.Unverifiable) != 2 {
		t.Errorf("report %+v, want 2 agreeing re-runs, 2 unverifiable test verdicts, no mismatch", rep)
	}
	for _, u := range rep.Unverifiable {
		if u.Reason != whyNoTests || (u.Turn != 2 && u.Turn != 8) {
			t.Errorf("unverifiable turn %d: reason %q, want turns 2 and 8: %q", u.Turn, u.Reason, whyNoTests)
		}
	}
}

// runnerPatch is a notebook cell that patches the session runner's own
// objects so that every later cell of the session reports success.
const runnerPatch = `import gc
try:
    _objs = gc.get_objects()  # refused in a session cell: the kernel keeps gc's walks
except RuntimeError:
    _objs = []
for _o in _objs:
    if type(_o).__name__ == "Session" and hasattr(_o, "python_cell"):
        _o.python_cell = lambda code: 0
print("patched")`

// pythonSession opens a Python session with a 10 s cell limit; the caller
// closes it, so the sandbox it holds is free for what the test runs next.
func pythonSession(t *testing.T, ex executors.Executor) executors.Session {
	t.Helper()
	sess, err := ex.Open(context.Background(), executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// runnerReachable probes whether a cell can still change the outcome the
// runner reports for the next cell of its session.
func runnerReachable(t *testing.T, ex executors.Executor) bool {
	t.Helper()
	ctx := context.Background()
	sess := pythonSession(t, ex)
	defer sess.Close()
	if _, err := sess.Exec(ctx, runnerPatch); err != nil {
		t.Fatal(err)
	}
	res, err := sess.Exec(ctx, "assert 1 == 2")
	if err != nil {
		t.Fatal(err)
	}
	return res.OK()
}

// TestForgedRunnerPatch: a 6-message Code-Feedback file whose first code
// block patches the runner and whose second is `assert 1 == 2` with a
// recorded pass must be reported, the dialogue verified in sessions of its
// own.
func TestForgedRunnerPatch(t *testing.T) {
	ex := sandbox(t)
	forged := `{"id": 1, "messages": [` +
		`{"role": "user", "content": "Check that 1 equals 2."},` +
		`{"role": "assistant", "content": "First some set-up:\n` + "```python\\n" + strings.ReplaceAll(strings.ReplaceAll(runnerPatch, `"`, `\"`), "\n", `\n`) + "\\n```" + `"},` +
		`{"role": "user", "content": "Execution result: \npatched"},` +
		`{"role": "assistant", "content": "Now the check:\n` + "```python\\nassert 1 == 2\\n```" + `"},` +
		`{"role": "user", "content": "Execution result: \n[the code ran without printing anything]"},` +
		`{"role": "assistant", "content": "1 equals 2."}]}` + "\n"
	path := filepath.Join(t.TempDir(), "forged.jsonl")
	if err := os.WriteFile(path, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	if runnerReachable(t, ex) {
		t.Skip("needs the sandbox fix of issue 31 (branch sandbox: the session runner out of the cell's reach): a cell still patches the runner here, so the re-run itself is forged")
	}
	rep := verifyFile(t, &Checker{Exec: ex}, path)
	if rep.Dialogues != 1 || rep.Executions != 2 || len(rep.Mismatches) != 1 || rep.Mismatches[0].Turn != 4 || rep.Mismatches[0].Check != CheckRerun {
		t.Errorf("report %+v, want the pass recorded at turn 4 reported as a re-run mismatch", rep)
	}
}

// TestFreshSessionPerDialogue: a dialogue's cells share their session, but
// no state crosses into the next dialogue: a value printed there from an
// earlier dialogue's cell is reported.
func TestFreshSessionPerDialogue(t *testing.T) {
	ex := sandbox(t)
	cf := func(id, request string, cells ...string) *schema.Dialogue {
		d := &schema.Dialogue{ID: id, Messages: []schema.Message{{Role: "user", Content: request}}}
		for i := 0; i+1 < len(cells); i += 2 {
			d.Messages = append(d.Messages, schema.Message{Role: "assistant", Content: "```python\n" + cells[i] + "\n```"},
				schema.Message{Role: "user", Content: schema.ExecutionPrefix + cells[i+1]})
		}
		d.Messages = append(d.Messages, schema.Message{Role: "assistant", Content: "Done."})
		return d
	}
	ds := []*schema.Dialogue{
		cf("a", "Set a value and use it.", "leak = 41", "[the code ran without printing anything]", "print(leak + 1)", "42"),
		cf("b", "Print the value.", "print(leak + 1)", "42"),
	}
	rep, err := (&Checker{Exec: ex, Opts: Options{Parallel: 1}}).Dataset(context.Background(), func(yield func(*schema.Dialogue, error) bool) {
		for _, d := range ds {
			if !yield(d, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Executions != 3 || rep.Agreed != 2 || len(rep.Mismatches) != 1 || rep.Mismatches[0].DialogueID != "b" || rep.Mismatches[0].Rerun != "NameError" {
		t.Errorf("report %+v, want a's two cells agreeing and b's reported (NameError in a fresh session)", rep)
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"took 0.52s", "took 1.3s", true},
		// trainer layouts trim a turn: a SyntaxError's first line loses its indent
		{"  File \"<cell-1>\", line 5\n    return not (", "File \"<cell-1>\", line 5\n    return not (", true},
		{"File \"<cell-1>\", line 5\n    return not (", "File \"<cell-1>\", line 5\nreturn not (", false},
		{"elapsed 12 ms\n", "elapsed 7 ms", true},
		{"Execution timed out after 2s.", "Execution timed out after 10s.", true},
		{"<__main__.Node object at 0x7f3a2c1b4d90>", "<__main__.Node object at 0x7f11aa0b2e50>", true},
		{"now 2026-12-04 21:49:04.2036", "now 2025-01-01 00:00:00.1", true},
		{"\x1b[0;31mZeroDivisionError\x1b[0m  \r\n", "ZeroDivisionError", true},
		{"42", "41", false},
		{"0x3e418", "0x3e419", false},
		{"got -1", "got -2", false},
		{"a3b1c2", "a3b1c3", false},
	} {
		if got := sameOutput(tc.a, tc.b); got != tc.same {
			t.Errorf("sameOutput(%q, %q) = %v, want %v (normalised %q and %q)", tc.a, tc.b, got, tc.same, normalize(tc.a), normalize(tc.b))
		}
	}
}

// TestStoredRecordsForHiddenTests: a trainer-layout test verdict whose
// request shows no tests is re-run from the stored native record when that
// record ran the code the turn shows; a rewritten verdict is then caught,
// and a turn whose code is not the record's says why it is not re-run.
func TestStoredRecordsForHiddenTests(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	p := schema.Problem{Query: schema.Query{ID: "f"}, Tests: []string{"assert f(1, 2) == 3", "assert f(2, 2) == 4"}}
	native := schema.Dialogue{ID: "lc", Messages: []schema.Message{{Role: "user", Content: "Write f."}}}
	trainer := schema.Dialogue{ID: "lc", Messages: []schema.Message{{Role: "user", Content: "Write f."}}}
	var feedback []string
	for _, code := range []string{"def f(a, b):\n    return a * b\n", "def f(a, b):\n    return a + b\n"} {
		v, err := harness.Judge(ctx, ex, p, code, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := v.Execution()
		text := strings.TrimRight(v.Feedback, "\n")
		feedback = append(feedback, text)
		asst := schema.Message{Role: "assistant", Content: "```python\n" + code + "```"}
		native.Messages = append(native.Messages, asst, schema.Message{Role: "execution", Content: text, Exec: &e})
		trainer.Messages = append(trainer.Messages, asst, schema.Message{Role: "user", Content: schema.ExecutionPrefix + text})
	}
	native.Messages = append(native.Messages, schema.Message{Role: "assistant", Content: "Done."})
	trainer.Messages = append(trainer.Messages, schema.Message{Role: "assistant", Content: "Done."})
	stored := func(id string) *schema.Dialogue {
		if id == native.ID {
			return &native
		}
		return nil
	}
	clone := func(d schema.Dialogue) *schema.Dialogue {
		d.Messages = append([]schema.Message(nil), d.Messages...)
		return &d
	}

	rep, err := (&Checker{Exec: ex, Opts: Options{Stored: stored}}).Dialogue(ctx, clone(trainer))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 0 || rep.Agreed != 2 || len(rep.Unverifiable) != 0 {
		t.Errorf("untouched: got %d agreed, mismatches %v, unverifiable %v; want 2 agreed from the stored records", rep.Agreed, rep.Mismatches, rep.Unverifiable)
	}

	rewritten := clone(trainer)
	rewritten.Messages[2].Content = schema.ExecutionPrefix + feedback[1] // the failing run shown as passing
	rep, err = (&Checker{Exec: ex, Opts: Options{Stored: stored}}).Dialogue(ctx, rewritten)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) != 1 || rep.Mismatches[0].Turn != 2 {
		t.Errorf("rewritten verdict: got mismatches %v, want one at turn 2", rep.Mismatches)
	}

	edited := clone(trainer)
	edited.Messages[3].Content = "```python\ndef f(a, b):\n    return b + a\n```"
	rep, err = (&Checker{Exec: ex, Opts: Options{Stored: stored}}).Dialogue(ctx, edited)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unverifiable) != 1 || rep.Unverifiable[0].Turn != 4 || !strings.Contains(rep.Unverifiable[0].Reason, "other code than the turn shows") {
		t.Errorf("edited code: got unverifiable %v, want turn 4 with the reason that the record ran other code", rep.Unverifiable)
	}

	rep, err = (&Checker{Exec: ex}).Dialogue(ctx, clone(trainer))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Unverifiable) != 2 || rep.Unverifiable[0].Reason != whyNoTests {
		t.Errorf("without stored records: got unverifiable %v, want both verdicts with %q", rep.Unverifiable, whyNoTests)
	}
}
