package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/verify"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

type verifyOptions struct {
	Path     string
	Executor string
	Timeout  time.Duration
	Parallel int
	NoRerun  bool
	JSON     bool
	// Records is the run's native dialogues file: trainer layouts that do
	// not show a verdict's tests are re-judged from these records.
	Records string
}

func init() {
	var o verifyOptions
	register(&cli.Command{
		Name:      "verify",
		Usage:     "re-check a dialogue dataset as a trainer reads it: turn order, code that compiles, executions that re-run the same",
		ArgsUsage: "DATASET",
		Description: "Reads every layout `export` and the pipeline's outputs write (native, Code-Feedback, ShareGPT, OpenAI, " +
			"OpenAI tools; dialogue, turn-split and weighted samples; JSONL, JSON array, Parquet; .gz/.zst) and any " +
			"Code-Feedback-style file. Checks that roles alternate sensibly, that every python code block compiles (in " +
			"the sandbox), that each visible execution text is what its record renders (native files), and that every " +
			"execution turn is what the code shown in the assistant turn before it prints when it runs again: a test " +
			"verdict is re-judged against the tests the request shows (\"Your code should pass these tests:\"; native " +
			"files: the record's tests, and the record must name the very code the turn shows), a notebook cell runs as " +
			"the next cell of sessions opened fresh for its dialogue. The verdict and the printed output are compared with " +
			"the visible text, normalised for times, durations and memory addresses only. An execution that cannot be " +
			"re-run is counted with the reason. Turn-split samples that repeat a dialogue's earlier turns are verified " +
			"once, as the longest. Prints one line per mismatch (sample id and turn) and a summary. Exit status 1 when " +
			"there are mismatches, 2 for usage errors, 5 when the sandbox cannot be opened, 7 when DATASET is missing or cannot be read.",
		Flags: append(concurrencyFlags("dialogues checked at once", 4, "", "parallel"),
			executorFlag(&o.Executor),
			&cli.DurationFlag{Name: "timeout", Usage: "per-cell limit for runs whose record names none", Value: 10 * time.Second, Destination: &o.Timeout},
			&cli.BoolFlag{Name: "no-rerun", Usage: "check roles and parsing only", Destination: &o.NoRerun},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON", Destination: &o.JSON},
			&cli.StringFlag{Name: "records", Usage: "the run's native dialogues FILE (out/dialogues.jsonl): a trainer layout's test verdict whose tests the request does not show is re-judged with its stored record, when that record ran the code the turn shows", Destination: &o.Records},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, fmt.Errorf("verify: want one DATASET, got %d arguments", c.NArg()))
			}
			o.Path = c.Args().First()
			o.Parallel = concurrency(c, "parallel")
			return runVerify(c.Context, o, os.Stdout)
		},
	})
}

func runVerify(ctx context.Context, o verifyOptions, stdout io.Writer) error {
	if err := checkInputFile("verify", o.Path); err != nil {
		return err
	}
	ex, err := openSandbox(ctx, "verify", o.Executor)
	if err != nil {
		return err
	}
	defer ex.Close()
	c := &verify.Checker{Exec: ex, Opts: verify.Options{Timeout: o.Timeout, Parallel: o.Parallel, NoRerun: o.NoRerun}}
	if o.Records != "" {
		if err := checkInputFile("verify --records", o.Records); err != nil {
			return err
		}
		stored := map[string]*schema.Dialogue{}
		for d, err := range leak.ReadDialogues(ctx, o.Records) {
			if err != nil {
				return inputOr("verify --records", o.Records, err, exitBadData)
			}
			stored[d.ID] = d
		}
		c.Opts.Stored = func(id string) *schema.Dialogue { return stored[id] }
	}
	prog := verifyProgress(ctx, o.Path, os.Stderr)
	rep, err := c.Dataset(ctx, prog.count(schema.ReadShipped(ctx, o.Path)))
	prog.Finish()
	if err != nil {
		return inputOr("verify", o.Path, err, exitFailed)
	}
	if o.JSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		for _, m := range rep.Mismatches {
			fmt.Fprintln(stdout, m)
		}
		reasons := rep.Reasons()
		keys := make([]string, 0, len(reasons))
		for r := range reasons {
			keys = append(keys, r)
		}
		sort.Strings(keys)
		for _, r := range keys {
			fmt.Fprintf(stdout, "%d turns not re-runnable: %s\n", reasons[r], r)
		}
		fmt.Fprintf(stdout, "%d dialogues (%d distinct), %d messages, %d code blocks compiled, %d execution texts checked against their records, %d executions re-run (%d agreed, %d not re-runnable), %d mismatches\n",
			rep.Dialogues, rep.Distinct, rep.Messages, rep.Blocks, rep.Texts, rep.Executions, rep.Agreed, len(rep.Unverifiable), len(rep.Mismatches))
	}
	if len(rep.Mismatches) > 0 {
		return withCode(exitFailed, fmt.Errorf("verify: %d mismatches in %s", len(rep.Mismatches), o.Path))
	}
	return nil
}

// dialogueProgress shows verify's progress on stderr: a bar on a terminal,
// a log line every 10 s otherwise. It counts the dialogues handed to the
// checker, which checks them in windows of 64, so the count runs at most a
// window ahead of the checks.
type dialogueProgress struct{ *pipeline.Progress }

// verifyProgress starts the display over the file's dialogues, counted in a
// first read (0, no ETA, when that read fails: the check reports why).
func verifyProgress(ctx context.Context, path string, stderr *os.File) dialogueProgress {
	var total int64
	for _, err := range schema.ReadShipped(ctx, path) {
		if err != nil {
			total = 0
			break
		}
		total++
	}
	term := pipeline.Terminal(stderr)
	log := slog.New(slog.NewTextHandler(term, nil))
	return dialogueProgress{pipeline.StartProgress("verify", total, term, log, 0)}
}

// count passes dialogues on, counting each.
func (p dialogueProgress) count(dialogues func(yield func(*schema.Dialogue, error) bool)) func(yield func(*schema.Dialogue, error) bool) {
	return func(yield func(*schema.Dialogue, error) bool) {
		for d, err := range dialogues {
			if err == nil {
				p.Done(1, false)
			}
			if !yield(d, err) {
				return
			}
		}
	}
}
