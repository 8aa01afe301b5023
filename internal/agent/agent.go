// Package agent drives a model through InterCode task environments
// (executors/env) with InterCode's prompting strategies: single turn, Try
// Again with n turns, ReAct, and Plan & Solve. An episode records every
// model answer, the action taken from it, the real observation, the reward
// and whether the action ran; it converts to InterCode's trajectory log
// format and to a training dialogue. Runner runs many tasks with bounded
// concurrency, resumes finished episodes from a store, and reports
// progress; Summarize computes InterCode's metrics.
package agent

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
)

// Strategies.
const (
	Single    = "single"     // one action, judged once
	TryAgain  = "tryagain"   // act, see the output and reward, retry up to n turns
	ReAct     = "react"      // thought + action per turn, the agent submits (or is submitted at the limit)
	PlanSolve = "plan-solve" // a numbered plan first, one action per step, then retries
)

// Strategies lists the strategy names.
var Strategies = []string{Single, TryAgain, ReAct, PlanSolve}

// Options configure an Agent.
type Options struct {
	Strategy string
	// Turns is the most actions the agent takes (single: always 1).
	Turns int
	// Model names the model in logs and cache keys.
	Model string
	// Seed and MaxTokens go to the model with temperature 0.
	Seed      int
	MaxTokens int
	// MaxObservation caps the characters of an observation shown to the
	// model (default 2000; InterCode cuts at 350-1000); the episode keeps
	// the whole observation.
	MaxObservation int
}

func (o Options) withDefaults() Options {
	if o.Strategy == "" {
		o.Strategy = TryAgain
	}
	switch {
	case o.Strategy == Single:
		o.Turns = 1
	case o.Turns <= 0:
		o.Turns = 3
	}
	if o.MaxObservation <= 0 {
		o.MaxObservation = 2000
	}
	return o
}

// Validate reports a bad option.
func (o Options) Validate() error {
	switch o.Strategy {
	case "", Single, TryAgain, ReAct, PlanSolve:
	default:
		return fmt.Errorf("agent: unknown strategy %q (want %s)", o.Strategy, strings.Join(Strategies, ", "))
	}
	if o.Turns < 0 {
		return fmt.Errorf("agent: turns %d < 0", o.Turns)
	}
	return nil
}

var promptNames = []string{"agent_system", "agent_single", "agent_tryagain", "agent_react", "agent_plan", "agent_no_action"}

// Agent runs episodes. Safe for concurrent use (each episode needs its own
// Env).
type Agent struct {
	opts    Options
	model   llm.Chatter
	prompts map[string]prompts.Template
}

// New builds an Agent over model.
func New(opts Options, model llm.Chatter) (*Agent, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if model == nil {
		return nil, errors.New("agent: no model")
	}
	a := &Agent{opts: opts.withDefaults(), model: model, prompts: map[string]prompts.Template{}}
	for _, n := range promptNames {
		t, err := prompts.Get(n)
		if err != nil {
			return nil, err
		}
		a.prompts[n] = t
	}
	return a, nil
}

// Options returns the agent's effective options.
func (a *Agent) Options() Options { return a.opts }

// PromptVersion names every template with its text hash.
func (a *Agent) PromptVersion() string {
	var vs []string
	for _, n := range promptNames {
		vs = append(vs, n+"@"+a.prompts[n].Version)
	}
	return strings.Join(vs, ",")
}

// Step is one turn of an episode.
type Step struct {
	// Answer is the model's whole answer ("" for the loop's own submit).
	Answer string `json:"answer,omitempty"`
	// Thought is ReAct's reasoning; PlanStep the plan step being executed.
	Thought  string `json:"thought,omitempty"`
	PlanStep string `json:"plan_step,omitempty"`
	// Action is what was sent to the environment ("" when the answer held
	// none: then nothing ran and Valid is false).
	Action      string  `json:"action"`
	Observation string  `json:"observation"`
	Reward      float64 `json:"reward"`
	Valid       bool    `json:"valid"`
	// Submit marks a submit action; Auto one the loop made at the turn
	// limit (ReAct), not the agent.
	Submit bool `json:"submit,omitempty"`
	Auto   bool `json:"auto,omitempty"`
	// Info is the environment's extra information for the step.
	Info map[string]any `json:"info,omitempty"`
}

// Episode is one task's run.
type Episode struct {
	Task     env.Task      `json:"task"`
	Strategy string        `json:"strategy"`
	Model    string        `json:"model"`
	TurnsMax int           `json:"turns_max"`
	Plan     []string      `json:"plan,omitempty"`
	Steps    []Step        `json:"steps"`
	Messages []llm.Message `json:"messages"`
	// Reward is the best reward of any turn (InterCode's max_reward);
	// Success is Reward 1; TurnsToSuccess the 1-based turn that first
	// reached it (0 when none did).
	Reward         float64 `json:"reward"`
	Success        bool    `json:"success"`
	TurnsToSuccess int     `json:"turns_to_success,omitempty"`
	// Error is set when the episode could not finish (the model failed on
	// every retry); it counts as a failure and is not stored, so a re-run
	// tries it again.
	Error  string `json:"error,omitempty"`
	Cached bool   `json:"-"`
	// GoldError is the task's gold's own error where it does not run in
	// its environment (a SQL gold no engine parses: WikiSQL's): no answer
	// of the episode can then be proven right, and the run warns.
	GoldError string `json:"gold_error,omitempty"`
}

// GoldErrorWarning says how many episodes' golds did not run in their
// environment, naming a few with the first error ("" for none).
func GoldErrorWarning(eps []Episode) string {
	var ids []string
	first := ""
	for _, e := range eps {
		if e.GoldError != "" {
			ids = append(ids, e.Task.ID)
			if first == "" {
				first = e.GoldError
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	ex := ids
	if len(ex) > 3 {
		ex = ex[:3]
	}
	return fmt.Sprintf("%d of %d tasks' golds do not run in their environment (%s: %s): they score every answer 0; "+
		"`codefeedback intercode check-golds TASKFILE` lists them", len(ids), len(eps), strings.Join(ex, ", "), first)
}

// AgentTurns counts the actions the agent chose (not the loop's submit).
func (e Episode) AgentTurns() int {
	n := 0
	for _, s := range e.Steps {
		if !s.Auto {
			n++
		}
	}
	return n
}

// finish computes the episode's reward summary.
func (e *Episode) finish() {
	e.Reward, e.Success, e.TurnsToSuccess = 0, false, 0
	turn := 0
	for _, s := range e.Steps {
		if !s.Auto {
			turn++
		}
		if s.Reward > e.Reward {
			e.Reward = s.Reward
		}
		if s.Reward >= 1 && !e.Success {
			e.Success, e.TurnsToSuccess = true, max(turn, 1)
		}
	}
}

// ExceededThought is the thought InterCode's ReAct logs for the submit it
// makes at the turn limit.
const ExceededThought = "EXCEEDED MAX TURNS: submit"

// Trajectory is the episode in InterCode's log format; a ReAct episode's
// thoughts go in turn_history.thoughts, one per turn.
func (e Episode) Trajectory() env.Trajectory {
	t := env.Trajectory{Environment: env.ICName(e.Task.Env), Dataset: e.Task.Dataset, TaskID: e.Task.Index,
		Query: e.Task.Query, Hardness: e.Task.Setup[env.SetupHardness]}
	if f := e.Task.Setup[env.SetupSourceFile]; f != "" {
		t.Dataset = env.LoggedDataset(f)
	}
	t.TurnHistory = env.TurnHistory{Actions: []string{}, Observations: []string{}, Rewards: []float64{}, ValidAction: []*bool{}}
	for _, s := range e.Steps {
		a := s.Action
		if a == "" {
			a = s.Answer // InterCode logs the unparsed answer of a turn with no code
		}
		t.Add(a, s.Observation, s.Reward, s.Valid)
		if e.Strategy == ReAct {
			th := s.Thought
			if s.Auto {
				th = ExceededThought
			}
			t.TurnHistory.Thoughts = append(t.TurnHistory.Thoughts, th)
		}
	}
	t.Summary.TurnsTaken = e.AgentTurns()
	t.Summary.TurnsMax = e.TurnsMax
	return t
}

// Run plays one episode of t in e, which the caller owns. An error means
// the environment failed or ctx ended; a model that fails on every retry
// ends the episode with Episode.Error set.
func (a *Agent) Run(ctx context.Context, e env.Env, t env.Task) (Episode, error) {
	ctx = context.WithValue(ctx, taskKey{}, t)
	ep := Episode{Task: t, Strategy: a.opts.Strategy, Model: a.opts.Model, TurnsMax: a.opts.Turns}
	if _, err := e.Reset(ctx, t); err != nil { // environments build their caches once across processes (env.BuildOnce)
		return ep, fmt.Errorf("agent: reset %s: %w", t.ID, err)
	}
	r := &run{a: a, e: e, ep: &ep, lang: Lang(t.Env)}
	sys, err := a.render("agent_system", r.data(nil))
	if err != nil {
		return ep, err
	}
	r.msgs = []llm.Message{llm.System(sys)}
	switch a.opts.Strategy {
	case Single:
		err = r.single(ctx)
	case TryAgain:
		err = r.tryAgain(ctx)
	case ReAct:
		err = r.react(ctx)
	case PlanSolve:
		err = r.planSolve(ctx)
	}
	ep.Messages = r.msgs
	var me *modelError
	if errors.As(err, &me) {
		ep.Error, err = me.Error(), nil
	}
	ep.finish()
	return ep, err
}

type taskKey struct{}

// TaskOf is the task whose episode a model call belongs to, from the
// context Run passes to the model: a stand-in model that answers from the
// task (the canonical answers of `eval --model canonical`) finds it by its
// id this way, not by searching the conversation for its query.
func TaskOf(ctx context.Context) (env.Task, bool) {
	t, ok := ctx.Value(taskKey{}).(env.Task)
	return t, ok
}

// modelError is a model call that failed for good: the episode ends.
type modelError struct{ err error }

func (m *modelError) Error() string { return "model: " + m.err.Error() }
func (m *modelError) Unwrap() error { return m.err }

func (a *Agent) render(name string, data map[string]any) (string, error) {
	return a.prompts[name].Render(data)
}

// Lang is the code-block language of an environment's actions.
func Lang(envName string) string {
	switch envName {
	case "sql":
		return "sql"
	case "python":
		return "python"
	}
	return "bash" // bash, ctf
}

// Setting describes an environment to the model.
func Setting(envName string) string {
	switch envName {
	case "sql":
		return "a SQL database (answer in SQL; the schema can be explored with queries)"
	case "python":
		return "a Python 3 interpreter"
	case "ctf":
		return "a Linux shell holding a capture-the-flag challenge"
	}
	return "a Bash shell on a Linux machine"
}

func submitHint(envName string) string {
	switch envName {
	case "python":
		return "`submit NAME`"
	case "ctf":
		return "`submit FLAG`"
	}
	return "`submit`"
}

// Action is what an answer asks the environment to do.
type Action struct {
	Code    string // code to run ("" for none)
	Submit  bool
	Arg     string // submit's argument (python: function name, ctf: flag)
	Thought string // ReAct's "Thought:" text
}

var reInlineFence = regexp.MustCompile("(?m)^(\\s*Action:)[ \t]*```")

var reSubmit = regexp.MustCompile("(?m)^\\s*(?:Action:\\s*)?`*submit(?:\\s+([^`\\s]+))?`*\\s*$")

// ParseAction reads the action of an answer: the first code block in lang
// (or unlabelled), else a `submit` line; ok is false when there is neither.
// A code block that is itself just "submit ..." is a submit.
func ParseAction(answer, lang string) (Action, bool) {
	var act Action
	if th, _, ok := strings.Cut(answer, "Action:"); ok {
		act.Thought = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(th), "Thought:"))
	}
	// "Action: ```bash" on one line: the fence must open its own line.
	answer = reInlineFence.ReplaceAllString(answer, "$1\n```")
	if code, err := parse.Code(answer, lang); err == nil {
		code = strings.TrimSpace(code)
		if arg, ok := env.SubmitArg(code); ok && !strings.Contains(code, "\n") {
			act.Submit, act.Arg = true, arg
			return act, true
		}
		act.Code = code
		return act, true
	}
	if m := reSubmit.FindStringSubmatch(answer); m != nil {
		act.Submit, act.Arg = true, m[1]
		return act, true
	}
	return act, false
}

var reDef = regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*)\s*\(`)

var reNumbered = regexp.MustCompile(`(?m)^\s*(\d+)[.)]\s+(.+)$`)

// ParsePlan reads a numbered list of steps.
func ParsePlan(answer string, maxSteps int) []string {
	var out []string
	for _, m := range reNumbered.FindAllStringSubmatch(answer, -1) {
		out = append(out, strings.TrimSpace(m[2]))
		if maxSteps > 0 && len(out) == maxSteps {
			break
		}
	}
	return out
}
