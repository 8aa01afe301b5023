package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

type reportOptions struct {
	runDir  string
	sample  int
	license string
	stdout  io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "report",
		Usage:     "rebuild a run's HTML report and the dataset card beside its exported dialogues",
		ArgsUsage: "[--sample N] [--license ID] RUN_DIR",
		Description: "Reads RUN_DIR/manifest.json, the stage outputs, dead letters and audit reports; writes\n" +
			"RUN_DIR/report.html (self-contained, works offline) and README.md (a Hugging Face dataset card)\n" +
			"beside every published JSONL dialogue output. Relative output paths are resolved against the\n" +
			"current directory, as the run wrote them. `codefeedback run` writes both at the end of every run.\n" +
			"Exit codes: 1 failure, 7 RUN_DIR has no manifest.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sample", Usage: "dialogues rendered in the report (0: 100; negative: none)"},
			&cli.StringFlag{Name: "license", Value: "unknown", Usage: "license field of the dataset card (a Hub license id, e.g. apache-2.0)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				if c.NArg() > 1 && strings.HasPrefix(c.Args().Get(1), "-") {
					return withCode(exitUsage, fmt.Errorf("report: flags go before RUN_DIR: codefeedback report %s %s", strings.Join(c.Args().Tail(), " "), c.Args().First()))
				}
				return withCode(exitUsage, errors.New("report: want one run directory"))
			}
			return runReport(c.Context, reportOptions{runDir: c.Args().First(), sample: c.Int("sample"),
				license: c.String("license"), stdout: c.App.Writer})
		},
	})
}

func runReport(ctx context.Context, o reportOptions) error {
	if o.stdout == nil {
		o.stdout = os.Stdout
	}
	if _, err := os.Stat(o.runDir + "/manifest.json"); errors.Is(err, fs.ErrNotExist) {
		return withCode(exitBadData, fmt.Errorf("report: %s has no manifest.json: not a run directory (or the run has not started)", o.runDir))
	}
	w, err := report.Build(ctx, o.runDir, report.Options{Sample: o.sample, License: o.license})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.stdout, "wrote %s\n", w.Report)
	for _, c := range w.Cards {
		fmt.Fprintf(o.stdout, "wrote %s\n", c)
	}
	for _, s := range w.Skipped {
		fmt.Fprintf(o.stdout, "not in the dataset card: %s\n", s)
	}
	return nil
}

// reportAfterRun writes the report and dataset cards at the end of `run`
// (not after a dry run, which writes no manifest). A failure to write them
// is printed, not returned: the run's own result stands.
func reportAfterRun(ctx context.Context, stdout, stderr io.Writer, m *pipeline.Manifest) {
	if m == nil || m.Options.DryRun || m.RunDir == "" {
		return
	}
	if err := runReport(ctx, reportOptions{runDir: m.RunDir, stdout: stdout}); err != nil {
		fmt.Fprintf(stderr, "codefeedback: report: %v\n", err)
	}
}
