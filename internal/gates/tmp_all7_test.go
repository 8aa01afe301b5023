package gates_test

import (
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

func TestTmpAll7(t *testing.T) {
	c := loadCorpus(t, 100, 3)
	bad := map[llmtest.Misbehaviour]bool{llmtest.WrongCategory: true, llmtest.UnparseableJSON: true, llmtest.UnchangedRevision: true,
		llmtest.CodeInFeedback: true, llmtest.YesJudge: true, llmtest.ThanksToOutput: true, llmtest.CodeForExplanation: true}
	man, ds, err := runPipeline(t, c, &llmtest.Persona{Solve: c.solve, Bad: bad, Rate: 0.3}, "{}")
	t.Logf("err=%v published=%d", err, len(ds))
	if man != nil {
		for _, s := range man.Stages {
			for _, f := range gates.Figures(s.Stats) {
				t.Logf("stage %s gate %s: %.0f checked, %.0f rejected %v", s.Name, f.Gate, f.Checked, f.Rejected, f.Reasons)
			}
		}
	}
	sim, _ := readDialogues(t, lastSimulated)
	t.Logf("simulate output: %d", len(sim))
}
