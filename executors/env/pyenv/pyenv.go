// Package pyenv is InterCode's Python environment: the agent explores in its
// own interpreter (an executors Session: cells share one namespace) and ends
// with `submit FUNC`. Submit never judges inside that interpreter: the
// agent's cells are replayed in a fresh sandbox process that only records
// what the judged function returns for each test (judge.py, mode record),
// and a second fresh process that never runs agent code evaluates the tests
// on those recorded values and on the gold solution (mode judge). As in
// InterCode, the gold function's name is bound to the submitted function, and
// the reward is the share of tests whose outcome matches the gold's.
//
// Registers the "python" environment and the "ic_mbpp" loader.
package pyenv

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

//go:embed judge.py
var judgeSource string

func init() {
	env.Register("python", func(ctx context.Context, ex executors.Executor, opts env.Options) (env.Env, error) {
		switch v := opts.Params["entry"]; v {
		case "", "tested", EntryFirst:
		default:
			return nil, fmt.Errorf("pyenv: entry %q (want tested or first)", v)
		}
		return New(ex, opts), nil
	})
	env.RegisterLoader("ic_mbpp", "python", LoadMBPP)
}

// JudgeTimeout bounds each judge process (InterCode's is 5 s per test run
// through rpyc; ours covers replaying the cells and all tests).
var JudgeTimeout = 20 * time.Second

// Env is the python environment. Not safe for concurrent use.
type Env struct {
	ex    executors.Executor
	opts  env.Options
	s     executors.Session
	task  env.Task
	tests []string
	entry string
	// cells are the agent's actions since the interpreter last started
	// empty: what submit replays in a fresh process.
	cells []string
	ep    env.Episode
}

// New returns a python environment over ex. opts.Params "entry" names
// what the submitted function is bound to: "tested" (default: the gold
// function the tests call, GoldName) or "first" (InterCode's rule: the
// gold's first def, even a helper the tests never call, so a correct
// function under another name fails, and the gold's code is left in the
// interpreter after each reward, as InterCode's is; replays use it).
func New(ex executors.Executor, opts env.Options) *Env {
	if opts.Limits.Timeout == 0 {
		opts.Limits.Timeout = 10 * time.Second
	}
	return &Env{ex: ex, opts: opts}
}

// firstDef is the gold's first def (InterCode binds the submitted
// function to it).
func firstDef(gold string) string {
	if m := defRE.FindStringSubmatch(gold); m != nil {
		return m[1]
	}
	return ""
}

// EntryFirst is Params["entry"] for InterCode's binding of the submitted
// function to the gold's first def.
const EntryFirst = "first"

var defRE = regexp.MustCompile(`def\s+(\w+)\s*\(`)

// GoldName is InterCode's gold function name: the first `def` in the gold
// code (re.search(r'def (\w+)\(', gold)), unless that function is a helper
// the tests never call, in which case the first defined function the tests
// call (InterCode would bind the helper's name and rely on the agent's own
// definition of the tested name; ours binds the tested name).
func GoldName(gold string, tests []string) string {
	var names []string
	for _, m := range defRE.FindAllStringSubmatch(gold, -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return ""
	}
	for _, n := range names {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\s*\(`)
		for _, t := range tests {
			if re.MatchString(t) {
				return n
			}
		}
	}
	return names[0]
}

// Reset implements env.Env.
func (e *Env) Reset(ctx context.Context, t env.Task) (string, error) {
	var tests []string
	if err := json.Unmarshal([]byte(t.Setup[env.SetupTests]), &tests); err != nil || len(tests) == 0 {
		return "", fmt.Errorf("pyenv: task %s: setup %q must be a non-empty JSON array of tests", t.ID, env.SetupTests)
	}
	entry := t.Setup[env.SetupEntryPoint]
	if entry == "" {
		entry = GoldName(t.Gold, tests)
	}
	if e.opts.Params["entry"] == EntryFirst {
		if m := defRE.FindStringSubmatch(t.Gold); m != nil {
			entry = m[1]
		}
	}
	if entry == "" {
		return "", fmt.Errorf("pyenv: task %s: no entry point and no def in the gold code", t.ID)
	}
	if e.s == nil {
		s, err := e.ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: e.opts.Limits})
		if err != nil {
			return "", fmt.Errorf("pyenv: opening interpreter: %w", err)
		}
		e.s = s
	} else if err := e.s.Reset(ctx); err != nil {
		return "", fmt.Errorf("pyenv: resetting interpreter: %w", err)
	}
	e.task, e.tests, e.entry, e.cells = t, tests, entry, nil
	e.ep.Begin()
	return t.Query, nil
}

// Step implements env.Env.
func (e *Env) Step(ctx context.Context, action string) (env.StepResult, error) {
	if r, handled, err := e.ep.Step("pyenv", action, func(arg string) (env.StepResult, error) { return e.Score(ctx, arg) }); handled {
		return r, err
	}
	if strings.TrimSpace(action) == "" {
		return env.StepResult{Observation: "Error: empty action", Info: map[string]any{}}, nil
	}
	res, err := e.s.Exec(ctx, action)
	if err != nil {
		return env.StepResult{}, fmt.Errorf("pyenv: task %s: %w", e.task.ID, err)
	}
	if res.TimedOut || res.Killed {
		// The session restarted empty: so does the program submit replays.
		e.cells = nil
	} else {
		e.cells = append(e.cells, action)
	}
	return env.StepResult{
		Observation: env.Observation(res),
		Valid:       res.OK(),
		Info:        map[string]any{"exit_code": res.ExitCode, "exception": res.Exception},
	}, nil
}

// Verdict is one test's judgement.
type Verdict struct {
	Test string `json:"test"`
	Got  string `json:"got"`  // "" when the test ran without error, else "Type: message"
	Gold string `json:"gold"` // the same for the gold solution
	Pass bool   `json:"pass"`
}

// Score implements env.Env: submit's reward without ending the episode.
// arg names the submitted function; empty means the gold name.
func (e *Env) Score(ctx context.Context, arg string) (env.StepResult, error) {
	if !e.ep.Begun() {
		return env.StepResult{}, errors.New("pyenv: Score before Reset")
	}
	verdicts, err := Judge(ctx, e.ex, Submission{
		Cells: e.cells, Submitted: arg, Entry: e.entry, Gold: e.task.Gold,
		Tests: e.tests, TestSetup: e.task.Setup[env.SetupTestSetup],
	})
	if err != nil {
		return env.StepResult{}, fmt.Errorf("pyenv: task %s: %w", e.task.ID, err)
	}
	passed := 0
	var failed []string
	for _, v := range verdicts {
		if v.Pass {
			passed++
		} else {
			failed = append(failed, v.Test)
		}
	}
	if e.opts.Params["entry"] == EntryFirst {
		if err := e.goldLeft(ctx); err != nil {
			return env.StepResult{}, fmt.Errorf("pyenv: task %s: %w", e.task.ID, err)
		}
	}
	reward := float64(passed) / float64(len(verdicts))
	obs := fmt.Sprintf("%d of %d tests passed.", passed, len(verdicts))
	if len(failed) > 0 {
		obs += "\nFailed: " + failed[0]
	}
	return env.StepResult{
		Observation: obs,
		Reward:      reward,
		Valid:       true,
		Info:        map[string]any{"verdicts": verdicts, "submitted_function": arg, "entry": e.entry, env.InfoFirstDef: firstDef(e.task.Gold)},
	}, nil
}

// goldLeft leaves the interpreter as InterCode's reward does (EntryFirst):
// it scores the gold in the agent's own interpreter after RESET, test
// setup and gold code, and the episode goes on there, so the agent's later
// cells see the gold's functions and not its own earlier ones; a later def
// bound to a helper (the gold's first def) is then tested through the
// gold's own tested function, which calls it.
func (e *Env) goldLeft(ctx context.Context) error {
	if err := e.s.Reset(ctx); err != nil {
		return fmt.Errorf("resetting interpreter: %w", err)
	}
	e.cells = nil
	for _, c := range []string{e.task.Setup[env.SetupTestSetup], e.task.Gold} {
		if strings.TrimSpace(c) == "" {
			continue
		}
		res, err := e.s.Exec(ctx, c)
		if err != nil {
			return err
		}
		if res.TimedOut || res.Killed {
			e.cells = nil
			continue
		}
		e.cells = append(e.cells, c)
	}
	return nil
}

// Close implements env.Env.
func (e *Env) Close() error {
	if e.s == nil {
		return nil
	}
	err := e.s.Close()
	e.s = nil
	return err
}

// Submission is what Judge scores.
type Submission struct {
	Cells     []string // the agent's cells, in order
	Submitted string   // the submitted function's name ("" = Entry)
	Entry     string   // the name the tests call (InterCode's gold name)
	Gold      string
	Tests     []string
	TestSetup string
}

// Judge scores a submission in two fresh sandbox processes (see the package
// comment). The verdicts are in test order.
func Judge(ctx context.Context, ex executors.Executor, sub Submission) ([]Verdict, error) {
	rec := map[string]any{
		"mode": "record", "cells": sub.Cells, "submitted": sub.Submitted, "entry": sub.Entry, "gold": sub.Gold,
		"tests": sub.Tests, "test_setup": sub.TestSetup,
	}
	if sub.Cells == nil {
		rec["cells"] = []string{}
	}
	res, err := runJudge(ctx, ex, rec)
	if err != nil {
		return nil, err
	}
	// Untrusted output: keep well-formed records, the first per test.
	records := []json.RawMessage{}
	seen := map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r struct {
			Test *int `json:"test"`
		}
		line := sc.Bytes()
		if json.Unmarshal(line, &r) != nil || r.Test == nil || seen[*r.Test] {
			continue
		}
		seen[*r.Test] = true
		records = append(records, json.RawMessage(append([]byte(nil), line...)))
	}
	jres, err := runJudge(ctx, ex, map[string]any{
		"mode": "judge", "gold": sub.Gold, "tests": sub.Tests, "test_setup": sub.TestSetup, "records": records,
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Verdicts []Verdict `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(lastLine(jres.Stdout)), &out); err != nil || len(out.Verdicts) != len(sub.Tests) {
		// This process runs no agent code: the gold's own evaluation failed.
		cause := env.ErrGold
		if jres.TimedOut {
			cause = env.ErrGoldTimeout
		}
		return nil, fmt.Errorf("%w: judge gave no verdicts (exit %d): %s", cause, jres.ExitCode, tail(jres.Stderr))
	}
	return out.Verdicts, nil
}

func runJudge(ctx context.Context, ex executors.Executor, job map[string]any) (executors.Result, error) {
	data, err := json.Marshal(job)
	if err != nil {
		return executors.Result{}, err
	}
	res, err := ex.Run(ctx, executors.Request{
		Language: executors.Python, Code: judgeSource,
		Files:  map[string][]byte{"job.json": data},
		Limits: executors.Limits{Timeout: JudgeTimeout, OutputBytes: 4 << 20},
	})
	if err != nil {
		return res, fmt.Errorf("judge (%s): %w", job["mode"], err)
	}
	return res, nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func tail(s string) string {
	if len(s) > 500 {
		return "..." + s[len(s)-500:]
	}
	return s
}
