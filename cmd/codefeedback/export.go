package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type exportOptions struct {
	in, out     string
	to          string
	compression string
	execAs      string
	onError     string
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
			&cli.StringFlag{Name: "to", Usage: "codefeedback|parquet|sharegpt|openai (default: parquet for a .parquet OUT, else codefeedback)"},
			&cli.StringFlag{Name: "compression", Value: "snappy", Usage: "Parquet codec: snappy|zstd"},
			&cli.StringFlag{Name: "execution-as", Value: "user", Usage: "render execution turns as a user turn with an output block (user) or as a tool/observation turn (tool)"},
			&cli.StringFlag{Name: "on-error", Value: "fail", Usage: "fail|skip (bad records to OUT.rejects.jsonl)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return withCode(exitUsage, errors.New("export: want IN OUT"))
			}
			to := c.String("to")
			if to == "" {
				to = string(schema.ExportCodeFeedback)
				if schema.IsParquet(c.Args().Get(1)) {
					to = string(schema.ExportParquet)
				}
			}
			return runExport(c.Context, exportOptions{in: c.Args().Get(0), out: c.Args().Get(1), to: to,
				compression: c.String("compression"), execAs: c.String("execution-as"), onError: c.String("on-error"), stderr: errWriter(c.App.ErrWriter)})
		},
	})
}

func runExport(ctx context.Context, o exportOptions) error {
	switch schema.ExportFormat(o.to) {
	case schema.ExportCodeFeedback, schema.ExportParquet, schema.ExportShareGPT, schema.ExportOpenAI:
	default:
		return withCode(exitUsage, fmt.Errorf("export: unknown --to %q (want codefeedback, parquet, sharegpt or openai)", o.to))
	}
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
	opts := schema.ExportOptions{To: schema.ExportFormat(o.to), ExecAs: schema.ExecAs(o.execAs), Compression: o.compression}
	if rej != nil {
		opts.OnRecordError = rej.add
	}
	st, err := schema.Export(ctx, o.in, o.out, opts)
	if err != nil {
		if rej != nil {
			rej.abort()
		}
		var re *schema.RecordError
		if errors.As(err, &re) {
			return withCode(exitBadData, fmt.Errorf("export: %w", err))
		}
		return fmt.Errorf("export: %w", err)
	}
	if rej != nil {
		if err := rej.close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	fmt.Fprintf(o.stderr, "exported %d dialogues as %s into %s\n", st.Written, o.to, o.out)
	if st.Rejected > 0 {
		fmt.Fprintf(o.stderr, "rejected %d records, see %s\n", st.Rejected, rej.path)
	}
	return nil
}
