package interact

import (
	"context"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// The report's section for interact: episodes per environment from the
// keys observeEpisode records.
func init() {
	section.Register(section.Spec{Type: "interact", Title: "Interact: InterCode episodes", Build: buildSection})
}

// buildSection charts success rate and error rate (share of actions that
// failed to run), kept versus dropped dialogues, and the turn that first
// reached reward 1.
func buildSection(_ context.Context, s section.Stage, in *section.Instance) error {
	st := s.Stats
	var success, errRate, mean, kept []section.Bar
	for _, b := range section.Bars(section.Under(st, "episodes/")) {
		env, n := b.Label, b.Value
		if n == 0 {
			continue
		}
		success = append(success, section.Bar{Label: env, Value: st["success/"+env] / n})
		mean = append(mean, section.Bar{Label: env, Value: st["reward/"+env] / n})
		if a := st["actions/"+env]; a > 0 {
			errRate = append(errRate, section.Bar{Label: env, Value: st["failed_actions/"+env] / a})
		}
		kept = append(kept, section.Bar{Label: env + " kept", Value: n - st["dropped/"+env]}, section.Bar{Label: env + " dropped", Value: st["dropped/"+env]})
	}
	if len(success) > 0 {
		in.Charts = append(in.Charts,
			section.Chart{ID: section.ChartID(s.Name, "success"), Title: "Success rate per environment (reward 1)", Bars: success, Percent: true},
			section.Chart{ID: section.ChartID(s.Name, "reward"), Title: "Mean reward per environment", Bars: mean})
	}
	if len(errRate) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "errors"), Title: "Error rate: actions that failed to run", Bars: errRate, Percent: true})
	}
	if len(kept) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "kept"), Title: "Dialogues kept and dropped by reward", Bars: kept})
	}
	if b := section.Bars(section.Under(st, "turns_to_success/")); len(b) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "turns"), Title: "Turn of first success", Bars: b, Histogram: true})
	}
	return nil
}
