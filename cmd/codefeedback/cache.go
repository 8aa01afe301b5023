package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

func init() {
	runDir := &cli.StringFlag{Name: "run-dir", Required: true, Usage: "run directory"}
	register(&cli.Command{
		Name:  "cache",
		Usage: "inspect or clean a run directory's content-addressed store",
		Subcommands: []*cli.Command{
			{
				Name:  "stats",
				Usage: "entries and bytes per bucket (items: stage results; llm, exec: model requests and executions)",
				Flags: []cli.Flag{runDir, &cli.BoolFlag{Name: "json", Usage: "print the figures as JSON"}},
				Action: runDirAction("cache stats", func(c *cli.Context, dir string) error {
					s, err := pipeline.StoreStats(dir)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if s.Buckets == nil {
							s.Buckets = []store.BucketStats{} // [] rather than null: a list to loop over
						}
						return writeJSON(c.App.Writer, s)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
					fmt.Fprintln(tw, "bucket\tentries\tbytes\t")
					for _, b := range s.Buckets {
						fmt.Fprintf(tw, "%s\t%d\t%d\t\n", b.Name, b.Entries, b.Bytes)
					}
					fmt.Fprintf(tw, "whole-set outputs\t%d\t%d\t\n", s.Sets, s.SetBytes)
					tw.Flush()
					fmt.Fprintf(c.App.Writer, "store file: %d bytes\n", s.FileBytes)
					return nil
				}),
			},
			{
				Name:      "output",
				Usage:     "print a completed stage's output items (JSONL envelopes: id, kind, data); per-item stages keep them in the store",
				ArgsUsage: "STAGE",
				Flags:     []cli.Flag{runDir, &cli.StringFlag{Name: "kind", Usage: "only items of this kind (dialogue, query, problem, rating, ...)"}},
				Action: runDirAction("cache output", func(c *cli.Context, dir string) error {
					if c.NArg() != 1 {
						return withCode(exitUsage, fmt.Errorf("cache output: name one stage"))
					}
					out, err := pipeline.StageOutput(dir, c.Args().First())
					if err != nil {
						return withCode(exitUsage, err)
					}
					w := bufio.NewWriterSize(c.App.Writer, 1<<20)
					for it, err := range pipeline.ReadOutput(c.Context, dir, out) {
						if err != nil {
							return err
						}
						if k := c.String("kind"); k != "" && it.Kind != k {
							continue
						}
						b, err := json.Marshal(it)
						if err != nil {
							return fmt.Errorf("cache output: %w", err)
						}
						w.Write(append(b, '\n'))
					}
					return w.Flush()
				}),
			},
			{
				Name:  "gc",
				Usage: "remove stage results that the latest run of each stage did not use",
				Flags: []cli.Flag{runDir},
				Action: runDirAction("cache gc", func(c *cli.Context, dir string) error {
					r, err := pipeline.GC(dir)
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "removed %d stage results and %d whole-set outputs\n", r.Deleted, r.SetsRemoved)
					return nil
				}),
			},
		},
	})
}

// runDirAction checks --run-dir before fn runs on it; an error saying a
// run holds the directory exits with exitLocked.
func runDirAction(what string, fn func(c *cli.Context, dir string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		dir := c.String("run-dir")
		if err := checkRunDir(what, dir); err != nil {
			return err
		}
		return lockedCode(fn(c, dir))
	}
}

func lockedCode(err error) error {
	if errors.Is(err, pipeline.ErrLocked) {
		return withCode(exitLocked, err)
	}
	return err
}
