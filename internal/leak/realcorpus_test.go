package leak

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

// alpacaDialogues turns a Code Alpaca style file into two-turn dialogues.
func alpacaDialogues(t testing.TB, file, prefix string) []schema.Dialogue {
	ps, err := schema.LoadProblems(sharedtest.Path(t, file))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]schema.Dialogue, len(ps))
	for i, p := range ps {
		out[i] = schema.Dialogue{ID: prefix + p.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: p.Text},
			{Role: schema.RoleAssistant, Content: "```\n" + p.Solution + "\n```"},
		}}
	}
	return out
}

// realCorpusLabels are the flags of the two Code Alpaca files (6,552
// dialogues) against HumanEval and MBPP, read by hand: leak true when the
// dialogue asks for the flagged task itself (copied or reworded, whatever
// its code), false when it is another task that shares code with it. A
// flag not listed here fails the test: read it and label it. Labels of
// dialogues flagged by earlier settings stay, for the record.
var realCorpusLabels = map[string]struct {
	task string
	leak bool
	note string
}{
	"newalpaca-code_alpaca-81759f5eaee49506": {"Mbpp/395", true, "statement copied word for word"},
	"newalpaca-code_alpaca-bc3b2a12019d714c": {"Mbpp/395", true, "statement copied word for word"},
	"newalpaca-code_alpaca-12e202d0a0392460": {"Mbpp/32", true, "statement copied word for word"},
	"newalpaca-code_alpaca-9e55e0a31cccc0f2": {"HumanEval/13", true, "GCD asked, answered with HumanEval/13's Euclid loop"},
	"alpaca2k-code_alpaca-4a153328baf8925e":  {"Mbpp/474", true, "replace a letter with another in a string: the task, its code renamed"},
	"alpaca2k-code_alpaca-16385c24971c4e41":  {"HumanEval/156", true, "number to roman numeral, HumanEval/156's value table"},
	"newalpaca-code_alpaca-8cf9864c3c3d765b": {"Mbpp/961", true, "roman numeral to integer, Mbpp/961's symbol table"},
	"newalpaca-code_alpaca-99494297c3025f43": {"Mbpp/263", true, "merge two dictionaries: the task, copy() then update()"},
	"newalpaca-code_alpaca-7672586dd7287735": {"Mbpp/654", true, "perimeter of a rectangle: the task, 2*(l+w)"},
	"alpaca2k-code_alpaca-7d924104195ba00f":  {"HumanEval/96", false, "primes in a range by the textbook loop; HumanEval/96 asks for the primes below n"},
	"newalpaca-code_alpaca-c0cb3a820f8d833f": {"Mbpp/253", false, "sum of integers; Mbpp/253 counts them (one isinstance line shared)"},
	"alpaca2k-code_alpaca-9febbf47ebe9bb93":  {"Mbpp/168", false, "frequency of a character in a string; Mbpp/168 counts a number in an array (the same counting loop, the request worded alike; flagged with AskedTopK 3, not at the default 1)"},
}

// realCorpusLeaks are the flags labelled leaks that must be found.
var realCorpusLeaks = []string{
	"newalpaca-code_alpaca-81759f5eaee49506", "newalpaca-code_alpaca-bc3b2a12019d714c", "newalpaca-code_alpaca-12e202d0a0392460",
	"newalpaca-code_alpaca-9e55e0a31cccc0f2", "alpaca2k-code_alpaca-4a153328baf8925e", "alpaca2k-code_alpaca-16385c24971c4e41",
	"newalpaca-code_alpaca-8cf9864c3c3d765b", "newalpaca-code_alpaca-99494297c3025f43",
	"newalpaca-code_alpaca-7672586dd7287735", // its short solution with its request (MinWholeAsked)
}

// TestRealCorpusFlags audits the Code Alpaca files of the shared data
// against HumanEval and MBPP, logs every finding with the user's request
// (for reading), and checks the precision on the labelled flags
// (realCorpusLabels: at least 80% leaks, no unlabelled flag) and that the
// known leaks are found.
func TestRealCorpusFlags(t *testing.T) {
	a := testAuditor(t, Options{})
	flagged, leaks, found := 0, 0, map[string]bool{}
	for _, c := range []struct{ file, prefix string }{{"queries/code_alpaca_2k.json", "alpaca2k-"}, {"queries/new_codealpaca.json.gz", "newalpaca-"}} {
		ds := alpacaDialogues(t, c.file, c.prefix)
		rep, err := a.Run(context.Background(), Slice(ds), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d dialogues, %d flagged", c.file, rep.Dialogues, rep.Flagged)
		flagged += rep.Flagged
		byID := map[string]*schema.Dialogue{}
		for i := range ds {
			byID[ds[i].ID] = &ds[i]
		}
		for _, f := range rep.Findings {
			t.Logf("  %s %s %s %.2f %s\n    user: %.200q", f.DialogueID, f.Method, f.TaskID, f.Score, f.Evidence, byID[f.DialogueID].Messages[0].Content)
		}
		for _, id := range rep.FlaggedIDs {
			l, ok := realCorpusLabels[id]
			if !ok {
				t.Errorf("%s flagged but not labelled: read it and add it to realCorpusLabels", id)
				continue
			}
			found[id] = true
			if l.leak {
				leaks++
			}
		}
	}
	for _, id := range realCorpusLeaks {
		if !found[id] {
			t.Errorf("real leak %s (%s: %s) not found", id, realCorpusLabels[id].task, realCorpusLabels[id].note)
		}
	}
	t.Logf("precision on the labelled flags: %d of %d flags are leaks", leaks, flagged)
	if flagged > 0 && float64(leaks) < 0.8*float64(flagged) {
		t.Errorf("%d of %d flags are leaks, want >= 80%%", leaks, flagged)
	}
}

// TestCodeFeedbackSample audits the 10 real Code-Feedback records of the
// shared data: record 13462 asks for HumanEval/19 reworded (sort number
// words) and answers with its code, so it is flagged against HumanEval/19
// (by the task's word-to-number table); no other record is flagged.
func TestCodeFeedbackSample(t *testing.T) {
	ds := testDialogues(t, sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl"))
	rep, err := testAuditor(t, Options{}).Run(context.Background(), Slice(ds), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		t.Logf("%s %s %s %s", f.DialogueID, f.Method, f.TaskID, f.Evidence)
		found = found || f.DialogueID == "13462" && f.TaskID == "HumanEval/19"
	}
	if !found || rep.Flagged != 1 {
		t.Errorf("flagged %v, want only 13462 against HumanEval/19", rep.FlaggedIDs)
	}
}
