package agent

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
)

// Metrics are InterCode's figures for one environment and strategy.
type Metrics struct {
	Env      string `json:"env"`
	Strategy string `json:"strategy"`
	Model    string `json:"model,omitempty"`
	TurnsMax int    `json:"turns_max"`
	Tasks    int    `json:"tasks"`
	// Successes are episodes that reached reward 1; Unfinished those whose
	// model failed for good (counted as failures).
	Successes  int `json:"successes"`
	Unfinished int `json:"unfinished,omitempty"`
	// SuccessRate and ErrorRate are fractions in [0, 1].
	SuccessRate float64 `json:"success_rate"`
	MeanReward  float64 `json:"mean_reward"`
	// Actions counts the agent's non-submit actions (answers without code
	// included: nothing could run); FailedActions those that did not run
	// without error (InterCode's valid_action false). ErrorRate is their
	// share.
	Actions       int     `json:"actions"`
	FailedActions int     `json:"failed_actions"`
	ErrorRate     float64 `json:"error_rate"`
	// MeanTurnsToSuccess averages, over successes, the turn that first
	// reached reward 1; TurnsToSuccess is its histogram ("1": n, ...).
	MeanTurnsToSuccess float64        `json:"mean_turns_to_success"`
	TurnsToSuccess     map[string]int `json:"turns_to_success,omitempty"`
	// MeanTurns averages the agent's actions per episode.
	MeanTurns float64 `json:"mean_turns"`
}

// Summarize computes the metrics per environment and strategy (and model
// and turn limit), in order of first appearance.
func Summarize(eps []Episode) []Metrics {
	type key struct {
		env, strategy, model string
		turns                int
	}
	var order []key
	by := map[key]*Metrics{}
	sums := map[key]*[3]float64{} // reward, turns to success, turns
	for _, ep := range eps {
		k := key{ep.Task.Env, ep.Strategy, ep.Model, ep.TurnsMax}
		m := by[k]
		if m == nil {
			m = &Metrics{Env: k.env, Strategy: k.strategy, Model: k.model, TurnsMax: k.turns, TurnsToSuccess: map[string]int{}}
			by[k], sums[k] = m, &[3]float64{}
			order = append(order, k)
		}
		s := sums[k]
		m.Tasks++
		s[0] += ep.Reward
		s[2] += float64(ep.AgentTurns())
		if ep.Success {
			m.Successes++
			s[1] += float64(ep.TurnsToSuccess)
			m.TurnsToSuccess[strconv.Itoa(ep.TurnsToSuccess)]++
		}
		if ep.Error != "" {
			m.Unfinished++
		}
		for _, st := range ep.Steps {
			if st.Submit || st.Auto {
				continue
			}
			m.Actions++
			if !st.Valid {
				m.FailedActions++
			}
		}
	}
	out := make([]Metrics, 0, len(order))
	for _, k := range order {
		m, s := by[k], sums[k]
		m.SuccessRate = ratio(float64(m.Successes), float64(m.Tasks))
		m.MeanReward = ratio(s[0], float64(m.Tasks))
		m.ErrorRate = ratio(float64(m.FailedActions), float64(m.Actions))
		m.MeanTurnsToSuccess = ratio(s[1], float64(m.Successes))
		m.MeanTurns = ratio(s[2], float64(m.Tasks))
		if len(m.TurnsToSuccess) == 0 {
			m.TurnsToSuccess = nil
		}
		out = append(out, *m)
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteTable prints one row per environment and strategy.
func WriteTable(w io.Writer, ms []Metrics) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "env\tstrategy\tturns\ttasks\tsuccess\tsuccess (%)\tmean reward\terror rate (%)\tturns to success\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%.3f\t%.1f\t%.2f\t\n", m.Env, m.Strategy, m.TurnsMax, m.Tasks,
			m.Successes, 100*m.SuccessRate, m.MeanReward, 100*m.ErrorRate, m.MeanTurnsToSuccess)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range ms {
		if m.Unfinished > 0 {
			if _, err := fmt.Fprintf(w, "%s/%s: %d episode(s) unfinished (model errors), counted as failures\n", m.Env, m.Strategy, m.Unfinished); err != nil {
				return err
			}
		}
	}
	return nil
}

// Histogram returns TurnsToSuccess as (turn, count) pairs in turn order.
func (m Metrics) Histogram() [][2]int {
	var out [][2]int
	for k, v := range m.TurnsToSuccess {
		n, _ := strconv.Atoi(k)
		out = append(out, [2]int{n, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
