// Package env is an InterCode-style environment over executor sessions:
// Reset starts an episode for a task, Step runs one piece of code in the
// episode's session and returns the observation (the execution output), a
// reward (the fraction of the task's tests passed) and whether the episode
// is done. The simulate stage drives a model through it.
package env

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
)

// Scorer rates the episode after a step: the fraction of the task's tests
// passed, in [0, 1]. It may run code in the session (which changes its state).
type Scorer func(ctx context.Context, s executors.Session, code string, res executors.Result) (float64, error)

// Task is one episode's setup.
type Task struct {
	ID       string
	Language executors.Language
	Files    map[string][]byte // in the session's scratch at Reset
	Limits   executors.Limits  // per step
	MaxSteps int               // zero means 10
	Score    Scorer            // nil: reward is always 0
}

// Step is what one Step returns.
type Step struct {
	Observation string
	Result      executors.Result
	Reward      float64
	Done        bool // the tests all pass or MaxSteps is reached
	Steps       int  // steps taken in this episode
}

// Env runs episodes one at a time on an executor. Not safe for concurrent
// use; use one Env per episode in flight.
type Env struct {
	ex    executors.Executor
	task  Task
	s     executors.Session
	steps int
	done  bool
}

// New returns an environment over ex; ex stays owned by the caller.
func New(ex executors.Executor) *Env { return &Env{ex: ex} }

// Reset ends any running episode and starts task in a fresh session. It
// returns the initial observation (empty: nothing has run yet).
func (e *Env) Reset(ctx context.Context, task Task) (string, error) {
	if task.MaxSteps <= 0 {
		task.MaxSteps = 10
	}
	if e.s != nil {
		e.s.Close()
		e.s = nil
	}
	s, err := e.ex.Open(ctx, task.Language, executors.SessionOptions{Files: task.Files, Limits: task.Limits})
	if err != nil {
		return "", fmt.Errorf("env: reset task %q: %w", task.ID, err)
	}
	e.task, e.s, e.steps, e.done = task, s, 0, false
	return "", nil
}

// Step runs code in the episode's session.
func (e *Env) Step(ctx context.Context, code string) (Step, error) {
	if e.s == nil {
		return Step{}, errors.New("env: Step before Reset")
	}
	if e.done {
		return Step{}, errors.New("env: episode is done; call Reset")
	}
	res, err := e.s.Exec(ctx, code)
	if err != nil {
		return Step{}, fmt.Errorf("env: task %q step %d: %w", e.task.ID, e.steps+1, err)
	}
	e.steps++
	st := Step{Observation: Observation(res), Result: res, Steps: e.steps}
	if e.task.Score != nil {
		r, err := e.task.Score(ctx, e.s, code, res)
		if err != nil {
			return Step{}, fmt.Errorf("env: task %q: scoring step %d: %w", e.task.ID, e.steps, err)
		}
		st.Reward = min(max(r, 0), 1)
	}
	st.Done = st.Reward >= 1 || e.steps >= e.task.MaxSteps
	e.done = st.Done
	return st, nil
}

// Close ends the episode's session.
func (e *Env) Close() error {
	if e.s == nil {
		return nil
	}
	err := e.s.Close()
	e.s = nil
	return err
}

// Observation renders a result as the text a model sees: stdout, stderr,
// and a note for a timeout, OOM or signal.
func Observation(r executors.Result) string {
	var b strings.Builder
	b.WriteString(r.Stdout)
	if r.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(r.Stderr)
	}
	note := ""
	switch {
	case r.TimedOut:
		note = "[execution timed out]"
	case r.OOM:
		note = "[out of memory]"
	case r.Signal != "":
		note = "[killed by " + r.Signal + "]"
	}
	if note != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(note)
	}
	if b.Len() == 0 {
		return "(no output)"
	}
	return b.String()
}

// TestsPassed is a Scorer that runs each test (e.g. an assert statement) as
// a cell in the session after the step and returns the fraction that exit 0.
func TestsPassed(tests []string) Scorer {
	return func(ctx context.Context, s executors.Session, _ string, _ executors.Result) (float64, error) {
		if len(tests) == 0 {
			return 0, nil
		}
		passed := 0
		for _, test := range tests {
			r, err := s.Exec(ctx, test)
			if err != nil {
				return 0, err
			}
			if r.OK() {
				passed++
			}
		}
		return float64(passed) / float64(len(tests)), nil
	}
}
