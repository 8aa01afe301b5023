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
		ArgsUsage: "SHARD_RUN_DIR...",
		Description: "Copies every shard's stored results into --into. Then run the same pipeline file with\n" +
			"--run-dir INTO and no --shard: per-item stages find all results in the store (nothing is\n" +
			"recomputed), whole-set stages (pack, dedup, audit) run on all items, and outputs are published.\n" +
			"The directories must be the finished runs of shards 0..N-1, each once: a failed, unfinished,\n" +
			"duplicated or missing shard is refused (exit 2, naming it) and nothing is merged.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "into", Required: true, Usage: "run directory to merge into"}},
		Action: func(c *cli.Context) error {
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
