package agent

import (
	"fmt"
	"path/filepath"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/schema"
)

// CombinedLogName is InterCode's name for a run's log file
// (ic_sql_multiturn_gpt-4_10_turns.json there; the strategy here).
func CombinedLogName(ep Episode) string {
	return fmt.Sprintf("%s_%s_%s_%d_turns.json", env.ICName(ep.Task.Env), ep.Strategy,
		unsafeName.ReplaceAllString(ep.Model, "_"), ep.TurnsMax)
}

// WriteRun writes a finished run into dir: InterCode's combined log per
// environment and strategy, episodes.jsonl (every episode with its
// conversation), dialogues.jsonl (every episode that acted, as a training
// dialogue labelled pass or fail, which `codefeedback verify` replays) and
// metrics.json. Files appear whole (rename).
func WriteRun(dir string, eps []Episode, ms []Metrics) error {
	groups := map[string][]env.Trajectory{}
	var order []string
	for _, ep := range eps {
		n := CombinedLogName(ep)
		if _, ok := groups[n]; !ok {
			order = append(order, n)
		}
		groups[n] = append(groups[n], ep.Trajectory())
	}
	for _, n := range order {
		if err := env.WriteTrajectories(filepath.Join(dir, n), groups[n]); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	if err := schema.WriteAll(filepath.Join(dir, "episodes.jsonl"), eps); err != nil {
		return err
	}
	var ds []schema.Dialogue
	for _, ep := range eps {
		if ep.AgentTurns() == 0 || ep.Error != "" {
			continue
		}
		d, err := ep.Dialogue("intercode")
		if err != nil {
			continue // no action ran: nothing to learn from
		}
		ds = append(ds, d)
	}
	if err := schema.WriteAll(filepath.Join(dir, "dialogues.jsonl"), ds); err != nil {
		return err
	}
	return schema.WriteJSONAtomic(filepath.Join(dir, "metrics.json"), ms)
}
