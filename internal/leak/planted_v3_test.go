package leak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// hardNegatives are 41 classic textbook programs written for this test
// (testdata/hardneg.jsonl: FizzBuzz, sorts, primes, gcd, stacks, interest),
// none a benchmark task's own code, as two-turn dialogues.
func hardNegatives(t *testing.T) []schema.Dialogue {
	type rec struct{ Ask, Code string }
	var ds []schema.Dialogue
	for i, r := range readJSONL[rec](t, "testdata/hardneg.jsonl") {
		ds = append(ds, schema.Dialogue{ID: fmt.Sprintf("hardneg-%d", i+1), Messages: []schema.Message{
			{Role: schema.RoleUser, Content: r.Ask},
			{Role: schema.RoleAssistant, Content: "Here is one way:\n\n```python\n" + r.Code + "\n```"},
		}})
	}
	return ds
}

// maxHardNegativeShare is the bar: classic textbook tasks not
// from the benchmarks flagged at most 5%.
const maxHardNegativeShare = 0.05

// TestHardNegatives audits the textbook programs without a model: at most
// 5% may be flagged (logged with their findings).
func TestHardNegatives(t *testing.T) {
	ds := hardNegatives(t)
	if len(ds) < 40 {
		t.Fatalf("%d hard negatives, want >= 40", len(ds))
	}
	rep, err := testAuditor(t, Options{}).Run(context.Background(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Logf("flagged %s: %s %s %s", f.DialogueID, f.Method, f.TaskID, f.Evidence)
	}
	t.Logf("hard negatives flagged: %d of %d", rep.Flagged, len(ds))
	if float64(rep.Flagged) > maxHardNegativeShare*float64(len(ds)) {
		t.Errorf("%d of %d hard negatives flagged, want <= %.0f%%", rep.Flagged, len(ds), 100*maxHardNegativeShare)
	}
}

// minParaphrasesJudged is the measured number of the 40 paraphrases the
// default retrieval brings to a perfect judge: 32 (80%). Measured on this
// set: BM25 alone, top 5 per dialogue, 29 (337 judge calls); BM25 top 10,
// 30 (670); BM25 top 20, 34 (1,319); BM25 and the TF-IDF cosine
// interleaved (the default), top 10, 32 (685), top 15, 33 (1,018). The
// misses share too few words with their statements ("ones digit" for
// "last digit", "tally" for "count character frequency"). The synonym
// table is not tuned on this set.
const minParaphrasesJudged = 32

// TestParaphrasesJudged audits 40 reworded benchmark statements (the 8
// planted ones, the 8 held-out ones and 24 more written for this test,
// none used to tune the retriever), each a user turn without code, among
// the hard negatives, with an oracle judge: "same" exactly for a
// paraphrase and its own task's statement, the calibration pairs answered
// right. What is measured is whether retrieval brings the true task to
// the judge (minParaphrasesJudged), and that no hard negative is flagged
// by the judge.
func TestParaphrasesJudged(t *testing.T) {
	planted, heldout, he, mb := paraphraseQueries(t)
	more := readJSONL[rewording](t, "testdata/paraphrase/more.jsonl")
	all := append(append(append([]rewording(nil), planted...), heldout...), more...)
	if len(all) < 40 {
		t.Fatalf("%d paraphrases, want >= 40", len(all))
	}
	stmt := map[string]string{}
	for _, ps := range [][]schema.Problem{he, mb} {
		for i := range ps {
			stmt[ps[i].ID] = statementText(&ps[i])
		}
	}
	want := map[string]string{} // turn (code removed) -> its task's statement
	ds := hardNegatives(t)
	for i, r := range all {
		if _, ok := stmt[r.Task]; !ok {
			t.Fatalf("paraphrase %d: no task %s", i, r.Task)
		}
		want[stripCode(r.Ask)] = stmt[r.Task]
		ds = append(ds, schema.Dialogue{ID: fmt.Sprintf("para-%d|%s", i, r.Task), Messages: []schema.Message{
			{Role: schema.RoleUser, Content: r.Ask},
			{Role: schema.RoleAssistant, Content: "Let us think about the approach first, then write it step by step."},
		}})
	}
	_, judge := oracleJudge(t, want)
	a := testAuditor(t, Options{})
	if err := a.EnableParaphrase(context.Background(), embed.NewTFIDF(ParaphraseDim), ParaphraseOptions{Judge: judge}); err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	var negFlagged []string
	for _, f := range rep.Findings {
		if id, task, ok := strings.Cut(f.DialogueID, "|"); ok && task == f.TaskID && f.Method == MethodEmbedding {
			found[id] = true
		}
		if strings.HasPrefix(f.DialogueID, "hardneg-") && f.Method == MethodEmbedding {
			negFlagged = append(negFlagged, f.DialogueID+" "+f.TaskID)
		}
	}
	var missed []string
	for i, r := range all {
		if !found[fmt.Sprintf("para-%d", i)] {
			missed = append(missed, r.Task)
		}
	}
	j := a.Judge()
	t.Logf("paraphrases found with the judge: %d of %d; missed %v; judge %+v", len(found), len(all), missed, *j)
	if len(found) < minParaphrasesJudged {
		t.Errorf("found %d of %d paraphrases, want >= %d", len(found), len(all), minParaphrasesJudged)
	}
	if len(negFlagged) > 0 || j.Unknown != 0 || j.CalibrationAgreed != j.CalibrationPairs {
		t.Errorf("judge flagged hard negatives %v, %d unknown, calibration %d of %d; want none, 0 and all", negFlagged, j.Unknown, j.CalibrationAgreed, j.CalibrationPairs)
	}
}

// TestJudgeRepairAndCalibration: an answer in an unexpected form is asked
// once more and read; one still unreadable is unknown (never "different");
// a judge that fails the labelled pairs is not trusted.
func TestJudgeRepairAndCalibration(t *testing.T) {
	if n := len(CalibrationPairs()); n < 10 {
		t.Fatalf("%d calibration pairs, want >= 10", n)
	}
	cases := []struct {
		name              string
		first, repaired   string // answers to a question and to the repair request
		want              string // verdict read; "" unknown
		wantCalibrateFail bool
	}{
		{"plain", "same - both reverse a list", "", "same", false},
		{"markdown", "**Different**. One sorts, one reverses.", "", "different", false},
		{"repaired", `{"answer": "yes"}`, "same", "same", false},
		{"still garbage", `{"answer": "yes"}`, "I cannot tell.", "", true},
		{"always same", "same", "", "same", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Script(func(call llmtest.Call) llmtest.Reply {
				if len(call.Request.Messages) > 1 {
					return llmtest.Reply{Text: c.repaired}
				}
				return llmtest.Reply{Text: c.first}
			})
			judge, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake-chat"}, MaxAttempts: 1},
				llm.Options{Cache: llmtest.NewMemCache()})
			if err != nil {
				t.Fatal(err)
			}
			a := testAuditor(t, Options{})
			ix := &embedIndex{o: ParaphraseOptions{Judge: judge, MinAgreement: DefaultMinAgreement}}
			ix.tmpl = mustTemplate(t)
			got, _, err := ix.judge(context.Background(), "Reverse a list.", "Give me the list backwards.")
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("verdict %q, want %q", got, c.want)
			}
			if unknown := ix.unreadable.Load(); (c.want == "") != (unknown == 1) {
				t.Errorf("unknown count %d for verdict %q", unknown, got)
			}
			if !c.wantCalibrateFail {
				return // a one-answer judge fails calibration; a good one passes it in TestParaphrasesJudged
			}
			err = a.EnableParaphrase(context.Background(), embed.NewTFIDF(ParaphraseDim), ParaphraseOptions{Judge: judge})
			if !errors.Is(err, ErrJudgeUntrusted) {
				t.Errorf("calibration error %v, want ErrJudgeUntrusted", err)
			}
		})
	}
}

func mustTemplate(t *testing.T) prompts.Template {
	t.Helper()
	tm, err := prompts.Get("audit_same_task")
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
