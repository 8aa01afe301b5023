package env

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrGold marks an environment error that comes from the gold's own
// evaluation (a python gold that exceeds the time limit), not from the
// sandbox: the gold self-check lists the task instead of stopping.
var ErrGold = errors.New("the gold's evaluation failed")

// ErrGoldTimeout is ErrGold by the time limit.
var ErrGoldTimeout = fmt.Errorf("%w: time limit", ErrGold)

// GoldCheck is a task's gold played as the agent's action in its own
// environment: the reward must be 1, or the task cannot tell a right answer
// from a wrong one.
type GoldCheck struct {
	TaskID string  `json:"task_id"`
	Index  int     `json:"index"`
	Reward float64 `json:"reward"`
	Pass   bool    `json:"pass"`
	// Cause names why a gold fails itself (one of the Cause constants);
	// Detail quotes the evidence (the gold's error, its output).
	Cause  string `json:"cause,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Ties: sql golds that cut ordered rows where several share the sort
	// key allow this many answers (ambiguous; any of them scores 1).
	Ties int `json:"tied_answers,omitempty"`
}

// Why a gold fails itself.
const (
	// CauseGoldError: the gold does not run here (a SQL error: MySQL
	// 8-only syntax on MariaDB, WikiSQL's pseudo-SQL no engine parses).
	CauseGoldError = "gold_error"
	// CauseNetwork: the gold needs the network, which sandboxes never reach.
	CauseNetwork = "network"
	// CauseTimeout: the gold ran out of time.
	CauseTimeout = "timeout"
	// CauseMachine: the gold's result depends on when or where it runs
	// (date, file ages, processes, the host name `env` prints): the agent's
	// and the gold's runs differ by their moments and sandboxes, as
	// InterCode's two containers did.
	CauseMachine = "machine"
	// CauseDiffers: none of the above; the reward rule sees a difference.
	CauseDiffers = "differs"
)

// CheckGold resets e to t, plays t's gold as the agent would (python: the
// gold's cells then `submit ENTRY`; ctf: `submit FLAG`; bash and sql: the
// gold, then `submit`) and names the cause where the reward is not 1.
func CheckGold(ctx context.Context, e Env, t Task) (GoldCheck, error) {
	gc := GoldCheck{TaskID: t.ID, Index: t.Index}
	if _, err := e.Reset(ctx, t); err != nil {
		return gc, err
	}
	var step, score StepResult
	var err error
	switch t.Env {
	case "ctf":
		score, err = e.Step(ctx, "submit "+t.Gold)
	case "python":
		if step, err = e.Step(ctx, t.Gold); err == nil {
			score, err = e.Step(ctx, "submit "+t.Setup[SetupEntryPoint])
		}
	default:
		if step, err = e.Step(ctx, t.Gold); err == nil {
			score, err = e.Step(ctx, "submit")
		}
	}
	if errors.Is(err, ErrGold) {
		gc.Cause, gc.Detail = CauseGoldError, clip(err.Error(), 200)
		if errors.Is(err, ErrGoldTimeout) {
			gc.Cause = CauseTimeout
		}
		return gc, nil
	}
	if err != nil {
		return gc, fmt.Errorf("task %s: %w", t.ID, err)
	}
	gc.Reward = score.Reward
	gc.Pass = score.Reward >= 1
	if n, ok := score.Info[InfoTies].(int); ok {
		gc.Ties = n
	}
	if gc.Pass {
		return gc, nil
	}
	gc.Cause, gc.Detail = goldCause(t, step, score)
	return gc, nil
}

// clockRE: shell whose result depends on the moment or the machine: times
// and ages (date, find -mmin/-mtime/-newer, -printf and stat times, ls -t
// and full times, tar's member times), uptime, processes, free space,
// /proc's counters, random names, the environment and host name.
var clockRE = regexp.MustCompile(`\bdate\b|-[am]min\b|-[am]time\b|-newer|%[TtAaCc]|\bstat\b|\bls\b[^|;&]*\s-[a-zA-Z]*t|--full-time|--time-style|\btar\b|\buptime\b|\bps\b|\btop\b|\bfree\b|\bdf\b|\bdu\b|/proc/|\$RANDOM|\bmktemp\b|\bwho\b|\bhostname\b|\benv\b|\bprintenv\b|\bpstree\b`)

func goldCause(t Task, step, score StepResult) (string, string) {
	if g, ok := score.Info[InfoGoldError].(string); ok && g != "" {
		return CauseGoldError, g
	}
	obs := step.Observation
	if t.Env == "python" {
		obs = score.Observation
	}
	goldObs, _ := score.Info["gold_obs"].(string)
	switch {
	case NetworkFailure(obs) || NetworkFailure(goldObs):
		return CauseNetwork, firstLine(obs + "\n" + goldObs)
	case strings.Contains(obs, "timed out") || strings.Contains(goldObs, "timed out"):
		return CauseTimeout, firstLine(obs)
	case t.Env == "bash" && clockRE.MatchString(t.Gold):
		return CauseMachine, clip(obs, 200)
	}
	return CauseDiffers, clip(obs, 200)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return clip(l, 200)
		}
	}
	return ""
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// GoldSummary counts a check's results.
type GoldSummary struct {
	Tasks, Passed int
	// ByCause counts the failures by cause; Ambiguous the passing sql
	// golds whose cut is tied.
	ByCause   map[string]int
	Ambiguous int
}

// SummarizeGolds counts checks.
func SummarizeGolds(cs []GoldCheck) GoldSummary {
	s := GoldSummary{Tasks: len(cs), ByCause: map[string]int{}}
	for _, c := range cs {
		if c.Pass {
			s.Passed++
		} else {
			s.ByCause[c.Cause]++
		}
		if c.Ties > 1 {
			s.Ambiguous++
		}
	}
	return s
}
