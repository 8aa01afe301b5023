package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

type runOptions struct {
	file    string
	runDir  string
	shard   string
	shards  int
	verbose bool
	opts    pipeline.RunOptions
	stdout  io.Writer
	stderr  *os.File
}

func init() {
	register(&cli.Command{
		Name:      "run",
		Usage:     "run a pipeline file; re-runs compute only what changed",
		ArgsUsage: "PIPELINE.yaml",
		Description: "Stages run in order; each item's result is stored in the run directory under a hash of the stage,\n" +
			"its settings, its prompts and the item, so a re-run after a change, a crash or new inputs computes only\n" +
			"what is missing. Exit codes: 1 a stage failed or too many of its items failed (--max-failed), 2 bad\n" +
			"pipeline file or flags, 3 run directory in use, 4 stopped at --max-cost, 7 the pipeline file cannot be read,\n" +
			"8 a quality gate tripped a stage (what passed every gate is published; the rest, with reasons, in\n" +
			"RUN/quarantine.jsonl).",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "only", Usage: "run only these stages (comma-separated); their inputs must exist"},
			&cli.StringFlag{Name: "from", Usage: "run this stage and every stage after it"},
			&cli.IntFlag{Name: "limit", Usage: "use only the first N input items"},
			&cli.BoolFlag{Name: "dry-run", Usage: "show what would run, what is cached, and the estimated model usage; change nothing"},
			&cli.StringSliceFlag{Name: "force", Usage: "recompute these stages, ignoring their cached results"},
			&cli.StringFlag{Name: "shard", Usage: "process a stable 1/N of the items: i/N (default from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID)"},
			&cli.IntFlag{Name: "shards", Usage: "total shards N when the index comes from the environment (or CODEFEEDBACK_SHARDS)"},
			&cli.StringFlag{Name: "run-dir", Usage: "run directory (store, stage outputs, manifest); overrides run_dir in the file"},
			&cli.IntFlag{Name: "phase", Value: -1, Usage: "run one task of this phase of a phased run (see codefeedback plan): its per-item stages on --shard i/N, in RUN_ROOT/phase-K/shard-I-of-N"},
			&cli.StringFlag{Name: "run-root", Usage: "with --phase: the phased run's directory (every task and merge sees it)"},
			&cli.Float64Flag{Name: "max-cost", Usage: "stop cleanly once model cost reaches this many USD"},
			&cli.Float64Flag{Name: "max-failed", Usage: "fail the run (exit 1, outputs not published) when more than this share (0-1) of a stage's items failed " +
				"(default: any item in a stage with no model, 5% in a stage with one)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, errors.New("run: want one pipeline file"))
			}
			o := runOptions{file: c.Args().First(), runDir: c.String("run-dir"), shard: c.String("shard"),
				shards: c.Int("shards"), verbose: c.Bool("verbose"), stdout: c.App.Writer, stderr: os.Stderr,
				opts: pipeline.RunOptions{Only: splitList(c.StringSlice("only")), From: c.String("from"), Limit: c.Int("limit"),
					DryRun: c.Bool("dry-run"), Force: splitList(c.StringSlice("force")), MaxCost: c.Float64("max-cost"), Version: version,
					MaxFailed: &pipeline.DefaultFailThreshold}}
			if c.IsSet("max-failed") {
				f := c.Float64("max-failed")
				if f < 0 || f > 1 {
					return withCode(exitUsage, fmt.Errorf("run: --max-failed %v: want a share between 0 and 1", f))
				}
				o.opts.MaxFailed = &pipeline.FailThreshold{NoModel: f, Model: f}
			}
			if k := c.Int("phase"); k >= 0 {
				setLogging(&o)
				return runPhaseTask(c.Context, o, k, c.String("run-root"))
			}
			return runPipeline(c.Context, o)
		},
	})
}

// splitList accepts both --only a,b and --only a --only b.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func runPipeline(ctx context.Context, o runOptions) error {
	setLogging(&o)
	var err error
	if o.opts.Shard, err = shardOf(o); err != nil {
		return err
	}
	if err := checkPipelineFile("run", o.file); err != nil {
		return err
	}
	cfg, err := pipeline.Load(o.file, o.runDir)
	if err != nil {
		return withCode(readCode(err), err)
	}
	m, err := pipeline.Run(ctx, cfg, o.opts)
	if m != nil {
		printSummary(o.stdout, m)
		reportAfterRun(ctx, o.stdout, o.stderr, m)
	}
	return runExit(err)
}

// setLogging sends the run's log and progress to o.stderr.
func setLogging(o *runOptions) {
	if o.stdout == nil {
		o.stdout = os.Stdout
	}
	if o.stderr == nil {
		o.stderr = os.Stderr
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	// One writer for log lines and the progress bar, so a log line never
	// lands on the bar's line.
	term := pipeline.Terminal(o.stderr)
	o.opts.Logger = slog.New(slog.NewTextHandler(term, &slog.HandlerOptions{Level: level}))
	o.opts.Progress = term
}

// shardOf is --shard, else the shard a scheduler's environment names.
func shardOf(o runOptions) (pipeline.Shard, error) {
	var sh pipeline.Shard
	var err error
	if o.shard != "" {
		sh, err = pipeline.ParseShard(o.shard)
	} else {
		sh, err = pipeline.ShardFromEnv(os.Getenv, o.shards)
	}
	if err != nil {
		return sh, withCode(exitUsage, fmt.Errorf("run: %w", err))
	}
	return sh, nil
}

// runExit maps a run's error to its exit code.
func runExit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pipeline.ErrLocked):
		return withCode(exitLocked, err)
	case errors.Is(err, pipeline.ErrStopped):
		return withCode(exitStopped, err)
	case errors.Is(err, pipeline.ErrUsage):
		return withCode(exitUsage, err)
	case errors.Is(err, pipeline.ErrGateTripped) && !errors.Is(err, pipeline.ErrUnitsFailed):
		return withCode(exitGate, err)
	}
	return err
}

func printSummary(w io.Writer, m *pipeline.Manifest) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tstatus\tin\tout\tcached\tfresh\tfailed\tseconds\tcost USD\t")
	for _, s := range m.Stages {
		c := s.Counts
		fresh := fmt.Sprint(c.Fresh)
		cost := fmt.Sprintf("%.4f", s.Usage.CostUSD)
		if m.Options.DryRun {
			fresh = fmt.Sprintf("%d to run", c.WouldRun)
			if s.Estimate != nil && s.Estimate.Requests > 0 {
				cost = fmt.Sprintf("~%.4f (%d calls, %d tokens)", s.Estimate.CostUSD, s.Estimate.Requests, s.Estimate.PromptTokens+s.Estimate.CompletionTokens)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%d\t%.1f\t%s\t\n", s.Name, s.Status, c.In, c.Out, c.Cached, fresh, c.Failed, s.Seconds, cost)
	}
	tw.Flush()
	if m.Options.DryRun {
		if e := m.Estimate; e != nil && e.Requests > 0 {
			fmt.Fprintf(w, "estimate: %d model calls, %d tokens in, %d out: $%.4f live, $%.4f through batches", e.Requests,
				e.PromptTokens, e.CompletionTokens, e.LiveCostUSD, e.BatchCostUSD)
			if e.Batched {
				fmt.Fprintf(w, "; this run batches where `batch: true`: $%.4f", e.CostUSD)
			}
			fmt.Fprintln(w)
		}
		if e := m.Estimate; e != nil && e.Predicted {
			fmt.Fprintln(w, "counts and calls after an uncached stage are predicted from its inputs: every item kept (see docs/guide.md, Estimates)")
		}
	}
	if m.DeadCount > 0 {
		fmt.Fprintf(w, "%d items failed; see %s (the next run retries them)\n", m.DeadCount, m.DeadFile)
	}
	if m.QuarantineCount > 0 {
		fmt.Fprintf(w, "%d model answers or items rejected by quality gates; see %s (never published)\n", m.QuarantineCount, m.QuarantineFile)
	}
	for _, g := range m.Gates {
		fmt.Fprintf(w, "GATE TRIPPED: %s\n", g.Message())
	}
	for _, o := range m.Outputs {
		fmt.Fprintf(w, "wrote %s (%d items)\n", o.Path, o.Items)
	}
	if m.Status != "complete" && m.Status != "dry-run" {
		fmt.Fprintf(w, "status: %s\n", m.Status)
	}
}
