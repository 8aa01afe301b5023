package correct

import (
	"context"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/schema"
)

// The report's section for correct: dialogues and discarded answers per
// bug kind, each mutation operator's yield, and the dialogues kept per
// operator, counted from the stage's output.
func init() {
	section.Register(section.Spec{Type: "correct", Title: "Correct: planted bugs", Build: buildSection,
		DatasetLabels: []section.DatasetLabel{
			{Key: "bug_kind", Title: "bug kinds", Chart: "Bug kinds", Sample: true},
			{Key: "mutation_op", Title: "mutation operators"},
		}})
}

func buildSection(ctx context.Context, s section.Stage, in *section.Instance) error {
	kinds := map[string]float64{}
	discarded := map[string]float64{}
	tried, kept := map[string]float64{}, map[string]float64{}
	for k, v := range s.Stats {
		if op, ok := strings.CutPrefix(k, "mutants/tried/"); ok {
			tried[op] = v
		}
		if op, ok := strings.CutPrefix(k, "mutants/kept/"); ok {
			kept[op] = v
		}
		if rest, ok := strings.CutPrefix(k, "dialogues."); ok {
			if rest == "" {
				rest = "unlabelled"
			}
			kinds[rest] = v
		}
		if rest, ok := strings.CutPrefix(k, "discarded."); ok {
			discarded[rest] = v
		}
	}
	if len(kinds) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "kinds"), Title: "Dialogues per bug kind", Bars: section.Bars(kinds)})
	}
	if len(discarded) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "discarded"), Title: "Model answers discarded per bug kind", Bars: section.Bars(discarded)})
	}
	// The item statistics count the mutants tried and kept per operator;
	// the yield is their ratio.
	if len(tried) > 0 {
		yield := map[string]float64{}
		for op, n := range tried {
			if n > 0 {
				yield[fmt.Sprintf("%s (%d/%d)", op, int64(kept[op]), int64(n))] = kept[op] / n
			}
		}
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "yield"), Title: "Mutation operator yield (mutants kept / tried per operator)", Bars: section.Bars(yield), Percent: true})
	}
	// Dialogues carry their operator in a label, so the dialogues kept per
	// operator are counted from the stage's output.
	if s.Dialogues == nil {
		return nil
	}
	ops := map[string]int{}
	err := s.Dialogues(ctx, func(dl schema.Dialogue) error {
		if dl.Stage == "correct" && dl.Labels["mutation_op"] != "" {
			ops[dl.Labels["mutation_op"]]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(ops) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "operators"), Title: "Dialogues kept per mutation operator", Bars: section.Bars(ops)})
	}
	return nil
}
