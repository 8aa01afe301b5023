package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

type evalOptions struct {
	Model           string
	Benchmarks      string
	Rounds          int
	Feedback        string
	FeedbackModel   string
	OracleCanonical bool
	BaseURL         string
	APIKeyEnv       string
	Concurrency     int
	Out             string
	Data            string
	Driver          string
	Seed            int
	MaxTokens       int
	Limit           int
	JSON            bool
	CaseTimeout     time.Duration
	InterCode       cli.StringSlice
	ICStrategy      string
}

func init() {
	var o evalOptions
	register(&cli.Command{
		Name:  "eval",
		Usage: "measure a model's pass@1 on HumanEval and MBPP (+), single-turn and with feedback rounds",
		Description: "Asks the model each benchmark problem (greedy), judges the extracted code in the sandbox, and " +
			"sends failing code back with execution feedback (or a feedback model's words) for up to --rounds " +
			"rounds. Prints pass@1 per benchmark and round; writes OUT/results.json and OUT/samples.jsonl " +
			"(every conversation, code and execution record). OUT/eval.db caches model answers and finished " +
			"samples, so a re-run resumes. --model canonical answers with the canonical solutions (no endpoint).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "model name, or canonical", Required: true, Destination: &o.Model},
			&cli.StringFlag{Name: "benchmarks", Usage: "comma-separated: humaneval, mbpp, humaneval+, mbpp+", Value: "humaneval,mbpp", Destination: &o.Benchmarks},
			&cli.IntFlag{Name: "rounds", Usage: "refinement rounds after the first answer", Value: 2, Destination: &o.Rounds},
			&cli.StringFlag{Name: "feedback", Usage: "execution, human or oracle", Value: evaluate.FeedbackExecution, Destination: &o.Feedback},
			&cli.StringFlag{Name: "feedback-model", Usage: "model writing human/oracle feedback (default: --model)", Destination: &o.FeedbackModel},
			&cli.BoolFlag{Name: "oracle-canonical", Usage: "with --feedback human: show the feedback model the canonical solution (same as --feedback oracle)", Destination: &o.OracleCanonical},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible endpoint including /v1 (default $OPENAI_BASE_URL or OpenAI)", Destination: &o.BaseURL},
			&cli.StringFlag{Name: "api-key-env", Usage: "environment variable holding the API key", Value: llm.DefaultAPIKeyEnv, Destination: &o.APIKeyEnv},
			&cli.IntFlag{Name: "concurrency", Usage: "samples in flight (also the sandbox pool size)", Value: 4, Destination: &o.Concurrency},
			&cli.StringFlag{Name: "out", Usage: "output directory", Value: "eval-out", Destination: &o.Out},
			&cli.StringFlag{Name: "bench-dir", Aliases: []string{"data"}, Usage: "benchmark directory (humaneval/, mbpp/, evalplus/); default $" + benchmarks.EnvDir + ", else the user cache filled by 'codefeedback bench fetch'", Destination: &o.Data},
			executorFlag(&o.Driver),
			&cli.IntFlag{Name: "seed", Usage: "sampling seed sent to the model", Value: 0, Destination: &o.Seed},
			&cli.IntFlag{Name: "max-tokens", Usage: "answer length limit (0: the server's default)", Destination: &o.MaxTokens},
			&cli.IntFlag{Name: "limit", Usage: "evaluate only the first N problems of each benchmark", Destination: &o.Limit},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON instead of a table", Destination: &o.JSON},
			&cli.StringSliceFlag{Name: "intercode", Usage: "InterCode task file (JSON Lines of tasks or InterCode's data files); each environment becomes a benchmark intercode-ENV, played for --rounds+1 turns; repeatable", Destination: &o.InterCode},
			&cli.StringFlag{Name: "intercode-strategy", Usage: "InterCode prompting strategy: tryagain (turn r+1 is round r), single, react or plan-solve", Value: "tryagain", Destination: &o.ICStrategy},
			&cli.DurationFlag{Name: "case-timeout", Usage: "time limit per test case (0: the harness's 5s); the run's limit grows with it", Destination: &o.CaseTimeout},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(exitUsage, fmt.Errorf("eval: unexpected arguments %v", c.Args().Slice()))
			}
			// Only the asked benchmarks are needed: --intercode alone
			// does not ask for the default HumanEval and MBPP.
			if !c.IsSet("benchmarks") && len(o.InterCode.Value()) > 0 {
				o.Benchmarks = "intercode"
			}
			return runEval(c.Context, o, os.Stdout, os.Stderr)
		},
	})
}

func runEval(ctx context.Context, o evalOptions, stdout, stderr io.Writer) error {
	if o.OracleCanonical {
		if o.Feedback != evaluate.FeedbackHuman && o.Feedback != evaluate.FeedbackOracle {
			return withCode(exitUsage, fmt.Errorf("eval: --oracle-canonical goes with --feedback human"))
		}
		o.Feedback = evaluate.FeedbackOracle
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	var names []string
	for _, n := range strings.Split(o.Benchmarks, ",") {
		if n = strings.TrimSpace(strings.ToLower(n)); n != "" {
			if strings.HasPrefix(n, "intercode") {
				continue // played from the --intercode files
			}
			if !evaluate.Supported(n) {
				return withCode(exitUsage, fmt.Errorf("eval: unknown benchmark %q (want humaneval, mbpp, humaneval+, mbpp+, intercode)", n))
			}
			names = append(names, n)
		}
	}
	var icTasks []env.Task
	for _, f := range o.InterCode.Value() {
		ts, err := agent.LoadTasks(f, "")
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("eval: %w", err))
		}
		icTasks = append(icTasks, ts...)
	}
	if strings.Contains(o.Benchmarks, "intercode") && len(icTasks) == 0 {
		return withCode(exitUsage, fmt.Errorf("eval: the intercode benchmarks need --intercode FILE (task files)"))
	}
	if len(names) == 0 && len(icTasks) == 0 {
		return withCode(exitUsage, fmt.Errorf("eval: no benchmarks"))
	}
	if len(names) > 0 {
		dir, err := benchmarks.Dir(o.Data)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("eval: %w", err))
		}
		o.Data = dir
	}
	// Each benchmark loads on its own: a malformed record is skipped and
	// reported, a benchmark that cannot load at all is reported as such,
	// and the others still run.
	var (
		tasks   []evaluate.Task
		skipped []evaluate.Skipped
		failed  = map[string]error{}
	)
	for _, n := range names {
		ts, sk, err := evaluate.LoadSkipping(o.Data, n, o.Limit)
		skipped = append(skipped, sk...)
		for _, s := range sk {
			fmt.Fprintf(stderr, "eval: %s: skipping malformed record %s: %s\n", n, s.TaskID, s.Reason)
		}
		if err != nil {
			fmt.Fprintf(stderr, "eval: %s: not evaluated: %v\n", n, err)
			failed[n] = err
			continue
		}
		tasks = append(tasks, ts...)
	}
	if len(names) > 0 && len(failed) == len(names) && len(icTasks) == 0 {
		return withCode(exitUsage, fmt.Errorf("eval: no benchmark could be loaded (first: %w)", failed[names[0]]))
	}

	db, err := openOutStore("eval", o.Out, "eval.db")
	if err != nil {
		return err
	}
	defer db.Close()

	var model, feedback llm.Chatter
	newClient := func(name string) (*llm.Client, error) {
		cfg := llm.Config{Stage: "eval", BaseURL: o.BaseURL, APIKeyEnv: o.APIKeyEnv,
			Params: llm.Params{Model: name}, Concurrency: o.Concurrency}
		if o.BaseURL == "" {
			cfg = cfg.WithEnv(os.Getenv)
			cfg.Model = name
		}
		return llm.New(cfg, llm.Options{Cache: db})
	}
	if o.Model != evaluate.CanonicalModel {
		c, err := newClient(o.Model)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("eval: model client: %w", err))
		}
		model = c
	}
	if o.Feedback != evaluate.FeedbackExecution && o.Rounds > 0 {
		fm := o.FeedbackModel
		if fm == "" {
			fm = o.Model
		}
		if fm == evaluate.CanonicalModel {
			return withCode(exitUsage, fmt.Errorf("eval: %s feedback needs --feedback-model (canonical writes no feedback)", o.Feedback))
		}
		c, err := newClient(fm)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("eval: feedback client: %w", err))
		}
		feedback = c
	}

	raw, err := executorURL("eval", o.Driver, "pool", strconv.Itoa(o.Concurrency))
	if err != nil {
		return err
	}
	ex, err := executors.Open(ctx, raw)
	if err != nil {
		return fmt.Errorf("eval: sandbox: %w", err)
	}
	defer ex.Close()

	e, err := evaluate.New(evaluate.Options{Model: o.Model, Rounds: o.Rounds, Feedback: o.Feedback, Seed: o.Seed,
		MaxTokens: o.MaxTokens, Concurrency: o.Concurrency, CaseTimeout: o.CaseTimeout}, model, feedback, ex, db)
	if err != nil {
		return withCode(exitUsage, err)
	}
	start := time.Now()
	last := time.Now()
	samples, err := e.Run(ctx, tasks, func(done, total int) {
		if time.Since(last) > 2*time.Second || done == total {
			last = time.Now()
			fmt.Fprintf(stderr, "eval: %d/%d samples\n", done, total)
		}
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	rep := e.Score(names, samples)
	rep.NoteLoad(skipped, failed)
	if len(icTasks) > 0 {
		eps, err := e.RunInterCode(ctx, icTasks, evaluate.InterCodeOptions{Strategy: o.ICStrategy,
			LogDir: filepath.Join(o.Out, "trajectories")}, func(p agent.Progress) {
			if time.Since(last) > 2*time.Second || p.Done == p.Total {
				last = time.Now()
				fmt.Fprintf(stderr, "eval: intercode %d/%d tasks, %d succeeded\n", p.Done, p.Total, p.Successes)
			}
		})
		if err != nil {
			return fmt.Errorf("eval: intercode: %w", err)
		}
		if msg := agent.GoldErrorWarning(eps); msg != "" {
			fmt.Fprintf(stderr, "WARNING: eval: %s\n", msg)
		}
		rep.AddInterCode(eps)
		if err := agent.WriteRun(o.Out, eps, rep.InterCode); err != nil {
			return err
		}
	}
	rep.Duration = time.Since(start)
	if err := evaluate.WriteFiles(o.Out, rep, samples); err != nil {
		return err
	}
	if o.JSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
		return evalLoadFailure(failed, names)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(o.Out, "results.json"), filepath.Join(o.Out, "samples.jsonl")); err != nil {
		return err
	}
	return evalLoadFailure(failed, names)
}

// evalLoadFailure is exit code 7 (bad data) when a benchmark could not be loaded: the
// others were evaluated and reported, but the run is incomplete.
func evalLoadFailure(failed map[string]error, names []string) error {
	for _, n := range names {
		if err := failed[n]; err != nil {
			return withCode(exitBadData, fmt.Errorf("eval: %d of %d benchmarks not evaluated (%s: %w)", len(failed), len(names), n, err))
		}
	}
	return nil
}

// openOutStore creates the output directory dir and opens the store file
// there that keeps finished work, so a killed command resumes.
func openOutStore(cmd, dir, file string) (*store.Bolt, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	db, err := store.OpenBolt(filepath.Join(dir, file), false)
	if err != nil {
		return nil, fmt.Errorf("%s: open store: %w", cmd, err)
	}
	return db, nil
}
