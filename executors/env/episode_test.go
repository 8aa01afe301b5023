package env

import (
	"errors"
	"strings"
	"testing"
)

// An episode refuses steps before Reset and after a submit, hands a submit
// to the scorer (whose result ends the episode, its error kept), and leaves
// other actions to the environment.
func TestEpisodeStep(t *testing.T) {
	var scored []string
	boom := errors.New("boom")
	score := func(arg string) (StepResult, error) {
		scored = append(scored, arg)
		if arg == "bad" {
			return StepResult{Reward: 0.5}, boom
		}
		return StepResult{Reward: 1}, nil
	}
	var ep Episode
	steps := []struct {
		begin   bool // Begin before the step
		action  string
		handled bool
		err     string // "" none
		done    bool
		reward  float64
	}{
		{false, "ls", true, "x: Step before Reset", false, 0},
		{true, "ls", false, "", false, 0},
		{false, "submit flag", true, "", true, 1},
		{false, "ls", true, "x: episode is done; call Reset", false, 0},
		{true, "submit bad", true, "boom", true, 0.5},
		{true, "echo submit", false, "", false, 0},
	}
	for i, s := range steps {
		if s.begin {
			ep.Begin()
		}
		r, handled, err := ep.Step("x", s.action, score)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if handled != s.handled || got != s.err || r.Done != s.done || r.Reward != s.reward {
			t.Errorf("step %d (%q): got handled %v err %q done %v reward %v, want %v %q %v %v",
				i, s.action, handled, got, r.Done, r.Reward, s.handled, s.err, s.done, s.reward)
		}
	}
	if got := strings.Join(scored, ","); got != "flag,bad" {
		t.Errorf("scored %q, want the two submits' arguments flag,bad", got)
	}
}
