package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

// run is one episode in progress.
type run struct {
	a    *Agent
	e    env.Env
	ep   *Episode
	lang string
	msgs []llm.Message
	defs []string // python: functions the agent defined, newest last
}

// data is the template data for a prompt; extra adds or overrides keys.
func (r *run) data(extra map[string]any) map[string]any {
	t := r.ep.Task
	d := map[string]any{"Env": t.Env, "Lang": r.lang, "Setting": Setting(t.Env), "Submit": submitHint(t.Env),
		"Query": t.Query, "Turns": r.a.opts.Turns, "First": false, "Observation": "", "Reward": 0.0,
		"Left": 0, "N": 0, "Step": ""}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// ask sends user to the model and returns its answer.
func (r *run) ask(ctx context.Context, user string) (string, error) {
	r.msgs = append(r.msgs, llm.User(user))
	temp := 0.0
	seed := r.a.opts.Seed
	resp, err := r.a.model.Chat(ctx, llm.Request{Messages: r.msgs,
		Params: llm.Params{Model: r.a.opts.Model, Temperature: &temp, Seed: &seed, MaxTokens: r.a.opts.MaxTokens}})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, llm.ErrBudgetExceeded) {
			return "", err
		}
		return "", &modelError{err}
	}
	r.msgs = append(r.msgs, llm.Assistant(resp.Text))
	return resp.Text, nil
}

// shown cuts an observation to what the model is shown.
func (r *run) shown(obs string) string {
	n := r.a.opts.MaxObservation
	obs = strings.TrimRight(obs, "\n")
	if obs == "" {
		return "(no output)"
	}
	if len(obs) <= n {
		return obs
	}
	return obs[:n] + fmt.Sprintf("\n[... %d more characters]", len(obs)-n)
}

// submitArg is the argument `submit` takes for the episode's environment
// when the agent gives none: python's newest defined function.
func (r *run) submitArg(given string) string {
	if given != "" || r.ep.Task.Env != "python" || len(r.defs) == 0 {
		return given
	}
	return r.defs[len(r.defs)-1]
}

// act runs the action of answer and records the step. With score set (Try
// Again, Plan & Solve, single), a code action is followed by a score of the
// state, as InterCode's n-turn experiments submit after every action and go
// on. It returns the step and whether the episode ended (a submit).
func (r *run) act(ctx context.Context, answer string, score bool, st Step) (Step, bool, error) {
	st.Answer = answer
	act, ok := ParseAction(answer, r.lang)
	if st.Thought == "" {
		st.Thought = act.Thought
	}
	if !ok {
		msg, err := r.a.render("agent_no_action", r.data(nil))
		if err != nil {
			return st, false, err
		}
		st.Observation, st.Valid = msg, false
		r.ep.Steps = append(r.ep.Steps, st)
		return st, false, nil
	}
	if act.Submit {
		st.Submit = true
		st.Action = strings.TrimSpace("submit " + r.submitArg(act.Arg))
		res, err := r.e.Step(ctx, st.Action)
		if err != nil {
			return st, true, fmt.Errorf("agent: %s: %w", r.ep.Task.ID, err)
		}
		st.Observation, st.Reward, st.Valid, st.Info = res.Observation, res.Reward, res.Valid, res.Info
		r.noteGold(res)
		r.ep.Steps = append(r.ep.Steps, st)
		return st, true, nil
	}
	st.Action = act.Code
	if r.ep.Task.Env == "python" {
		for _, m := range reDef.FindAllStringSubmatch(act.Code, -1) {
			r.defs = append(r.defs, m[1])
		}
	}
	res, err := r.e.Step(ctx, act.Code)
	if err != nil {
		return st, false, fmt.Errorf("agent: %s: %w", r.ep.Task.ID, err)
	}
	st.Observation, st.Reward, st.Valid, st.Info = res.Observation, res.Reward, res.Valid, res.Info
	if res.Done {
		r.ep.Steps = append(r.ep.Steps, st)
		return st, true, nil
	}
	if score && r.ep.Task.Env != "ctf" { // a flag is only ever judged when submitted
		sc, err := r.e.Score(ctx, r.submitArg(""))
		if err != nil {
			return st, false, fmt.Errorf("agent: %s: score: %w", r.ep.Task.ID, err)
		}
		st.Reward = sc.Reward
		r.noteGold(sc)
	}
	r.ep.Steps = append(r.ep.Steps, st)
	return st, false, nil
}

// noteGold records a score's report that the gold itself does not run.
func (r *run) noteGold(sc env.StepResult) {
	if g, _ := sc.Info[env.InfoGoldError].(string); g != "" && r.ep.GoldError == "" {
		r.ep.GoldError = g
	}
}

func (r *run) single(ctx context.Context) error {
	ans, err := r.askFirst(ctx, "agent_single")
	if err != nil {
		return err
	}
	_, _, err = r.act(ctx, ans, true, Step{})
	return err
}

// askFirst asks the model the first prompt of template tmpl.
func (r *run) askFirst(ctx context.Context, tmpl string) (string, error) {
	first, err := r.a.render(tmpl, r.data(map[string]any{"First": true}))
	if err != nil {
		return "", err
	}
	return r.ask(ctx, first)
}

// tryAgain: act, see the output and the reward, retry until reward 1 or
// the turn limit.
func (r *run) tryAgain(ctx context.Context) error {
	_, err := r.loop(ctx, "agent_tryagain", true, func(st Step, turn int) (string, error) {
		return r.retry("agent_tryagain", st, r.a.opts.Turns-turn, nil)
	})
	return err
}

// loop is the turn loop Try Again and ReAct share: the template's first
// message, then per turn an answer and its action (scored or not) until
// the episode is done, a scored action reaches reward 1, or the turns run
// out; next gives the message after a turn's step. ended: the episode
// ended before the turns ran out.
func (r *run) loop(ctx context.Context, tmpl string, score bool, next func(st Step, turn int) (string, error)) (ended bool, err error) {
	msg, err := r.a.render(tmpl, r.data(map[string]any{"First": true}))
	if err != nil {
		return false, err
	}
	for turn := 1; turn <= r.a.opts.Turns; turn++ {
		ans, err := r.ask(ctx, msg)
		if err != nil {
			return false, err
		}
		st, done, err := r.act(ctx, ans, score, Step{})
		if err != nil || done || score && st.Reward >= 1 {
			return true, err
		}
		if msg, err = next(st, turn); err != nil {
			return false, err
		}
	}
	return false, nil
}

// retry is the next user message after st: the no-action notice, or the
// template with the observation and reward.
func (r *run) retry(tmpl string, st Step, left int, extra map[string]any) (string, error) {
	if st.Action == "" {
		return st.Observation, nil
	}
	d := map[string]any{"Observation": r.shown(st.Observation), "Reward": st.Reward, "Left": left}
	for k, v := range extra {
		d[k] = v
	}
	return r.a.render(tmpl, r.data(d))
}

// react: thought and action per turn, observations only (no reward) until
// the agent submits; at the turn limit the loop submits for it.
func (r *run) react(ctx context.Context) error {
	ended, err := r.loop(ctx, "agent_react", false, func(st Step, turn int) (string, error) {
		if st.Action == "" {
			return st.Observation, nil
		}
		return r.a.render("agent_react", r.data(map[string]any{"N": turn, "Observation": r.shown(st.Observation)}))
	})
	if err != nil || ended {
		return err
	}
	return r.autoSubmit(ctx)
}

// autoSubmit scores the episode as it stands once the turns are used up.
func (r *run) autoSubmit(ctx context.Context) error {
	st := Step{Auto: true, Submit: true, Action: strings.TrimSpace("submit " + r.submitArg(""))}
	res, err := r.e.Step(ctx, st.Action)
	if err != nil {
		return fmt.Errorf("agent: %s: submit: %w", r.ep.Task.ID, err)
	}
	st.Observation, st.Reward, st.Valid, st.Info = res.Observation, res.Reward, res.Valid, res.Info
	r.noteGold(res)
	r.ep.Steps = append(r.ep.Steps, st)
	return nil
}

// planSolve: the model writes a numbered plan (at most Turns steps); each
// step becomes one action, scored like Try Again; turns left after the plan
// refine until reward 1. Unlike InterCode's script, a step that reaches
// reward 1 ends the episode (later steps could only undo it).
func (r *run) planSolve(ctx context.Context) error {
	turns := r.a.opts.Turns
	ans, err := r.askFirst(ctx, "agent_plan")
	if err != nil {
		return err
	}
	plan := ParsePlan(ans, turns)
	if len(plan) == 0 {
		plan = []string{"Solve the task."}
	}
	r.ep.Plan = plan
	var last Step
	for turn := 1; turn <= turns; turn++ {
		var msg string
		step := ""
		if turn <= len(plan) {
			step = plan[turn-1]
			obs := ""
			if turn > 1 {
				obs = r.shown(last.Observation)
			}
			msg, err = r.a.render("agent_plan", r.data(map[string]any{"N": turn, "Step": step, "Observation": obs}))
			if turn > 1 && last.Action == "" {
				msg = last.Observation + "\n\n" + msg
			}
		} else {
			msg, err = r.retry("agent_plan", last, turns-turn+1, nil)
		}
		if err != nil {
			return err
		}
		ans, err := r.ask(ctx, msg)
		if err != nil {
			return err
		}
		st, done, err := r.act(ctx, ans, true, Step{PlanStep: step})
		if err != nil || done || st.Reward >= 1 {
			return err
		}
		last = st
	}
	return nil
}
