package main

import (
	"context"
	"encoding/json"
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
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

type intercodeRunOptions struct {
	Env         string
	Dataset     string
	Format      string
	Strategy    string
	Turns       int
	Model       string
	BaseURL     string
	APIKeyEnv   string
	Concurrency int
	Out         string
	Driver      string
	Seed        int
	MaxTokens   int
	Limit       int
	JSON        bool
	Params      cli.StringSlice
}

func init() {
	var o intercodeRunOptions
	registerIntercode(&cli.Command{
		Name:      "run",
		Usage:     "run a model as an InterCode agent (single, tryagain, react, plan-solve) and report success, reward, error rate and turns",
		ArgsUsage: " ",
		Description: "Plays every task of --dataset in its environment with the chosen prompting strategy against any " +
			"OpenAI-compatible endpoint, for at most --turns actions. Writes one InterCode trajectory log per task " +
			"(OUT/trajectories/NNNN_ID.json, written as each task finishes), InterCode's combined log " +
			"(OUT/ic_ENV_STRATEGY_MODEL_N_turns.json), every episode with its conversation (OUT/episodes.jsonl) and " +
			"the metrics (OUT/metrics.json). OUT/intercode.db stores finished episodes and model answers, so a " +
			"killed run resumes without repeating finished tasks.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "env", Usage: "bash, sql, python or ctf (default: the tasks' own)", Destination: &o.Env},
			&cli.StringFlag{Name: "dataset", Usage: "task file: InterCode's data files, or JSON Lines of tasks", Required: true, Destination: &o.Dataset},
			taskFormatFlag(&o.Format),
			&cli.StringFlag{Name: "strategy", Usage: "single, tryagain, react or plan-solve", Value: agent.TryAgain, Destination: &o.Strategy},
			&cli.IntFlag{Name: "turns", Usage: "most actions per task (single: 1)", Value: 3, Destination: &o.Turns},
			&cli.StringFlag{Name: "model", Usage: "model name", Required: true, Destination: &o.Model},
			&cli.StringFlag{Name: "base-url", Usage: "OpenAI-compatible endpoint including /v1 (default $OPENAI_BASE_URL or OpenAI)", Destination: &o.BaseURL},
			&cli.StringFlag{Name: "api-key-env", Usage: "environment variable holding the API key", Value: llm.DefaultAPIKeyEnv, Destination: &o.APIKeyEnv},
			&cli.IntFlag{Name: "concurrency", Usage: "episodes in flight (also the sandbox pool size)", Value: 2, Destination: &o.Concurrency},
			&cli.StringFlag{Name: "out", Usage: "output directory", Value: "intercode-out", Destination: &o.Out},
			executorFlag(&o.Driver),
			&cli.IntFlag{Name: "seed", Usage: "sampling seed sent to the model", Destination: &o.Seed},
			&cli.IntFlag{Name: "max-tokens", Usage: "answer length limit (0: the server's default)", Destination: &o.MaxTokens},
			&cli.IntFlag{Name: "limit", Usage: "run only the first N tasks", Destination: &o.Limit},
			&cli.BoolFlag{Name: "json", Usage: "print the metrics as JSON instead of a table", Destination: &o.JSON},
			envParamFlag(&o.Params),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(2, fmt.Errorf("intercode run: unexpected arguments %v", c.Args().Slice()))
			}
			return runIntercode(c.Context, o, os.Stdout, os.Stderr)
		},
	})
}

func runIntercode(ctx context.Context, o intercodeRunOptions, stdout, stderr io.Writer) error {
	aopts := agent.Options{Strategy: o.Strategy, Turns: o.Turns, Model: o.Model, Seed: o.Seed, MaxTokens: o.MaxTokens}
	if err := aopts.Validate(); err != nil {
		return withCode(2, err)
	}
	if err := checkInputFile("intercode run", o.Dataset); err != nil {
		return err
	}
	tasks, err := agent.LoadTasks(o.Dataset, o.Format)
	if err != nil {
		return inputOr("intercode run", o.Dataset, err, exitUsage)
	}
	for _, t := range tasks {
		if o.Env != "" && t.Env != o.Env {
			return withCode(2, fmt.Errorf("intercode run: task %s runs in %s, not --env %s", t.ID, t.Env, o.Env))
		}
	}
	if o.Limit > 0 && len(tasks) > o.Limit {
		tasks = tasks[:o.Limit]
	}
	params := map[string]string{}
	for _, kv := range o.Params.Value() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return withCode(2, fmt.Errorf("intercode run: --env-param %q: want KEY=VALUE", kv))
		}
		params[k] = v
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	db, err := openOutStore("intercode run", o.Out, "intercode.db")
	if err != nil {
		return err
	}
	defer db.Close()
	cfg := llm.Config{Stage: "intercode", BaseURL: o.BaseURL, APIKeyEnv: o.APIKeyEnv,
		Params: llm.Params{Model: o.Model}, Concurrency: o.Concurrency}
	if o.BaseURL == "" {
		cfg = cfg.WithEnv(os.Getenv)
		cfg.Model = o.Model
	}
	client, err := llm.New(cfg, llm.Options{Cache: db})
	if err != nil {
		return withCode(2, fmt.Errorf("intercode run: model client: %w", err))
	}
	a, err := agent.New(aopts, client)
	if err != nil {
		return withCode(2, err)
	}
	raw, err := executorURL("intercode run", o.Driver, "pool", strconv.Itoa(o.Concurrency))
	if err != nil {
		return err
	}
	var ex executors.Executor
	if len(tasks) > 0 && allEnv(tasks, tasks[0].Env) {
		// ctf on docker: the CTF image; bash: the NL2Bash image
		ex, err = openEnvExecutor(ctx, tasks[0].Env, raw, os.Stderr)
	} else {
		ex, err = executors.Open(ctx, raw)
	}
	if err != nil {
		return fmt.Errorf("intercode run: sandbox: %w", err)
	}
	defer ex.Close()

	last := time.Time{}
	r := &agent.Runner{Agent: a, Ex: ex, Cache: db, Concurrency: o.Concurrency, EnvOptions: env.Options{Params: params},
		LogDir: filepath.Join(o.Out, "trajectories"),
		Progress: func(p agent.Progress) {
			if time.Since(last) < 2*time.Second && p.Done < p.Total {
				return
			}
			last = time.Now()
			eta := ""
			if d := p.ETA(); d > 0 {
				eta = ", ETA " + d.Round(time.Second).String()
			}
			fmt.Fprintf(stderr, "intercode run: %d/%d tasks, %d succeeded, %d from the store%s\n", p.Done, p.Total, p.Successes, p.Cached, eta)
		}}
	start := time.Now()
	eps, err := r.Run(ctx, tasks)
	if err != nil {
		return fmt.Errorf("intercode run: %w (finished tasks are stored; run the same command again to resume)", err)
	}
	ms := agent.Summarize(eps)
	if err := agent.WriteRun(o.Out, eps, ms); err != nil {
		return err
	}
	if msg := agent.GoldErrorWarning(eps); msg != "" {
		fmt.Fprintf(stderr, "WARNING: intercode run: %s\n", msg)
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ms)
	}
	if err := agent.WriteTable(stdout, ms); err != nil {
		return err
	}
	cached := 0
	for _, e := range eps {
		if e.Cached {
			cached++
		}
	}
	_, err = fmt.Fprintf(stdout, "%d episodes (%d from the store) in %s; wrote %s\n", len(eps), cached,
		time.Since(start).Round(time.Millisecond), o.Out)
	return err
}

// allEnv reports whether every task runs in environment name.
func allEnv(tasks []env.Task, name string) bool {
	for _, t := range tasks {
		if t.Env != name {
			return false
		}
	}
	return true
}
