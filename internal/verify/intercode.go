package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
	_ "github.com/codefeedback/codefeedback/executors/env/all" // the environments a dialogue may name
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/schema"
)

// CheckReplay names mismatches of an InterCode episode replayed in its
// environment (interact dialogues).
const CheckReplay = "replay"

// replayInteract re-runs an interact dialogue's actions in a fresh episode
// of its task (the environment named by its labels) and compares each
// observation, whether each action ran, each recorded reward and the
// episode's reward.
func (c *Checker) replayInteract(ctx context.Context, d *schema.Dialogue, rep *Report) error {
	e, err := env.Open(ctx, d.Labels[agent.LabelEnv], c.Exec, env.Options{})
	if err != nil {
		return fmt.Errorf("verify: dialogue %s: %w", d.ID, err)
	}
	defer e.Close()
	steps, reward, recorded, err := agent.Replay(ctx, e, d)
	if err != nil {
		return err
	}
	bad := func(turn int, detail, rec, got string) {
		rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: turn, Check: CheckReplay, Detail: detail, Recorded: rec, Rerun: got})
	}
	for _, s := range steps {
		rep.Executions++
		ok := true
		if strings.TrimRight(s.Observation, "\n") != strings.TrimRight(s.Recorded, "\n") {
			bad(s.Turn, "observation differs", clip(s.Recorded), clip(s.Observation))
			ok = false
		}
		if s.Valid != s.RecordedValid {
			bad(s.Turn, "action validity differs", fmt.Sprint(s.RecordedValid), fmt.Sprint(s.Valid))
			ok = false
		}
		if s.Reward != s.RecordedRew {
			bad(s.Turn, "reward differs", fmt.Sprint(s.RecordedRew), fmt.Sprint(s.Reward))
			ok = false
		}
		if ok {
			rep.Agreed++
		}
	}
	if reward != recorded {
		bad(len(d.Messages)-1, "episode reward differs", fmt.Sprint(recorded), fmt.Sprint(reward))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
