package main

import (
	"errors"
	"fmt"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "merge",
		Usage:     "combine finished shard run directories so whole-set stages can run on all items",
		ArgsUsage: "SHARD_RUN_DIR... | PIPELINE.yaml --phase K --run-root ROOT",
		Description: "Copies every shard's stored results into --into. Then run the same pipeline file with\n" +
			"--run-dir INTO and no --shard: per-item stages find all results in the store (nothing is\n" +
			"recomputed), whole-set stages (pack, dedup, audit) run on all items, and outputs are published.\n" +
			"The directories must be the finished runs of shards 0..N-1, each once: a failed, unfinished,\n" +
			"duplicated or missing shard is refused (exit 2, naming it) and nothing is merged.\n" +
			"With --phase K (a phased run, see `codefeedback plan`): checks and merges phase K's tasks under\n" +
			"--run-root into ROOT/merged, runs the whole-set stages after them there and hands their output to\n" +
			"phase K+1's tasks; the last phase's merge publishes the outputs.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "into", Usage: "run directory to merge into"},
			&cli.IntFlag{Name: "phase", Value: -1, Usage: "merge this phase of a phased run"},
			&cli.StringFlag{Name: "run-root", Usage: "with --phase: the phased run's directory"},
			&cli.IntFlag{Name: "shards", Usage: "with --phase: the phase's task count (default: the one found)"},
			&cli.IntFlag{Name: "limit", Usage: "with --phase: the --limit the tasks ran with"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"},
		},
		Action: func(c *cli.Context) error {
			if k := c.Int("phase"); k >= 0 {
				if c.NArg() != 1 {
					return withCode(exitUsage, errors.New("merge --phase: want one pipeline file"))
				}
				o := runOptions{file: c.Args().First(), shards: c.Int("shards"), verbose: c.Bool("verbose"), stdout: c.App.Writer,
					opts: pipeline.RunOptions{Limit: c.Int("limit"), Version: version, MaxFailed: &pipeline.DefaultFailThreshold}}
				setLogging(&o)
				return mergePhase(c.Context, o, k, c.String("run-root"))
			}
			if c.String("into") == "" {
				return withCode(exitUsage, errors.New("merge: want --into DIR (or --phase K with a pipeline file)"))
			}
			if c.NArg() == 0 {
				return withCode(exitUsage, errors.New("merge: want at least one shard run directory"))
			}
			for _, d := range c.Args().Slice() {
				if err := checkRunDir("merge", d); err != nil {
					return err
				}
			}
			r, err := pipeline.Merge(c.Context, c.String("into"), c.Args().Slice())
			if errors.Is(err, pipeline.ErrBadShards) {
				return withCode(exitUsage, fmt.Errorf("merge: %w", err))
			}
			if err != nil {
				return lockedCode(err)
			}
			fmt.Fprintf(c.App.Writer, "merged %d stored results and %d whole-set outputs from %d shards into %s\n",
				r.Entries, r.Sets, c.NArg(), c.String("into"))
			return nil
		},
	})
}
