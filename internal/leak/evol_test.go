package leak

import (
	"sort"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"
)

// evolRecord is one record of testdata/evol/evol_style.jsonl: our own
// Evol-Instruct-style sample (gen_evol.py), not the real corpus, which is
// not in the shared data. Leaks name their task; a wrapped leak's
// instruction holds {prompt}, filled with the task's HumanEval prompt here
// so no benchmark text is stored in the repo.
type evolRecord struct {
	ID          string `json:"id"`
	Label       string `json:"label"` // "leak" or "clean"
	Kind        string `json:"kind"`
	Task        string `json:"task"`
	Instruction string `json:"instruction"`
	Output      string `json:"output"`
}

// evolMinFound are the leaks found per kind on the sample with the
// default settings, as measured (TestEvolStyleSample's log): wrapped 16 of
// 16 (the HumanEval prompt inside an "increase the difficulty" request),
// reworded 11 of 12 (Mbpp/2's reference returns `(res)` in parentheses,
// another statement), literal 3 of 4 (Mbpp/16's regex is in Mbpp/43's
// solution too, and the code around it differs), rewritten 0 of 6 (a different algorithm under other
// words: only the judged paraphrase check can find those). Every flag is
// a leak of its record's task and no textbook record is flagged; the
// same figures before MinWhole went from 12 to 7.
var evolMinFound = map[string]int{"wrapped": 16, "reworded": 11, "literal": 3, "rewritten": 0}

// evolSample reads the sample as two-turn dialogues (user: the
// instruction, assistant: the output), by record id.
func evolSample(t *testing.T) ([]evolRecord, []schema.Dialogue, map[string]evolRecord) {
	t.Helper()
	prompts := map[string]string{}
	for _, p := range testHumanEval(t) {
		prompts[p.ID] = p.Prompt
	}
	recs := readJSONL[evolRecord](t, "testdata/evol/evol_style.jsonl")
	ds := make([]schema.Dialogue, len(recs))
	byID := map[string]evolRecord{}
	for i, r := range recs {
		ins := r.Instruction
		if strings.Contains(ins, "{prompt}") {
			p, ok := prompts[r.Task]
			if !ok {
				t.Fatalf("%s: no HumanEval prompt for %s", r.ID, r.Task)
			}
			ins = strings.ReplaceAll(ins, "{prompt}", "```python\n"+strings.TrimRight(p, "\n")+"\n```")
		}
		if r.Label != "leak" && r.Label != "clean" || r.Label == "leak" && r.Task == "" {
			t.Fatalf("%s: bad label %q task %q", r.ID, r.Label, r.Task)
		}
		recs[i].Instruction = ins
		byID[r.ID] = recs[i]
		ds[i] = schema.Dialogue{ID: r.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: ins},
			{Role: schema.RoleAssistant, Content: r.Output},
		}}
	}
	return recs, ds, byID
}

// evolScore checks a report on the sample: the precision of the flags
// (>= 80% leaks of the flagged task), the hard negatives flagged (<= 5%)
// and the leaks found per kind (at least min's).
func evolScore(t *testing.T, recs []evolRecord, byID map[string]evolRecord, rep *Report, min map[string]int) {
	t.Helper()
	own := map[string]bool{}
	for _, f := range rep.Findings {
		r := byID[f.DialogueID]
		t.Logf("flag %s (%s %s) -> %s %s %.2f: %.120s", f.DialogueID, r.Label, r.Kind, f.Method, f.TaskID, f.Score, f.Evidence)
		if r.Label == "leak" && f.TaskID == r.Task {
			own[f.DialogueID] = true
		}
	}
	leaks, found := map[string]int{}, map[string]int{}
	clean, cleanFlagged, trueFlags := 0, 0, 0
	var missed []string
	for _, r := range recs {
		if r.Label == "clean" {
			clean++
			continue
		}
		leaks[r.Kind]++
		if own[r.ID] {
			found[r.Kind]++
		} else {
			missed = append(missed, r.ID)
		}
	}
	for _, id := range rep.FlaggedIDs {
		switch {
		case own[id]:
			trueFlags++
		case byID[id].Label == "clean":
			cleanFlagged++
		}
	}
	sort.Strings(missed)
	kinds := make([]string, 0, len(leaks))
	for k := range leaks {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	allLeaks, allFound := 0, 0
	for _, k := range kinds {
		allLeaks += leaks[k]
		allFound += found[k]
		t.Logf("leaks %s: found %d of %d", k, found[k], leaks[k])
		if found[k] < min[k] {
			t.Errorf("leaks %s: found %d of %d, want >= %d", k, found[k], leaks[k], min[k])
		}
	}
	t.Logf("Evol-style sample (ours, not the real corpus): %d records, %d flagged, %d of them leaks of the flagged task; leaks found %d of %d; hard negatives flagged %d of %d; missed %v",
		len(recs), rep.Flagged, trueFlags, allFound, allLeaks, cleanFlagged, clean, missed)
	if rep.Flagged > 0 && float64(trueFlags) < 0.8*float64(rep.Flagged) {
		t.Errorf("%d of %d flags are leaks of the flagged task, want >= 80%%", trueFlags, rep.Flagged)
	}
	if float64(cleanFlagged) > 0.05*float64(clean) {
		t.Errorf("hard negatives flagged %d of %d, want <= 5%%", cleanFlagged, clean)
	}
}

// TestEvolStyleSample audits the Evol-Instruct-style sample (290 records:
// 38 leaks of HumanEval/MBPP tasks, evolved and reworded, and 252 hard
// negatives, classic textbook tasks evolved, 56 of them with one- or
// two-line answers) against HumanEval and MBPP with the default settings
// (no judge) and scores it (evolScore).
func TestEvolStyleSample(t *testing.T) {
	recs, ds, byID := evolSample(t)
	rep, err := testAuditor(t, Options{}).Run(t.Context(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	evolScore(t, recs, byID, rep, evolMinFound)
}

// evolMinJudged are the leaks found per kind with the paraphrase check
// and an oracle judge ("same" exactly for a leak's instruction and its
// own task's statement): what retrieval brings to a judge. Measured: 36
// of 38 (rewritten 5 of 6, literal 4 of 4; missed Mbpp/2, whose request
// retrieval does not bring to the judge, and Mbpp/66), every flag a leak
// of its task, no textbook record flagged, 2,879 pairs judged.
var evolMinJudged = map[string]int{"wrapped": 16, "reworded": 11, "literal": 4, "rewritten": 5}

// TestEvolStyleSampleJudged is TestEvolStyleSample with the paraphrase
// check on and an oracle judge, as TestParaphrasesJudged does it.
func TestEvolStyleSampleJudged(t *testing.T) {
	recs, ds, byID := evolSample(t)
	stmt := map[string]string{}
	for _, ps := range [][]schema.Problem{testHumanEval(t), testMBPP(t)} {
		for i := range ps {
			stmt[ps[i].ID] = statementText(&ps[i])
		}
	}
	want := map[string]string{} // instruction (code removed) -> its task's statement
	for _, r := range recs {
		if r.Label == "leak" {
			want[stripCode(r.Instruction)] = stmt[r.Task]
		}
	}
	_, judge := oracleJudge(t, want)
	a := testAuditor(t, Options{})
	if err := a.EnableParaphrase(t.Context(), embed.NewTFIDF(ParaphraseDim), ParaphraseOptions{Judge: judge}); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(t.Context(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("judge: %+v", *a.Judge())
	evolScore(t, recs, byID, rep, evolMinJudged)
}

// realFlag is one record of testdata/evol/real_flags.jsonl: every record
// of the real Evol-Instruct corpus (nickrosh/evol-teacher's two 2k files,
// 3,919 records) that the audit has flagged, labelled by reading it.
type realFlag struct {
	ID          string `json:"id"`
	Label       string `json:"label"` // "leak" or "clean"
	Task        string `json:"task"`
	Why         string `json:"why"`
	Instruction string `json:"instruction"`
	Output      string `json:"output"`
}

// TestRealEvolFlags audits the labelled records: each leak is flagged for
// its task, and no clean one is flagged (the clean ones were false
// positives of an earlier audit: a quoted definition, a stock opening, a
// table of common knowledge).
func TestRealEvolFlags(t *testing.T) {
	a := testAuditor(t, Options{})
	for _, r := range readJSONL[realFlag](t, "testdata/evol/real_flags.jsonl") {
		d := &schema.Dialogue{ID: r.ID, Messages: []schema.Message{{Role: schema.RoleUser, Content: r.Instruction}, {Role: schema.RoleAssistant, Content: r.Output}}}
		var tasks []string
		for _, f := range a.Check(t.Context(), d, 0).Findings {
			tasks = append(tasks, f.TaskID+" "+f.Method)
		}
		flagged := len(tasks) > 0
		if flagged != (r.Label == "leak") || r.Label == "leak" && !strings.HasPrefix(strings.Join(tasks, ","), r.Task+" ") {
			t.Errorf("%s (%s, %s): findings %v", r.ID, r.Label, r.Why, tasks)
		}
	}
}
