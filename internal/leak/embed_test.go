package leak

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"
)

// Measured with the built-in TF-IDF (ParaphraseDim) at the default
// threshold 0.6 (deterministic), each turn on its own with its code
// removed, against the statements without code: 37 of the 40 reworded
// statements are found and 15 of 2,017 clean Code Alpaca dialogues are
// flagged (the same generic task worded alike). At 0.55: 39/40 and 26; at
// 0.65: 33/40 and 6. (Before: first user turn against the whole prompt at
// 384 dimensions, 34/40 and 15.)
const (
	minEmbedFound          = 37
	maxEmbedFalsePositives = 15
)

// TestEmbeddingParaphrase plants 20 HumanEval and 20 MBPP problem
// statements, lightly reworded (MBPP's "Write a (python) function to" becomes
// "I need code that will"; HumanEval's prompt keeps its docstring but the
// function is renamed), with no solution, and checks the TF-IDF paraphrase
// check finds them.
func TestEmbeddingParaphrase(t *testing.T) {
	a := testAuditor(t, Options{})
	if err := a.EnableEmbedding(context.Background(), embed.NewTFIDF(ParaphraseDim), 0); err != nil {
		t.Fatal(err)
	}
	he, mb := testHumanEval(t), testMBPP(t)
	var planted []schema.Dialogue
	for i := 0; i < 20; i++ {
		h, m := he[i*8], mb[10+i*47]
		for _, p := range []schema.Problem{h, m} {
			q := strings.NewReplacer("Write a python function to", "I need code that will", "Write a function to", "I need code that will").Replace(p.Text)
			if p.EntryPoint != "" {
				q = strings.ReplaceAll(q, p.EntryPoint, "solve")
			}
			planted = append(planted, schema.Dialogue{ID: "planted-" + p.ID, Messages: []schema.Message{
				{Role: schema.RoleUser, Content: "Please help. " + q},
				{Role: schema.RoleAssistant, Content: "Here is one way to do it."},
			}})
		}
	}
	clean := testAlpacaDialogues(t)
	if os.Getenv("CODEFEEDBACK_AUDIT_FULL") == "" {
		// 4096-dimensional dense dot products with every statement are
		// slow; the bound below still holds for a subset.
		clean = clean[:300]
		t.Log("embedding: 300 of the 2,017 clean dialogues (CODEFEEDBACK_AUDIT_FULL=1 for all)")
	}
	corpus := append(clean, planted...)
	rep, err := a.Run(context.Background(), Slice(corpus), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	var fps []string
	for _, f := range rep.Findings {
		if f.Method != MethodEmbedding {
			continue
		}
		if f.DialogueID == "planted-"+f.TaskID {
			found[f.DialogueID] = true
		}
		if strings.HasPrefix(f.DialogueID, "alpaca-") {
			fps = append(fps, f.DialogueID+" "+f.TaskID)
		}
	}
	sort.Strings(fps)
	fpIDs := map[string]bool{}
	for _, fp := range fps {
		fpIDs[strings.Fields(fp)[0]] = true
	}
	t.Logf("embedding: %d/40 planted found against their task; clean dialogues flagged: %d %v", len(found), len(fpIDs), fps)
	if len(found) < minEmbedFound {
		t.Errorf("embedding found %d of %d planted statements, want >= %d", len(found), len(planted), minEmbedFound)
	}
	if len(fpIDs) > maxEmbedFalsePositives {
		t.Errorf("embedding flagged %d clean dialogues, want <= %d", len(fpIDs), maxEmbedFalsePositives)
	}
}
