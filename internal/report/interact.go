package report

import (
	"context"

	"github.com/codefeedback/codefeedback/pipeline"
)

// buildInteract charts the interact stage's episodes per environment from
// the keys it writes (stages/interact observeEpisode): success rate and
// error rate (share of actions that failed to run), kept versus dropped
// dialogues, and the turn that first reached reward 1.
func buildInteract(_ context.Context, _ *Data, s *pipeline.StageRecord, in *Instance) error {
	st := s.Stats
	var success, errRate, mean, kept []Bar
	for _, b := range statBars(withPrefix(st, "episodes/")) {
		env, n := b.Label, b.Value
		if n == 0 {
			continue
		}
		success = append(success, Bar{Label: env, Value: st["success/"+env] / n})
		mean = append(mean, Bar{Label: env, Value: st["reward/"+env] / n})
		if a := st["actions/"+env]; a > 0 {
			errRate = append(errRate, Bar{Label: env, Value: st["failed_actions/"+env] / a})
		}
		kept = append(kept, Bar{Label: env + " kept", Value: n - st["dropped/"+env]}, Bar{Label: env + " dropped", Value: st["dropped/"+env]})
	}
	if len(success) > 0 {
		in.Charts = append(in.Charts,
			Chart{ID: chartID(s.Name, "success"), Title: "Success rate per environment (reward 1)", Bars: success, Percent: true},
			Chart{ID: chartID(s.Name, "reward"), Title: "Mean reward per environment", Bars: mean})
	}
	if len(errRate) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "errors"), Title: "Error rate: actions that failed to run", Bars: errRate, Percent: true})
	}
	if len(kept) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "kept"), Title: "Dialogues kept and dropped by reward", Bars: kept})
	}
	if b := statBars(withPrefix(st, "turns_to_success/")); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "turns"), Title: "Turn of first success", Bars: b, Histogram: true})
	}
	return nil
}
