// Package evaluate measures a model on HumanEval and MBPP (and their
// EvalPlus versions) the way OpenCodeInterpreter does: single-turn pass@1
// with greedy decoding, then up to N refinement rounds in which failing code
// goes back to the model with execution feedback (the harness's exception,
// expected-versus-actual or timeout text) or with human-style feedback
// written by a feedback model, with or without sight of the canonical
// solution. A sample's refinement stops once its tests pass.
//
// Every sample keeps its conversation, the code judged in each round and the
// execution records, so a number in the report traces to its evidence.
// Finished samples are cached in a store keyed by everything that decides
// them (benchmark, task, model parameters, prompt versions, feedback mode,
// rounds), and model answers are cached by the llm client, so an interrupted
// run resumes where it stopped.
package evaluate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Feedback modes.
const (
	FeedbackExecution = "execution" // the harness's execution feedback
	FeedbackHuman     = "human"     // a feedback model's words, without the canonical solution
	FeedbackOracle    = "oracle"    // a feedback model's words, with the canonical solution in view
)

// CanonicalModel is the model name that answers with the canonical
// solutions, with no endpoint (a check of the benchmarks and the harness).
const CanonicalModel = "canonical"

// SampleBucket is the store bucket holding finished samples.
const SampleBucket = "eval.sample"

// judgeVersion names the judging logic in sample cache keys; bump it when
// extraction or judging changes what a stored sample would say.
const judgeVersion = "eval-judge/2"

// Options configure an evaluation.
type Options struct {
	// Model names the model in reports and cache keys; CanonicalModel
	// answers with the canonical solutions.
	Model string
	// Rounds is the number of refinement rounds after the first answer.
	Rounds int
	// Feedback is FeedbackExecution, FeedbackHuman or FeedbackOracle.
	Feedback string
	// Seed and MaxTokens go to the model with temperature 0.
	Seed      int
	MaxTokens int
	// Concurrency bounds samples in flight (default 4).
	Concurrency int
	// Judge and Plus tune the harness (zero: its defaults).
	Judge harness.Options
	Plus  harness.PlusOptions
	// CaseTimeout, when set, is the time limit of each test case (and of
	// the reference per EvalPlus input); the whole run's limit grows with
	// it (see caseLimits). Some references need ~15 s on a loaded machine.
	CaseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Feedback == "" {
		o.Feedback = FeedbackExecution
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	return o
}

// Validate reports a bad option.
func (o Options) Validate() error {
	switch {
	case o.Model == "":
		return errors.New("evaluate: no model")
	case o.Rounds < 0:
		return fmt.Errorf("evaluate: rounds %d < 0", o.Rounds)
	case o.CaseTimeout < 0:
		return fmt.Errorf("evaluate: case timeout %s < 0", o.CaseTimeout)
	}
	switch o.Feedback {
	case "", FeedbackExecution, FeedbackHuman, FeedbackOracle:
	default:
		return fmt.Errorf("evaluate: feedback %q: want execution, human or oracle", o.Feedback)
	}
	return nil
}

// Evaluator runs samples. Safe for concurrent use.
type Evaluator struct {
	opts     Options
	model    llm.Chatter // nil for CanonicalModel
	feedback llm.Chatter // for human and oracle feedback
	ex       executors.Executor
	cache    store.Cache // may be nil
	prompts  map[string]prompts.Template
	// promptVersion is prompts.Versions of promptNames, part of the cache key.
	promptVersion string
}

var promptNames = []string{"eval_humaneval", "eval_mbpp", "eval_refine", "eval_feedback"}

// New builds an Evaluator. model may be nil only for CanonicalModel;
// feedback is needed for the human and oracle modes; cache may be nil.
func New(opts Options, model, feedback llm.Chatter, ex executors.Executor, cache store.Cache) (*Evaluator, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if model == nil && opts.Model != CanonicalModel {
		return nil, fmt.Errorf("evaluate: model %q needs a client", opts.Model)
	}
	if feedback == nil && opts.Feedback != FeedbackExecution && opts.Rounds > 0 {
		return nil, fmt.Errorf("evaluate: %s feedback needs a feedback model", opts.Feedback)
	}
	e := &Evaluator{opts: opts, model: model, feedback: feedback, ex: ex, cache: cache, prompts: map[string]prompts.Template{}}
	for _, n := range promptNames {
		t, err := prompts.Get(n)
		if err != nil {
			return nil, err
		}
		e.prompts[n] = t
	}
	var err error
	if e.promptVersion, err = prompts.Versions(promptNames...); err != nil {
		return nil, err
	}
	return e, nil
}

// PromptVersion names every template with its text hash.
func (e *Evaluator) PromptVersion() string { return e.promptVersion }

// Round is one answer of the model and its judgement.
type Round struct {
	Round      int    `json:"round"` // 0 is the single-turn answer
	Answer     string `json:"answer"`
	Code       string `json:"code"`       // the program judged
	Extraction string `json:"extraction"` // how Code was taken from Answer (Extract*)
	Passed     bool   `json:"passed"`
	// BasePassed is the verdict of the base tests: the problem's own tests
	// (HumanEval, MBPP), or for the plus benchmarks EvalPlus's base_input
	// judged as EvalPlus judges it. PlusPassed is the verdict of EvalPlus's
	// plus_input (plus benchmarks, when the base set passes).
	BasePassed bool  `json:"base_passed"`
	PlusPassed *bool `json:"plus_passed,omitempty"`
	// Base is the test-case verdict (HumanEval, MBPP only); Plus the
	// differential verdict on both EvalPlus sets (plus benchmarks only).
	Base harness.Verdict      `json:"base,omitzero"`
	Plus *harness.PlusVerdict `json:"plus,omitempty"`
	Exec schema.Execution     `json:"exec"`
	// Feedback is the text sent back to the model after this round (empty
	// for the last round); FeedbackBy is "execution" or the feedback model's
	// mode.
	Feedback   string `json:"feedback,omitempty"`
	FeedbackBy string `json:"feedback_by,omitempty"`
	// FeedbackRejected is the gate's reason when the feedback model's
	// answer was unusable even after repairs ("feedback_code": it held
	// code, which would make a human score an oracle score); the sample
	// then ends with this round.
	FeedbackRejected string `json:"feedback_rejected,omitempty"`
}

// Sample is one task's evaluation: its rounds and the conversation.
type Sample struct {
	Benchmark string `json:"benchmark"`
	TaskID    string `json:"task_id"`
	Model     string `json:"model"`
	Feedback  string `json:"feedback_mode"`
	// Passed is whether the last round passed; PassedRound the first round
	// that passed (-1 when none did).
	Passed      bool             `json:"passed"`
	PassedRound int              `json:"passed_round"`
	Rounds      []Round          `json:"rounds"`
	Messages    []schema.Message `json:"messages"`
	// Error is set when the sample could not be finished (the model failed
	// on every retry); such a sample counts as failed.
	Error string `json:"error,omitempty"`
	// Cached is true when the sample came from the store.
	Cached bool `json:"-"`
}

// sampleKey is the cache key of a task's finished sample.
func (e *Evaluator) sampleKey(t Task) string {
	o := e.opts
	return store.Key(judgeVersion, "feedback-gate/1", t.Benchmark, t.Problem.ID, t.Problem.Prompt, t.Problem.Solution, t.Problem.Tests,
		o.Model, o.Rounds, o.Feedback, o.Seed, o.MaxTokens, e.PromptVersion(), o.Judge, o.Plus, o.CaseTimeout)
}

// Run evaluates tasks, at most Options.Concurrency at a time, and returns
// the samples in task order. A sample whose model call fails permanently is
// recorded with Error and counted as failed; a sandbox failure or a
// cancelled ctx stops the run with an error.
func (e *Evaluator) Run(ctx context.Context, tasks []Task, progress func(done, total int)) ([]Sample, error) {
	out := make([]Sample, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.opts.Concurrency)
	done := make(chan struct{}, len(tasks))
	for i, t := range tasks {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			s, err := e.Sample(gctx, t)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t.Benchmark, t.Problem.ID, err)
			}
			out[i] = s
			done <- struct{}{}
			if progress != nil {
				progress(len(done), len(tasks))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// Sample evaluates one task (or returns it from the store).
func (e *Evaluator) Sample(ctx context.Context, t Task) (Sample, error) {
	keep := func(s Sample) bool { return s.Error == "" } // a failed model call is asked again
	s, hit, err := store.Memo(ctx, e.cache, SampleBucket, e.sampleKey(t), keep, func() (Sample, error) { return e.sample(ctx, t) })
	if err != nil {
		return Sample{}, err
	}
	s.Cached = hit
	return s, nil
}

func (e *Evaluator) firstPrompt(t Task) (string, error) {
	p := t.Problem
	if t.HumanEvalStyle() {
		return e.prompts["eval_humaneval"].Render(map[string]any{"Prompt": p.Prompt, "EntryPoint": t.EntryPoint})
	}
	var tests []string
	if t.Benchmark == MBPP {
		tests = p.Tests // MBPP+'s prompt already shows an example assert
	}
	return e.prompts["eval_mbpp"].Render(map[string]any{"Text": strings.TrimSpace(p.Text), "Tests": tests, "EntryPoint": t.EntryPoint})
}

func (e *Evaluator) sample(ctx context.Context, t Task) (Sample, error) {
	s := Sample{Benchmark: t.Benchmark, TaskID: t.Problem.ID, Model: e.opts.Model, Feedback: e.opts.Feedback, PassedRound: -1}
	first, err := e.firstPrompt(t)
	if err != nil {
		return Sample{}, err
	}
	msgs := []llm.Message{llm.User(first)}
	s.Messages = append(s.Messages, schema.Message{Role: schema.RoleUser, Content: first})
	for r := 0; r <= e.opts.Rounds; r++ {
		answer, how, err := e.answer(ctx, t, msgs)
		if err != nil {
			if ctx.Err() != nil {
				return Sample{}, ctx.Err()
			}
			if errors.Is(err, llm.ErrBudgetExceeded) {
				return Sample{}, err
			}
			s.Error = err.Error()
			return s, nil
		}
		msgs = append(msgs, llm.Assistant(answer))
		rd, err := e.judge(ctx, t, r, answer, how)
		if err != nil {
			if ctx.Err() != nil {
				return Sample{}, ctx.Err()
			}
			// One task the harness cannot judge (a malformed record, a
			// sandbox hiccup) fails that sample, not the whole run.
			s.Error = err.Error()
			return s, nil
		}
		exec := rd.Exec
		s.Messages = append(s.Messages, schema.Message{Role: schema.RoleAssistant, Content: answer},
			schema.Message{Role: schema.RoleExecution, Content: e.executionText(rd), Exec: &exec})
		if rd.Passed {
			s.Rounds = append(s.Rounds, rd)
			s.Passed, s.PassedRound = true, r
			break
		}
		if r == e.opts.Rounds {
			s.Rounds = append(s.Rounds, rd)
			break
		}
		fb, by, err := e.feedbackFor(ctx, t, rd)
		var ge gateError
		if errors.As(err, &ge) {
			rd.FeedbackRejected = ge.v.Reason
			s.Rounds = append(s.Rounds, rd)
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				return Sample{}, ctx.Err()
			}
			if errors.Is(err, llm.ErrBudgetExceeded) {
				return Sample{}, err
			}
			s.Rounds = append(s.Rounds, rd)
			s.Error = err.Error()
			return s, nil
		}
		rd.Feedback, rd.FeedbackBy = fb, by
		s.Rounds = append(s.Rounds, rd)
		next, err := e.prompts["eval_refine"].Render(map[string]any{"Feedback": strings.TrimRight(fb, "\n"), "Human": by != FeedbackExecution})
		if err != nil {
			return Sample{}, err
		}
		msg := schema.Message{Role: schema.RoleUser, Content: next}
		if by != FeedbackExecution {
			msg.Feedback = &schema.Feedback{Category: "functionality", Oracle: by == FeedbackOracle}
		}
		s.Messages = append(s.Messages, msg)
		msgs = append(msgs, llm.User(next))
	}
	return s, nil
}

// answer asks the model (or takes the canonical solution).
func (e *Evaluator) answer(ctx context.Context, t Task, msgs []llm.Message) (string, string, error) {
	if e.model == nil {
		return "```python\n" + strings.TrimRight(t.Problem.Program(), "\n") + "\n```\n", ExtractCanonical, nil
	}
	temp := 0.0
	seed := e.opts.Seed
	resp, err := e.model.Chat(ctx, llm.Request{Messages: msgs,
		Params: llm.Params{Model: e.opts.Model, Temperature: &temp, Seed: &seed, MaxTokens: e.opts.MaxTokens}})
	if err != nil {
		return "", "", fmt.Errorf("evaluate: model: %w", err)
	}
	return resp.Text, "", nil
}

// JudgeAnswer judges answer as the first answer to t: the code is
// extracted and run against the task's tests exactly as in Run. It checks
// the judge itself (see the EvalPlus differential test).
func (e *Evaluator) JudgeAnswer(ctx context.Context, t Task, answer string) (Round, error) {
	return e.judge(ctx, t, 0, answer, "")
}

// judge extracts the code from answer and runs the tests.
func (e *Evaluator) judge(ctx context.Context, t Task, r int, answer, how string) (Round, error) {
	code, ex := Extract(answer, t.EntryPoint)
	if how == "" {
		how = ex
	}
	if t.HumanEvalStyle() {
		var body bool
		code, body = HumanEvalProgram(t.Problem.Prompt, t.EntryPoint, code)
		if body && how != ExtractCanonical {
			how = ExtractBody
		}
	}
	rd := Round{Round: r, Answer: answer, Code: code, Extraction: how}
	jo, po := e.caseLimits(t)
	if t.Plus != nil {
		// EvalPlus judges both sets by the reference's outputs; it never
		// runs the record's assertion or test text (Mbpp/120's assertion
		// calls math.isclose without importing math).
		pv, err := harness.JudgePlus(ctx, e.ex, *t.Plus, code, po)
		if err != nil {
			return Round{}, fmt.Errorf("evaluate: judge EvalPlus inputs: %w", err)
		}
		rd.Exec = pv.Execution()
		pv.Result.Stdout = "" // the raw judge output; the verdict holds what it said
		rd.Plus = &pv
		rd.BasePassed = t.Plus.BaseCount == 0 || pv.SetPassed("base")
		if rd.BasePassed {
			passed := pv.Passed
			rd.PlusPassed = &passed
		}
		rd.Passed = pv.Passed
		return rd, nil
	}
	v, err := harness.Judge(ctx, e.ex, t.Problem, code, jo)
	if err != nil {
		return Round{}, fmt.Errorf("evaluate: judge: %w", err)
	}
	rd.Base, rd.BasePassed, rd.Exec = v, v.Passed, v.Execution()
	rd.Passed = v.Passed
	// The execution record's program is the base judge program; the
	// stored verdict need not repeat the raw judge output too.
	rd.Base.Result.Stdout = ""
	return rd, nil
}

// executionText is what the tests said about a round, as the content of
// the execution turn.
func (e *Evaluator) executionText(rd Round) string {
	if rd.Plus != nil {
		return "EvalPlus inputs: " + harness.PlusFeedback(*rd.Plus)
	}
	return rd.Base.Feedback
}

// feedbackFor writes the feedback on a failed round: the execution
// feedback of the failing tests (the base tests, or EvalPlus's inputs),
// or a feedback model's words about it.
func (e *Evaluator) feedbackFor(ctx context.Context, t Task, rd Round) (string, string, error) {
	text := rd.Base.Feedback
	if rd.Plus != nil {
		text = harness.PlusFeedback(*rd.Plus)
	}
	if e.opts.Feedback == FeedbackExecution {
		return text, FeedbackExecution, nil
	}
	solution := ""
	if e.opts.Feedback == FeedbackOracle {
		solution = strings.TrimRight(t.Problem.Program(), "\n")
	}
	task := t.Problem.Text
	if t.HumanEvalStyle() {
		task = t.Problem.Prompt
	}
	prompt, err := e.prompts["eval_feedback"].Render(map[string]any{"Task": strings.TrimRight(task, "\n"),
		"Code": strings.TrimRight(rd.Code, "\n"), "Output": strings.TrimRight(text, "\n"), "Solution": solution})
	if err != nil {
		return "", "", err
	}
	temp := 0.0
	seed := e.opts.Seed
	// The feedback must be words: code in it (the corrected program, or
	// the canonical one) turns a human-feedback score into an oracle
	// score. Two repairs, then the round is rejected by the gate.
	fb, _, err := llm.ChatParse(ctx, e.feedback, llm.Request{Messages: []llm.Message{llm.User(prompt)},
		Params: llm.Params{Temperature: &temp, Seed: &seed, MaxTokens: e.opts.MaxTokens}}, 2,
		func(err error) string {
			return "Your feedback cannot be used: " + err.Error() + ". Write it again as two to four sentences of plain prose saying what is wrong and what to change, with no code blocks and no code lines."
		},
		func(text string) (string, error) {
			text = strings.TrimSpace(text)
			switch {
			case text == "":
				return "", errors.New("the answer is empty")
			case gates.HasCode(text):
				return "", gateError{gates.Verdict{Reason: "feedback_code", Detail: text}}
			}
			return text, nil
		})
	var pe *llm.ParseError
	var ge gateError
	if errors.As(err, &pe) && errors.As(err, &ge) {
		return "", "", ge
	}
	if err != nil {
		return "", "", fmt.Errorf("evaluate: feedback model: %w", err)
	}
	return fb, e.opts.Feedback, nil
}

// gateError is feedback the gate rejected.
type gateError struct{ v gates.Verdict }

func (g gateError) Error() string { return "the feedback contains code" }
