package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type exportOptions struct {
	in, out     string
	to          string
	compression string
	execAs      string
	split       string
	onError     string
	style       string
	stderr      io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "export",
		Usage:     "write dialogues in a trainer-ready format",
		ArgsUsage: "IN OUT",
		Description: "IN holds dialogues: JSONL (plain/.gz/.zst, Code-Feedback or codefeedback's own) or .parquet.\n" +
			"OUT is written atomically: it appears only when the export succeeds.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Value: "codefeedback", Usage: "layout, named after what loads it: codefeedback (user/assistant, executions as \"Execution result:\" user turns; JSONL or Parquet by OUT's extension), native (every field and execution record; JSONL or Parquet), sharegpt (LLaMA-Factory; writes dataset_info.json beside OUT), openai (chat fine-tuning), openai-tools (execute_code tool calls with the assistant's code, tools on every line); " +
				"training records mined from test verdicts (JSONL or Parquet): dpo (TRL preference pairs: chosen passed the tests, rejected failed them, same context), " +
				"kto (TRL unpaired preference: one record per judged attempt, label = passed), rl (verl's RL record, also a TRL GRPO dataset: prompt + reward_model.ground_truth for serve's /submit)"},
			&cli.StringFlag{Name: "style", Value: "conversational", Usage: "dpo, kto, rl: conversational (prompt and completions as role/content lists) or standard (plain strings)"},
			&cli.StringFlag{Name: "split", Value: "dialogue", Usage: "dialogue (one sample per dialogue), turns (one sample per assistant turn with its prefix; OpenAI layouts weight earlier turns 0), weights (OpenAI layouts: one sample, weight 0 on all but the last assistant turn)"},
			&cli.StringFlag{Name: "compression", Value: "snappy", Usage: "Parquet codec: snappy|zstd"},
			&cli.StringFlag{Name: "execution-as", Value: "user", Usage: "sharegpt: execution turns as human turns with an output block (user) or as observation turns (tool); openai: tool means openai-tools"},
			&cli.StringFlag{Name: "on-error", Value: "fail", Usage: "fail|skip (bad records to OUT.rejects.jsonl)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return withCode(exitUsage, errors.New("export: want IN OUT"))
			}
			to := c.String("to")
			if to == string(schema.ExportOpenAI) && c.String("execution-as") == string(schema.ExecAsTool) {
				to = string(schema.ExportOpenAITools)
			}
			return runExport(c.Context, exportOptions{in: c.Args().Get(0), out: c.Args().Get(1), to: to,
				compression: c.String("compression"), execAs: c.String("execution-as"), split: c.String("split"), onError: c.String("on-error"), style: c.String("style"), stderr: errWriter(c.App.ErrWriter)})
		},
	})
}

func runExport(ctx context.Context, o exportOptions) error {
	switch schema.ExecAs(o.execAs) {
	case schema.ExecAsUser, schema.ExecAsTool:
	default:
		return withCode(exitUsage, fmt.Errorf("--execution-as %q: want user or tool", o.execAs))
	}
	switch o.compression {
	case "snappy", "zstd":
	default:
		return withCode(exitUsage, fmt.Errorf("--compression %q: want snappy or zstd", o.compression))
	}
	rej, err := newRejects(o.onError, o.out)
	if err != nil {
		return err
	}
	opts := schema.ExportOptions{To: schema.ExportFormat(o.to), ExecAs: schema.ExecAs(o.execAs), Split: schema.Split(o.split), Compression: o.compression, Style: schema.Style(o.style)}
	if _, err := opts.Normalize(o.out); err != nil {
		return withCode(exitUsage, fmt.Errorf("export: %w", err))
	}
	if rej != nil {
		opts.OnRecordError = rej.add
	}
	if err := checkInputFile("export", o.in); err != nil {
		return err
	}
	st, err := schema.Export(ctx, o.in, o.out, opts)
	if err != nil {
		if rej != nil {
			rej.abort()
		}
		return inputOr("export", o.in, err, exitFailed)
	}
	if rej != nil {
		if err := rej.close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if opts.To.Training() {
		printTraining(o.stderr, opts.To, st, o.out)
		card, err := schema.WriteTrainingCard(o.out, opts, st)
		if err != nil {
			return fmt.Errorf("export: dataset card section: %w", err)
		}
		fmt.Fprintf(o.stderr, "dataset card section in %s\n", card)
	} else if st.Written != st.Read {
		fmt.Fprintf(o.stderr, "exported %d dialogues as %d samples (%s) into %s\n", st.Read, st.Written, o.to, o.out)
	} else {
		fmt.Fprintf(o.stderr, "exported %d dialogues as %s into %s\n", st.Written, o.to, o.out)
	}
	if st.Rejected > 0 {
		fmt.Fprintf(o.stderr, "rejected %d records, see %s\n", st.Rejected, rej.path)
	}
	return nil
}

// printTraining says how many records a training export wrote from how
// many dialogues, and what it left out and why.
func printTraining(w io.Writer, to schema.ExportFormat, st schema.ExportStats, out string) {
	fmt.Fprintf(w, "exported %d %s records from %d dialogues into %s\n", st.Written, to, st.Read, out)
	if to == schema.ExportDPO && st.Training.WithFailure > 0 {
		fmt.Fprintf(w, "%d of %d dialogues with a failed attempt yielded a pair (%.1f%%)\n", st.Training.Paired, st.Training.WithFailure,
			100*float64(st.Training.Paired)/float64(st.Training.WithFailure))
	}
	reasons := make([]string, 0, len(st.Training.Skipped))
	for r := range st.Training.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "skipped %d: %s\n", st.Training.Skipped[r], r)
	}
}
