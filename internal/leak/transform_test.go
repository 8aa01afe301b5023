package leak

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// variantKinds are the disguises testdata/transform.py makes of every
// benchmark solution, and the least share of the tasks each applies to
// that the audit must find against their own task: the measured shares
// (the bars are 95% renamed, 95% reordered, 90% renamed and
// reordered, 100% reformatted, 70% rewritten keeping a unique literal).
// Renamed, code alone: 1,088 of 1,137 (95.7%; under 40 tokens 542/588).
// Of the 49 missed, 25 are, renamed, textbook code whole (generic.py: a
// minimum loop, an average, a count, a prime test): found only with a
// request for the task (MinWholeAsked); the other 24 weigh under
// MinWhole (7), their tokens over the tasks sharing their renamed form
// (19 are shared by 2 to 4 tasks; `return sum(xs)`, `return len(s)`).
// Lowering MinWhole to 6 finds 15 more and flags 4
// more Code Alpaca dialogues, none a leak (a sum of an array for
// Mbpp/105, a string's len for Mbpp/792): TestRealCorpusFlags.
var variantKinds = []struct {
	name string
	min  float64
}{
	{"renamed", 0.955},          // 1088/1137
	{"reordered", 0.99},         // 240/240
	{"renamed_reordered", 0.99}, // 238/240
	{"continued", 1},            // 1138/1138
	{"split", 1},                // 805/805
	{"literal_rewrite", 0.70},   // 34/48
}

// solutionCode is a task's full solution as a corpus would copy it: for
// HumanEval the prompt's signature (without its docstring) and the body.
func solutionCode(p *schema.Problem) string { return taskSolution(p) }

// transformVariants runs testdata/transform.py (Python's own tokenizer and
// ast, independent of the Go code measured) over every task's solution.
func transformVariants(t *testing.T, ps []schema.Problem) map[string]map[string]*string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: python3 is needed to generate the disguised solutions (testdata/transform.py)")
	}
	type task struct {
		ID   string `json:"id"`
		Code string `json:"code"`
	}
	in := make([]task, len(ps))
	for i := range ps {
		in[i] = task{ps[i].ID, solutionCode(&ps[i])}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/transform.py")
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("transform.py: %v\n%s", err, stderr.String())
	}
	var v map[string]map[string]*string
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("transform.py output: %v", err)
	}
	return v
}

// TestTransformSweep disguises every HumanEval and MBPP solution (1,138)
// in each way of variantKinds and audits one dialogue per variant, code
// only (no statement, no tests), counting those found against their own
// task. It logs found/total per kind and per length class (solutions under
// 40 code tokens apart), and the misses.
func TestTransformSweep(t *testing.T) {
	he, mb := testHumanEval(t), testMBPP(t)
	all := append(append([]schema.Problem(nil), he...), mb...)
	bench := map[string]string{}
	for _, p := range he {
		bench[p.ID] = "humaneval"
	}
	for _, p := range mb {
		bench[p.ID] = "mbpp"
	}
	short := map[string]bool{}
	for i := range all {
		short[all[i].ID] = len(codeTokens(solutionCode(&all[i]), nil)) < 40
	}
	vs := transformVariants(t, all)
	a := testAuditor(t, Options{})
	for _, k := range variantKinds {
		t.Run(k.name, func(t *testing.T) {
			var ds []schema.Dialogue
			for _, p := range all {
				code := vs[p.ID][k.name]
				if code == nil {
					continue
				}
				ds = append(ds, schema.Dialogue{ID: p.ID, Messages: []schema.Message{
					{Role: schema.RoleUser, Content: "Can you explain what this does?"},
					{Role: schema.RoleAssistant, Content: "Here it is:\n\n```python\n" + strings.TrimRight(*code, "\n") + "\n```\n\nIt walks the input once."},
				}})
			}
			rep, err := a.Run(t.Context(), Slice(ds), nil)
			if err != nil {
				t.Fatal(err)
			}
			own := map[string]bool{}
			for _, f := range rep.Findings {
				if f.TaskID == f.DialogueID && f.Benchmark == bench[f.TaskID] {
					own[f.DialogueID] = true
				}
			}
			var found, shortN, shortFound int
			var missed []string
			for _, d := range ds {
				if short[d.ID] {
					shortN++
				}
				if own[d.ID] {
					found++
					if short[d.ID] {
						shortFound++
					}
				} else {
					missed = append(missed, d.ID)
				}
			}
			sort.Strings(missed)
			t.Logf("%s: found %d/%d (short solutions %d/%d; %d of %d tasks have this variant); missed %s",
				k.name, found, len(ds), shortFound, shortN, len(ds), len(all), head(missed, 40))
			if len(ds) == 0 {
				t.Fatalf("no %s variants generated", k.name)
			}
			if got := float64(found) / float64(len(ds)); got < k.min {
				t.Errorf("%s: found %d of %d (%.1f%%), want >= %.0f%%", k.name, found, len(ds), 100*got, 100*k.min)
			}
		})
	}
}

// minRenamedAsked is the measured number of the 40 reworded requests
// (the paraphrase set) answered with their task's renamed solution that
// are found without a judge: 37, all by the code alone since MinWhole is
// 7 (it was 12: 34, 32 by the code alone). The request's help
// (MinWholeAsked) is measured on Code Alpaca (TestRealCorpusFlags).
const minRenamedAsked = 37

// TestRenamedAsked audits each reworded request of the paraphrase set
// (planted, held-out and more: 40, none in the benchmarks' words)
// answered with its task's renamed solution, with the default settings
// and with the request's help off (MinWholeAsked at MinWhole), and
// counts those found against their own task.
func TestRenamedAsked(t *testing.T) {
	planted, heldout, he, mb := paraphraseQueries(t)
	paras := append(append(planted, heldout...), readJSONL[rewording](t, "testdata/paraphrase/more.jsonl")...)
	all := append(append([]schema.Problem(nil), he...), mb...)
	vs := transformVariants(t, all)
	var ds []schema.Dialogue
	for _, r := range paras {
		code := vs[r.Task]["renamed"]
		if code == nil {
			t.Fatalf("no renamed variant of %s", r.Task)
		}
		ds = append(ds, schema.Dialogue{ID: r.Task, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: r.Ask},
			{Role: schema.RoleAssistant, Content: "Here it is:\n\n```python\n" + strings.TrimRight(*code, "\n") + "\n```\n\nIt walks the input once."},
		}})
	}
	if len(ds) < 40 {
		t.Fatalf("%d cases, want >= 40", len(ds))
	}
	found := func(o Options) (n int, missed []string) {
		rep, err := testAuditor(t, o).Run(t.Context(), Slice(ds), nil)
		if err != nil {
			t.Fatal(err)
		}
		own := map[string]bool{}
		for _, f := range rep.Findings {
			own[f.DialogueID] = own[f.DialogueID] || f.TaskID == f.DialogueID
		}
		for _, d := range ds {
			if own[d.ID] {
				n++
			} else {
				missed = append(missed, d.ID)
			}
		}
		return n, missed
	}
	codeOnly, _ := found(Options{Statements: StatementOptions{MinWholeAsked: DefaultStatementOptions.MinWhole}})
	n, missed := found(Options{})
	t.Logf("renamed solution with a reworded request: %d of %d found (code alone: %d); missed %v", n, len(ds), codeOnly, missed)
	if n < minRenamedAsked || n < codeOnly {
		t.Errorf("found %d of %d (code alone %d), want >= %d and no fewer than the code alone", n, len(ds), codeOnly, minRenamedAsked)
	}
}
