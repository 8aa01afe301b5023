package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/internal/verify"
	"github.com/codefeedback/codefeedback/schema"
)

// trainingProblem is a small problem with a wrong and a right answer.
type trainingProblem struct {
	name, prompt string
	tests        []string
	wrong, right string
}

var trainingProblems = []trainingProblem{
	{"square", "Write sq(x) returning x squared.", []string{"assert sq(2) == 4", "assert sq(3) == 9"},
		"def sq(x):\n    return x * 2\n", "def sq(x):\n    return x * x\n"},
	{"rev", "Write rev(s) returning s reversed.", []string{"assert rev('ab') == 'ba'", "assert rev('') == ''"},
		"def rev(s):\n    return s[1:]\n", "def rev(s):\n    return s[::-1]\n"},
	{"crash", "Write half(n) returning n // 2.", []string{"assert half(4) == 2"},
		"def half(n):\n    return n // 0\n", "def half(n):\n    return n // 2\n"},
	// The failing and the passing code differ only in whitespace (an
	// indentation error): no pair.
	{"indent", "Write one() returning 1.", []string{"assert one() == 1"},
		"def one():\nreturn 1\n", "def one():\n    return 1\n"},
	// Never passes: no pair, no RL record.
	{"unsolved", "Write two() returning 2.", []string{"assert two() == 2"}, "def two():\n    return 3\n", ""},
}

// judgedTurns judges code in the sandbox and returns the assistant turn
// showing it and the execution turn with its record, as stages write them.
func judgedTurns(t *testing.T, ex executors.Executor, p trainingProblem, words, code string) []schema.Message {
	t.Helper()
	v, err := harness.Judge(context.Background(), ex, schema.Problem{Query: schema.Query{ID: p.name}, Tests: p.tests}, code, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := v.Execution()
	text, ok := harness.RenderRecorded(e)
	if !ok {
		t.Fatalf("%s: record does not render", p.name)
	}
	return []schema.Message{
		{Role: schema.RoleAssistant, Content: words + "\n\n```python\n" + code + "```"},
		{Role: schema.RoleExecution, Content: text, Exec: &e},
	}
}

// writeTrainingDialogues writes trainingDialogues to dir/dialogues.jsonl
// and returns the path.
func writeTrainingDialogues(t *testing.T, ex executors.Executor, dir string) string {
	in := filepath.Join(dir, "dialogues.jsonl")
	if err := schema.WriteAll(in, trainingDialogues(t, ex)); err != nil {
		t.Fatal(err)
	}
	return in
}

// trainingDialogues are real dialogues: each problem's wrong attempt and
// its fix judged in the sandbox, as the correct stage makes them.
func trainingDialogues(t *testing.T, ex executors.Executor) []schema.Dialogue {
	var ds []schema.Dialogue
	for _, p := range trainingProblems {
		user := p.prompt + "\nYour code should pass these tests:\n\n```python\n" + strings.Join(p.tests, "\n") + "\n```"
		msgs := []schema.Message{{Role: schema.RoleUser, Content: user}}
		msgs = append(msgs, judgedTurns(t, ex, p, "Here is "+p.name+":", p.wrong)...)
		if p.right != "" {
			msgs = append(msgs, judgedTurns(t, ex, p, "The test fails; fixed:", p.right)...)
		}
		ds = append(ds, schema.Dialogue{ID: "dlg-" + p.name, Stage: "correct", Messages: msgs})
	}
	return ds
}

// trlConversational checks TRL's rule for a conversational column: a
// list of {role, content} messages.
func trlMessages(v any) ([]map[string]any, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("want a non-empty list of messages, got %T", v)
	}
	var out []map[string]any
	for _, m := range list {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("message %v is not an object", m)
		}
		if _, ok := mm["role"].(string); !ok {
			return nil, fmt.Errorf("message %v: no role", m)
		}
		if _, ok := mm["content"].(string); !ok {
			return nil, fmt.Errorf("message %v: no content", m)
		}
		out = append(out, mm)
	}
	return out, nil
}

// checkTRL applies TRL's documented dataset-format rules to one record of
// a preference ("prompt", "chosen", "rejected") or unpaired preference
// ("prompt", "completion", "label") file: conversational columns are
// message lists (the prompt ending in a user turn, completions one
// assistant turn), standard ones strings, label a boolean.
func checkTRL(rec map[string]any, to schema.ExportFormat, style schema.Style) error {
	cols := []string{"prompt", "chosen", "rejected"}
	if to == schema.ExportKTO {
		cols = []string{"prompt", "completion"}
		if _, ok := rec["label"].(bool); !ok {
			return fmt.Errorf("label %v: want a boolean", rec["label"])
		}
	}
	for _, c := range cols {
		v, ok := rec[c]
		if !ok {
			return fmt.Errorf("no %q column", c)
		}
		if style == schema.StyleStandard {
			if s, ok := v.(string); !ok || s == "" {
				return fmt.Errorf("%s: want a non-empty string, got %T", c, v)
			}
			continue
		}
		ms, err := trlMessages(v)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		switch {
		case c == "prompt" && ms[len(ms)-1]["role"] != "user":
			return fmt.Errorf("prompt ends in a %v turn, want user", ms[len(ms)-1]["role"])
		case c != "prompt" && (len(ms) != 1 || ms[0]["role"] != "assistant"):
			return fmt.Errorf("%s: want one assistant turn, got %v", c, ms)
		}
	}
	return nil
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// TestTrainingExports exports real dialogues as dpo, kto and rl in both
// styles and checks: TRL's column rules; pairs only where chosen passed
// and rejected failed with its error recorded, none differing only in
// whitespace, every dialogue with a fixable failure paired; RL records
// carry verl's columns and a ground truth that judges the reference;
// every record re-verifies in the sandbox (verify: 0 mismatches, every
// execution re-run and agreed).
func TestTrainingExports(t *testing.T) {
	ex := sandboxtest.Shared(t)
	ctx := context.Background()
	dir := t.TempDir()
	in := writeTrainingDialogues(t, ex, dir)
	type want struct {
		records int
		skipped map[string]int
	}
	wants := map[schema.ExportFormat]want{
		schema.ExportDPO: {3, map[string]int{schema.SkipWhitespace: 1, schema.SkipNoPass: 1}},
		schema.ExportKTO: {9, map[string]int{}},
		schema.ExportRL:  {4, map[string]int{schema.SkipUnpassed: 1}},
	}
	for _, to := range schema.TrainingFormats {
		for _, style := range []schema.Style{schema.StyleConversational, schema.StyleStandard} {
			t.Run(string(to)+"-"+string(style), func(t *testing.T) {
				out := filepath.Join(dir, fmt.Sprintf("%s-%s.jsonl", to, style))
				st, err := schema.Export(ctx, in, out, schema.ExportOptions{To: to, Style: style})
				if err != nil {
					t.Fatal(err)
				}
				w := wants[to]
				if st.Written != w.records {
					t.Errorf("records: got %d want %d", st.Written, w.records)
				}
				for r, n := range w.skipped {
					if st.Training.Skipped[r] != n {
						t.Errorf("skipped %q: got %d want %d (all: %v)", r, st.Training.Skipped[r], n, st.Training.Skipped)
					}
				}
				card := schema.TrainingCardSection(out, schema.ExportOptions{To: to, Style: style}, st)
				if !strings.HasPrefix(card, "## ") || !strings.Contains(card, fmt.Sprintf("%d ", w.records)) || !strings.Contains(card, "verify") {
					t.Errorf("card section: got %q, want a heading, the record count and how to verify", card)
				}
				recs := readJSONL(t, out)
				for i, rec := range recs {
					if err := checkRecord(rec, to, style); err != nil {
						t.Errorf("record %d: %v", i+1, err)
					}
				}
				if to == schema.ExportDPO && (st.Training.WithFailure != 5 || st.Training.Paired != 3) {
					t.Errorf("paired %d of %d dialogues with a failure, want 3 of 5", st.Training.Paired, st.Training.WithFailure)
				}
				wantRuns := map[schema.ExportFormat]int{schema.ExportDPO: 2 * w.records, schema.ExportKTO: w.records, schema.ExportRL: w.records}[to]
				if to == schema.ExportKTO && style == schema.StyleConversational {
					// A second attempt's prompt shows the first attempt and its
					// execution turn, which verify re-runs as well.
					wantRuns += 4
				}
				reverify(t, ex, out, wantRuns)
			})
		}
	}
}

// checkRecord checks one exported record's contract.
func checkRecord(rec map[string]any, to schema.ExportFormat, style schema.Style) error {
	switch to {
	case schema.ExportDPO:
		if err := checkTRL(rec, to, style); err != nil {
			return err
		}
		var c, r schema.Message
		if err := json.Unmarshal([]byte(rec["chosen_execution"].(string)), &c); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(rec["rejected_execution"].(string)), &r); err != nil {
			return err
		}
		if c.Exec == nil || !*c.Exec.Passed || r.Exec == nil || *r.Exec.Passed {
			return errors.New("chosen must have passed and rejected failed")
		}
		if rec["rejected_error"] == "" {
			return errors.New("rejected_error empty")
		}
		if strings.Join(strings.Fields(c.Exec.Code), "") == strings.Join(strings.Fields(r.Exec.Code), "") {
			return errors.New("sides differ only in whitespace")
		}
	case schema.ExportKTO:
		if err := checkTRL(rec, to, style); err != nil {
			return err
		}
		var x schema.Message
		if err := json.Unmarshal([]byte(rec["execution"].(string)), &x); err != nil {
			return err
		}
		if *x.Exec.Passed != rec["label"].(bool) {
			return fmt.Errorf("label %v but the record says passed=%v", rec["label"], *x.Exec.Passed)
		}
	case schema.ExportRL:
		if s, _ := rec["data_source"].(string); s == "" {
			return errors.New("no data_source")
		}
		if style == schema.StyleConversational {
			if _, err := trlMessages(rec["prompt"]); err != nil {
				return fmt.Errorf("prompt: %w", err)
			}
		}
		rm, _ := rec["reward_model"].(map[string]any)
		if rm["style"] != "rule" || rec["ability"] != "code" {
			return fmt.Errorf("reward_model %v, ability %v: want style rule, ability code", rm, rec["ability"])
		}
		var gt schema.GroundTruth
		if err := json.Unmarshal([]byte(rm["ground_truth"].(string)), &gt); err != nil {
			return fmt.Errorf("ground_truth: %w", err)
		}
		if gt.Language != "python" || len(gt.Tests) == 0 {
			return fmt.Errorf("ground_truth %+v: want python and tests", gt)
		}
		ei, _ := rec["extra_info"].(map[string]any)
		if ei["split"] != "train" || ei["index"] == nil || ei["reference"] == "" {
			return fmt.Errorf("extra_info %v: want split, index and a reference", ei)
		}
	}
	return nil
}

// reverify runs verify on an exported file: every execution re-runs and
// agrees with its record.
func reverify(t *testing.T, ex executors.Executor, path string, runs int) {
	t.Helper()
	ctx := context.Background()
	c := &verify.Checker{Exec: ex, Opts: verify.Options{Parallel: 2}}
	rep, err := c.Dataset(ctx, schema.ReadShipped(ctx, path))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mismatches) > 0 || len(rep.Unverifiable) > 0 {
		t.Errorf("verify %s: %d mismatches %v, %d unverifiable %v", filepath.Base(path), len(rep.Mismatches), rep.Mismatches, len(rep.Unverifiable), rep.Unverifiable)
	}
	if rep.Executions != runs || rep.Agreed != runs {
		t.Errorf("verify %s: re-ran %d, agreed %d, want %d", filepath.Base(path), rep.Executions, rep.Agreed, runs)
	}
}

// TestTrainingParquetDuckDB: the Parquet form of each training layout
// reads in DuckDB with the expected types, and re-verifies.
func TestTrainingParquetDuckDB(t *testing.T) {
	ex := sandboxtest.Shared(t)
	ctx := context.Background()
	dir := t.TempDir()
	in := writeTrainingDialogues(t, ex, dir)
	msgs := `STRUCT(role VARCHAR, content VARCHAR)[]`
	cases := []struct {
		to    schema.ExportFormat
		style schema.Style
		rows  int
		runs  int
		types map[string]string
	}{
		{schema.ExportDPO, schema.StyleConversational, 3, 6, map[string]string{"prompt": msgs, "chosen": msgs, "rejected": msgs, "rejected_error": "VARCHAR", "chosen_execution": "VARCHAR"}},
		{schema.ExportDPO, schema.StyleStandard, 3, 6, map[string]string{"prompt": "VARCHAR", "chosen": "VARCHAR", "rejected": "VARCHAR"}},
		{schema.ExportKTO, schema.StyleConversational, 9, 13, map[string]string{"prompt": msgs, "completion": msgs, "label": "BOOLEAN"}},
		{schema.ExportRL, schema.StyleConversational, 4, 4, map[string]string{"data_source": "VARCHAR", "prompt": msgs, "ability": "VARCHAR",
			"reward_model": "STRUCT(style VARCHAR, ground_truth VARCHAR)",
			"extra_info":   "STRUCT(split VARCHAR, index BIGINT, id VARCHAR, dialogue_id VARCHAR, language VARCHAR, tests BIGINT, reference VARCHAR, reference_execution VARCHAR)"}},
		{schema.ExportRL, schema.StyleStandard, 4, 4, map[string]string{"prompt": "VARCHAR"}},
	}
	for _, c := range cases {
		out := filepath.Join(dir, fmt.Sprintf("%s-%s.parquet", c.to, c.style))
		st, err := schema.Export(ctx, in, out, schema.ExportOptions{To: c.to, Style: c.style})
		if err != nil {
			t.Fatal(err)
		}
		if st.Written != c.rows {
			t.Errorf("%s: wrote %d rows, want %d", out, st.Written, c.rows)
		}
		rows, types := duckDescribe(t, out)
		if rows != c.rows {
			t.Errorf("%s: DuckDB counts %d rows, want %d", filepath.Base(out), rows, c.rows)
		}
		for col, want := range c.types {
			if got := strings.ReplaceAll(types[col], `"`, ""); got != want {
				t.Errorf("%s: column %s has type %s, want %s", filepath.Base(out), col, got, want)
			}
		}
		reverify(t, ex, out, c.runs)
	}
}

// duckDescribe has DuckDB (the @duckdb/node-api package: DUCKDB_NODE_MODULES
// or .ci/node_modules) count a Parquet file's rows and name its column
// types. It skips where DuckDB is missing, except under CI.
func duckDescribe(t *testing.T, file string) (int, map[string]string) {
	t.Helper()
	mods := os.Getenv("DUCKDB_NODE_MODULES")
	if mods == "" {
		root, err := sharedtest.Root()
		if err != nil {
			t.Fatal(err)
		}
		mods = filepath.Join(root, ".ci", "node_modules")
	}
	node, err := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join(mods, "@duckdb", "node-api", "package.json"))
	if err != nil || modErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("DuckDB unavailable under CI: node %v, module %v", err, modErr)
		}
		t.Skipf("skipping: DuckDB unavailable (node: %v; @duckdb/node-api in %s: %v)", err, mods, modErr)
	}
	script := filepath.Join(t.TempDir(), "describe.mjs")
	src := `import { createRequire } from "node:module";
import path from "node:path";
const require = createRequire(path.join(process.env.DUCKDB_NODE_MODULES, "x.js"));
const { DuckDBInstance } = require("@duckdb/node-api");
const con = await (await DuckDBInstance.create(":memory:")).connect();
const lit = "'" + process.argv[2].replaceAll("'", "''") + "'";
const desc = await con.runAndReadAll("DESCRIBE SELECT * FROM read_parquet(" + lit + ")");
const types = Object.fromEntries(desc.getRowObjects().map((r) => [r.column_name, String(r.column_type)]));
const n = (await con.runAndReadAll("SELECT count(*)::INTEGER AS n FROM read_parquet(" + lit + ")")).getRowObjects()[0].n;
console.log(JSON.stringify({ rows: n, types }));
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, file)
	cmd.Env = append(os.Environ(), "DUCKDB_NODE_MODULES="+mods)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb on %s: %v\n%s", file, err, out)
	}
	var res struct {
		Rows  int               `json:"rows"`
		Types map[string]string `json:"types"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return res.Rows, res.Types
}
