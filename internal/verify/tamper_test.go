package verify

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
	_ "github.com/codefeedback/codefeedback/stages/correct" // the stage correctDialogues runs
)

// layout is one file layout export and the pipeline's outputs write.
type layout struct {
	name string
	ext  string
	opts schema.ExportOptions
}

// layouts lists every layout (TestLayoutsCoverOutputs keeps it complete).
var layouts = []layout{
	{"codefeedback", ".jsonl", schema.ExportOptions{To: schema.ExportCodeFeedback}},
	{"codefeedback-parquet", ".parquet", schema.ExportOptions{To: schema.ExportCodeFeedback}},
	{"codefeedback-turns", ".jsonl", schema.ExportOptions{To: schema.ExportCodeFeedback, Split: schema.SplitTurns}},
	{"native", ".jsonl", schema.ExportOptions{To: schema.ExportNative}},
	{"native-parquet", ".parquet", schema.ExportOptions{To: schema.ExportNative}},
	{"native-turns", ".jsonl", schema.ExportOptions{To: schema.ExportNative, Split: schema.SplitTurns}},
	{"sharegpt", ".jsonl", schema.ExportOptions{To: schema.ExportShareGPT}},
	{"sharegpt-tool", ".jsonl", schema.ExportOptions{To: schema.ExportShareGPT, ExecAs: schema.ExecAsTool}},
	{"sharegpt-turns", ".jsonl", schema.ExportOptions{To: schema.ExportShareGPT, Split: schema.SplitTurns}},
	{"openai", ".jsonl", schema.ExportOptions{To: schema.ExportOpenAI}},
	{"openai-weights", ".jsonl", schema.ExportOptions{To: schema.ExportOpenAI, Split: schema.SplitWeights}},
	{"openai-turns", ".jsonl", schema.ExportOptions{To: schema.ExportOpenAI, Split: schema.SplitTurns}},
	{"openai-tools", ".jsonl", schema.ExportOptions{To: schema.ExportOpenAITools}},
	{"openai-tools-turns", ".jsonl", schema.ExportOptions{To: schema.ExportOpenAITools, Split: schema.SplitTurns}},
}

// TestLayoutsCoverOutputs: every output layout the pipeline can write is in
// the matrix, so a new layout cannot go unverified. The training records
// (dpo, kto, rl) are not dialogues: each holds one judged attempt. That
// every record re-runs in the sandbox with 0 mismatches is tested with
// their writers in schema; tampering with them is not tested yet.
func TestLayoutsCoverOutputs(t *testing.T) {
	training := map[schema.ExportFormat]bool{schema.ExportDPO: true, schema.ExportKTO: true, schema.ExportRL: true}
	for name, o := range schema.OutputLayouts() {
		if training[o.To] {
			continue
		}
		file := "x.jsonl"
		if name == "parquet" {
			file = "x.parquet"
		}
		want, err := o.Normalize(file)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range layouts {
			got, err := l.opts.Normalize("x" + l.ext)
			if err == nil && got.To == want.To && got.ExecAs == want.ExecAs && got.Split == want.Split && filepath.Ext(file) == l.ext {
				found = true
			}
		}
		if !found {
			t.Errorf("output layout %s (%+v) is not in the tamper matrix", name, want)
		}
	}
}

// sample is one case's dialogue as written: which samples of the file are
// its own.
type sample struct {
	id         string
	start, end int // sample ordinals in the file
}

// export writes ds in l to a file in dir and returns its path and where
// each dialogue's samples are.
func export(t *testing.T, dir string, l layout, ds []schema.Dialogue) (string, []sample) {
	t.Helper()
	path := filepath.Join(dir, l.name+l.ext)
	w, err := schema.NewDialogueWriter(path, l.opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for i := range ds {
		start := w.Samples()
		if err := w.Write(&ds[i]); err != nil {
			t.Fatal(err)
		}
		out = append(out, sample{ds[i].ID, start, w.Samples()})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, out
}

// owner maps a report's sample id to the dialogue it came from: OpenAI
// lines have no id ("line-N" on reading), split samples are "<id>#k".
func owner(id string, samples []sample) string {
	if n, ok := strings.CutPrefix(id, "line-"); ok {
		k, _ := strconv.Atoi(n)
		for _, s := range samples {
			if k-1 >= s.start && k-1 < s.end {
				return s.id
			}
		}
	}
	base, _, _ := strings.Cut(id, "#")
	return base
}

func verifyFile(t *testing.T, c *Checker, path string) Report {
	t.Helper()
	rep, err := c.Dataset(context.Background(), schema.ReadShipped(context.Background(), path))
	if err != nil {
		t.Fatalf("verify %s: %v", path, err)
	}
	return rep
}

// clone deep-copies a dialogue, records included.
func clone(d schema.Dialogue) schema.Dialogue {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	var out schema.Dialogue
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

var addProblem = schema.Problem{Query: schema.Query{ID: "add", Text: "Write a function add(a, b) that returns the sum of a and b."},
	Tests: []string{"assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"}}

// addPrompt is addProblem's first turn as correct writes it: the text,
// then its tests in a python block.
const addPrompt = "Write a function add(a, b) that returns the sum of a and b.\nYour code should pass these tests:\n\n" +
	"```python\nassert add(1, 2) == 3\nassert add(2, 2) == 4\nassert add(0, 0) == 0\n```"

const (
	addBug = "def add(a, b):\n    print('adding', a, b)\n    return a - b\n"
	addFix = "def add(a, b):\n    return a + b\n"
)

// judgedDialogue is a test-judged dialogue as correct writes one: the
// request with its tests, a buggy answer, its real verdict, the fix, its
// real verdict, a closing turn.
func judgedDialogue(t *testing.T, ex executors.Executor, id string) schema.Dialogue {
	t.Helper()
	judge := func(code string) schema.Message {
		v, err := harness.Judge(context.Background(), ex, addProblem, code, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := v.Execution()
		return schema.Message{Role: schema.RoleExecution, Content: strings.TrimRight(v.Feedback, "\n"), Exec: &e}
	}
	return schema.Dialogue{ID: id, Stage: "correct", Messages: []schema.Message{
		{Role: schema.RoleUser, Content: addPrompt},
		{Role: schema.RoleAssistant, Content: "Here is `add`:\n\n```python\n" + addBug + "```"},
		judge(addBug),
		{Role: schema.RoleAssistant, Content: "It subtracts. The corrected code:\n\n```python\n" + addFix + "```"},
		judge(addFix),
		{Role: schema.RoleAssistant, Content: "All 3 tests pass now."},
	}}
}

var notebookCells = []string{"x = 6 * 7\nprint(x)", "y = x + 1\nprint(y)\nprint(y / 0)"}

// notebookDialogue is a notebook dialogue as simulate writes one: each
// cell the next of one session, its real output rendered as the turn.
func notebookDialogue(t *testing.T, ex executors.Executor, id string) schema.Dialogue {
	return notebookDialogueWith(t, ex, id, "")
}

// notebookDialogueWith is notebookDialogue with more text after the first
// cell: another block there is shown, not run (simulate runs the first).
func notebookDialogueWith(t *testing.T, ex executors.Executor, id, more string) schema.Dialogue {
	t.Helper()
	ctx := context.Background()
	sess := pythonSession(t, ex)
	defer sess.Close()
	d := schema.Dialogue{ID: id, Stage: "simulate", Messages: []schema.Message{{Role: schema.RoleUser, Content: "Compute 6*7, then divide the next number by zero."}}}
	for k, cell := range notebookCells {
		res, err := sess.Exec(ctx, cell)
		if err != nil {
			t.Fatal(err)
		}
		e := schema.Execution{Language: "python", Code: cell, Driver: res.Driver, TimeoutMS: 10000, ExitCode: res.ExitCode,
			Exception: res.Exception, ErrorLine: res.ErrorLine, Stdout: res.Stdout, Stderr: res.Stderr}
		d.Messages = append(d.Messages,
			schema.Message{Role: schema.RoleAssistant, Content: "Let me run it:\n```python\n" + cell + "\n```" + map[bool]string{true: more}[k == 0]},
			schema.Message{Role: schema.RoleExecution, Content: feedbackloop.RenderResult(res, 10*time.Second, 2000), Exec: &e})
	}
	d.Messages = append(d.Messages, schema.Message{Role: schema.RoleAssistant, Content: "Dividing by zero raises ZeroDivisionError."})
	return d
}

// tamper is one edit of a dialogue. withRecord edits the native record
// to agree with the edited text where the edit allows (so that only a
// re-run can tell).
type tamper struct {
	name string
	edit func(t *testing.T, d *schema.Dialogue, withRecord bool)
}

func replaceIn(t *testing.T, d *schema.Dialogue, turn int, old, new string) {
	t.Helper()
	m := &d.Messages[turn]
	if !strings.Contains(m.Content, old) {
		t.Fatalf("turn %d does not show %q: %q", turn, old, m.Content)
	}
	m.Content = strings.Replace(m.Content, old, new, 1)
}

// recode edits the visible code of an assistant turn and, with withRecord,
// the code of the record that ran it.
func recode(t *testing.T, d *schema.Dialogue, turn int, old, new string, withRecord bool) {
	t.Helper()
	replaceIn(t, d, turn, old, new)
	if e := d.Messages[turn+1].Exec; withRecord && e != nil {
		e.Code = strings.Replace(e.Code, old, new, 1)
	}
}

func swap(d *schema.Dialogue, i, j int) {
	d.Messages[i], d.Messages[j] = d.Messages[j], d.Messages[i]
}

// judgedTampers edit judgedDialogue: turns 1 and 3 show the buggy and the
// fixed code, 2 and 4 their verdicts.
var judgedTampers = []tamper{
	{"edited output value", func(t *testing.T, d *schema.Dialogue, rec bool) {
		replaceIn(t, d, 2, "expected 3, got -1", "expected 3, got -2")
		if e := d.Messages[2].Exec; rec && e != nil {
			e.Judge.Shown[0].Actual = "-2"
		}
	}},
	{"edited printed value", func(t *testing.T, d *schema.Dialogue, rec bool) {
		replaceIn(t, d, 2, "adding 1 2", "adding 1 3")
		if e := d.Messages[2].Exec; rec && e != nil {
			e.Stdout = strings.Replace(e.Stdout, "adding 1 2", "adding 1 3", 1)
		}
	}},
	{"failure rewritten as a pass", func(t *testing.T, d *schema.Dialogue, rec bool) {
		m := &d.Messages[2]
		if e := m.Exec; rec && e != nil {
			pass := true
			e.Passed, e.Exception, e.ErrorLine = &pass, "", ""
			e.Judge.PassedCount, e.Judge.Shown = e.Judge.Total, nil
			m.Content, _ = harness.RenderRecorded(*e)
			return
		}
		m.Content = "All 3 tests passed.\n\nOutput printed by the code:\nadding 1 2\nadding 2 2\nadding 0 0"
	}},
	{"pass rewritten as another verdict", func(t *testing.T, d *schema.Dialogue, rec bool) {
		m := &d.Messages[4]
		m.Content = "1 of 3 tests failed.\n\nTest failed for input add(0, 0): expected 0, got 1\n    assert add(0, 0) == 0"
		if e := m.Exec; rec && e != nil {
			fail := false
			e.Passed, e.Exception, e.ErrorLine = &fail, "AssertionError", ""
			e.Judge.PassedCount = 2
			e.Judge.Shown = []schema.JudgeCase{{Test: "assert add(0, 0) == 0", Kind: "wrong_answer", Input: "add(0, 0)", Expected: "0", Actual: "1", Op: "=="}}
			m.Content, _ = harness.RenderRecorded(*e)
		}
	}},
	{"edited final code block", func(t *testing.T, d *schema.Dialogue, rec bool) {
		recode(t, d, 3, "return a + b", "return a + b + 1", rec)
	}},
	{"edited intermediate code block", func(t *testing.T, d *schema.Dialogue, rec bool) {
		recode(t, d, 1, "return a - b", "return a + b", rec)
	}},
	{"executions swapped", func(t *testing.T, d *schema.Dialogue, rec bool) { swap(d, 2, 4) }},
}

// notebookTampers edit notebookDialogue: turns 1 and 3 show the cells, 2
// and 4 their outputs ("42"; "43" and a ZeroDivisionError).
var notebookTampers = []tamper{
	{"edited output value", func(t *testing.T, d *schema.Dialogue, rec bool) {
		replaceIn(t, d, 2, "42", "41")
		if e := d.Messages[2].Exec; rec && e != nil {
			e.Stdout = "41\n"
		}
	}},
	{"edited printed value, same outcome", func(t *testing.T, d *schema.Dialogue, rec bool) {
		replaceIn(t, d, 4, "43", "44")
		if e := d.Messages[4].Exec; rec && e != nil {
			e.Stdout = "44\n"
		}
	}},
	{"failure rewritten as a pass", func(t *testing.T, d *schema.Dialogue, rec bool) {
		m := &d.Messages[4]
		m.Content = "43\nInfinity"
		if e := m.Exec; rec && e != nil {
			e.ExitCode, e.Exception, e.ErrorLine, e.Stdout, e.Stderr = 0, "", "", "43\nInfinity\n", ""
		}
	}},
	{"exception renamed", func(t *testing.T, d *schema.Dialogue, rec bool) {
		replaceIn(t, d, 4, "ZeroDivisionError: division by zero", "ValueError: division by zero")
		if e := d.Messages[4].Exec; rec && e != nil {
			e.Exception = "ValueError"
			e.Stderr = strings.Replace(e.Stderr, "ZeroDivisionError", "ValueError", 1)
		}
	}},
	{"edited final code block", func(t *testing.T, d *schema.Dialogue, rec bool) {
		recode(t, d, 3, "y = x + 1", "y = x + 2", rec)
	}},
	{"edited intermediate code block", func(t *testing.T, d *schema.Dialogue, rec bool) {
		recode(t, d, 1, "x = 6 * 7", "x = 6 * 8", rec)
	}},
	{"executions swapped", func(t *testing.T, d *schema.Dialogue, rec bool) { swap(d, 2, 4) }},
}

// TestTamperMatrix: in every layout, every tamper of a test-judged and of a
// notebook dialogue is caught, and the untouched dialogues beside them
// verify clean.
func TestTamperMatrix(t *testing.T) {
	ex := sandbox(t)
	judged := judgedDialogue(t, ex, "judged")
	notebook := notebookDialogue(t, ex, "notebook")
	// A turn with a second block the cell did not run (simulate runs the
	// first; a tool call's code is read back last): either block may be
	// taken for the one that ran, so edits must be caught all the same.
	twoBlocks := notebookDialogueWith(t, ex, "two-blocks", "\nThe same in one line:\n```python\nprint('in one line', 6 * 7)\n```")
	var ds []schema.Dialogue
	cases := map[string]string{} // dialogue id -> what was done to it
	for _, base := range []struct {
		d       schema.Dialogue
		tampers []tamper
	}{{judged, judgedTampers}, {notebook, notebookTampers}, {twoBlocks, notebookTampers}} {
		ds = append(ds, base.d)
		for k, tm := range base.tampers {
			for _, rec := range []bool{false, true} {
				d := clone(base.d)
				d.ID = fmt.Sprintf("%s-%d-%v", base.d.ID, k, rec)
				tm.edit(t, &d, rec)
				if rec && reflect.DeepEqual(d, func() schema.Dialogue { x := clone(base.d); x.ID = d.ID; tm.edit(t, &x, false); return x }()) {
					continue // the edit has nothing to add to the record
				}
				ds = append(ds, d)
				cases[d.ID] = fmt.Sprintf("%s: %s (record edited too: %v)", base.d.ID, tm.name, rec)
			}
		}
	}
	dir := t.TempDir()
	c := &Checker{Exec: ex}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			file := ds
			if l.opts.To != schema.ExportNative {
				// A trainer file holds no records: editing it edits the
				// text alone. (With a record, openai-tools would put the
				// code the record ran in the tool call, whatever the text.)
				file = make([]schema.Dialogue, len(ds))
				for i, d := range ds {
					file[i] = d
					if cases[d.ID] != "" {
						file[i] = clone(d)
						for k := range file[i].Messages {
							file[i].Messages[k].Exec = nil
						}
					}
				}
			}
			path, samples := export(t, dir, l, file)
			rep := verifyFile(t, c, path)
			caught := map[string]bool{}
			for _, m := range rep.Mismatches {
				id := owner(m.DialogueID, samples)
				if cases[id] == "" {
					t.Errorf("untouched dialogue %s: %v", id, m)
				}
				caught[id] = true
			}
			tried, found := 0, 0
			for id, what := range cases {
				if rec := strings.HasSuffix(id, "-true"); rec && l.opts.To != schema.ExportNative {
					continue // the record is not in the file
				}
				tried++
				if !caught[id] {
					t.Errorf("not caught: %s", what)
					continue
				}
				found++
			}
			t.Logf("%s: %d of %d tampers caught", l.name, found, tried)
			for _, u := range rep.Unverifiable {
				if cases[owner(u.DialogueID, samples)] == "" {
					t.Errorf("untouched dialogue not re-runnable: %+v", u)
				}
			}
		})
	}
}

// correctDialogues runs the correct stage (its default settings, seed 1)
// on the first n problems of the sample run's data in the sandbox of
// $CODEFEEDBACK_VERIFY_SANDBOX (bubblewrap when unset) and returns its
// dialogues.
func correctDialogues(t *testing.T, n int) []schema.Dialogue {
	t.Helper()
	src, err := os.ReadFile("../../data/problems.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitN(string(src), "\n", n+1)[:n]
	pipelinetest.WriteLines(t, filepath.Join(dir, "p.jsonl"), lines)
	out := filepath.Join(dir, "out.jsonl")
	y := `run_dir: ` + filepath.Join(dir, "run") + `
executor: ` + cmp.Or(os.Getenv("CODEFEEDBACK_VERIFY_SANDBOX"), "bwrap://") + `
inputs: [{path: p.jsonl, format: mbpp}]
stages:
  - {stage: correct, settings: {seed: 1}}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	return pipelinetest.Dialogues(t, out)
}

// TestUntouchedSampleRun: the correct stage's dialogues on the sample run's
// first problems (every bug kind, timeouts included), written in every
// layout, verify with no mismatch and under 5% of executions not
// re-runnable.
func TestUntouchedSampleRun(t *testing.T) {
	ex := sandbox(t)
	ds := append(correctDialogues(t, 3), judgedDialogue(t, ex, "judged"), notebookDialogue(t, ex, "notebook"),
		// openai-tools moves the block that ran into the tool call, read
		// back after the one that did not.
		notebookDialogueWith(t, ex, "two-blocks", "\nThe same in one line:\n```python\nprint('in one line', 6 * 7)\n```"))
	if len(ds) < 6 {
		t.Fatalf("%d dialogues, want at least 6", len(ds))
	}
	execs := 0
	for _, d := range ds {
		for _, m := range d.Messages {
			if m.Role == schema.RoleExecution {
				execs++
			}
		}
	}
	dir := t.TempDir()
	c := &Checker{Exec: ex}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			path, _ := export(t, dir, l, ds)
			rep := verifyFile(t, c, path)
			for _, m := range rep.Mismatches {
				t.Errorf("mismatch: %v", m)
			}
			all := rep.Executions + len(rep.Unverifiable)
			if all == 0 || float64(len(rep.Unverifiable)) >= 0.05*float64(all) {
				t.Errorf("%d of %d executions not re-runnable (%v), want under 5%%", len(rep.Unverifiable), all, rep.Reasons())
			}
			if all != execs {
				// Each distinct execution once: a turn-split sample's
				// earlier turns are not run again.
				t.Errorf("%d executions verified, want the dialogues' %d", all, execs)
			}
			if rep.Distinct != len(ds) {
				t.Errorf("%d distinct dialogues verified of %d samples, want %d", rep.Distinct, rep.Dialogues, len(ds))
			}
		})
	}
}
