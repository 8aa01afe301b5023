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

// realCorpusMaxFlags is the measured number of dialogues of the two Code
// Alpaca files (6,552) flagged against HumanEval and MBPP: three copied
// MBPP statements (realCorpusLeaks), a GCD request answered with
// HumanEval/13's Euclid loop (the same task and code), and a primes-in-a-
// range loop shaped like HumanEval/96's (the same idea, another task).
const realCorpusMaxFlags = 5

// realCorpusLeaks are the real leaks in the files: MBPP statements copied
// word for word (dialogue id -> task).
var realCorpusLeaks = map[string]string{
	"newalpaca-code_alpaca-81759f5eaee49506": "Mbpp/395",
	"newalpaca-code_alpaca-bc3b2a12019d714c": "Mbpp/395",
	"newalpaca-code_alpaca-12e202d0a0392460": "Mbpp/32",
}

// TestRealCorpusFlags audits the Code Alpaca files of the shared data
// against HumanEval and MBPP, logs every finding with the user's request
// (for reading), and checks the real leaks are found and little else is.
func TestRealCorpusFlags(t *testing.T) {
	a := testAuditor(t, Options{})
	flagged, found := 0, map[string]bool{}
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
			if realCorpusLeaks[f.DialogueID] == f.TaskID {
				found[f.DialogueID] = true
			}
			t.Logf("  %s %s %s %.2f %s\n    user: %.200q", f.DialogueID, f.Method, f.TaskID, f.Score, f.Evidence, byID[f.DialogueID].Messages[0].Content)
		}
	}
	for id, task := range realCorpusLeaks {
		if !found[id] {
			t.Errorf("real leak %s (%s) not found", id, task)
		}
	}
	if flagged > realCorpusMaxFlags {
		t.Errorf("%d dialogues flagged, want <= %d", flagged, realCorpusMaxFlags)
	}
}
