package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type importOptions struct {
	in, out string
	format  string
	as      string
	maps    []string
	onError string
	stderr  io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "import",
		Usage:     "read a benchmark, query pool or Code-Feedback file into codefeedback records",
		ArgsUsage: "IN OUT",
		Description: "IN may be JSONL, a JSON array (.json), CSV, plain or .gz/.zst, or Parquet dialogues. OUT is JSONL (.jsonl, .gz, .zst);\n" +
			"dialogue inputs may also be written as .parquet. Problems keep every source field (unmapped ones in \"extra\").",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "auto", Usage: "input format: " + formatNames()},
			&cli.StringFlag{Name: "as", Value: "auto", Usage: "what records become: auto (a record with tests is a problem, one without a query whose output is kept as its reference answer: Code Alpaca, Evol-Instruct, Magicoder), query or problem"},
			&cli.StringSliceFlag{Name: "map", Usage: "field mapping target=source[,target=source] (targets: id, text, solution, tests, test_import, setup, entry_point, prompt, language)"},
			&cli.StringFlag{Name: "on-error", Value: "fail", Usage: "fail: stop at the first bad record; skip: write bad records to OUT.rejects.jsonl and go on"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return withCode(exitUsage, errors.New("import: want IN OUT"))
			}
			return runImport(c.Context, importOptions{in: c.Args().Get(0), out: c.Args().Get(1), format: c.String("format"), as: c.String("as"),
				maps: c.StringSlice("map"), onError: c.String("on-error"), stderr: errWriter(c.App.ErrWriter)})
		},
	})
}

func formatNames() string {
	var s []string
	for _, f := range schema.Formats {
		s = append(s, string(f))
	}
	return strings.Join(s, "|")
}

// rejectsFile collects bad records for --on-error skip; it is created on the
// first reject only.
type rejectsFile struct {
	path string
	w    schema.Writer[rejectRecord]
	n    int
}

type rejectRecord struct {
	File   string `json:"file"`
	Unit   string `json:"unit"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	Record string `json:"record,omitempty"`
}

func (r *rejectsFile) add(e *schema.RecordError) error {
	if r.w == nil {
		w, err := schema.CreateWriter[rejectRecord](r.path)
		if err != nil {
			return err
		}
		r.w = w
	}
	r.n++
	return r.w.Write(rejectRecord{File: e.File, Unit: e.Unit, Line: e.Line, Reason: e.Reason, Record: string(e.Raw)})
}

func (r *rejectsFile) close() error {
	if r.w == nil {
		return nil
	}
	return r.w.Close()
}

func (r *rejectsFile) abort() {
	if r.w != nil {
		r.w.Abort()
	}
}

func newRejects(onError, out string) (*rejectsFile, error) {
	switch onError {
	case "fail", "":
		return nil, nil
	case "skip":
		return &rejectsFile{path: out + ".rejects.jsonl"}, nil
	}
	return nil, withCode(exitUsage, fmt.Errorf("--on-error %q: want fail or skip", onError))
}

func runImport(ctx context.Context, o importOptions) error {
	mapping, err := schema.ParseMapping(o.maps)
	if err != nil {
		return withCode(exitUsage, err)
	}
	rej, err := newRejects(o.onError, o.out)
	if err != nil {
		return err
	}
	as, err := schema.ParseAs(o.as)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("import: --%w", err))
	}
	if o.format != "" && !slices.Contains(schema.Formats, schema.Format(o.format)) {
		return withCode(exitUsage, fmt.Errorf("import: unknown --format %q (want one of %v)", o.format, schema.Formats))
	}
	if err := checkInputFile("import", o.in); err != nil {
		return err
	}
	if schema.IsParquet(o.in) {
		// Parquet holds dialogues only (what export and run write); the
		// format detection below reads text and would call it invalid UTF-8.
		if o.format != "" && o.format != "auto" {
			return withCode(exitUsage, fmt.Errorf("import: %s: a Parquet file holds dialogues; --format %s applies to JSON and CSV inputs", o.in, o.format))
		}
		return importParquet(ctx, o, rej)
	}
	src, err := schema.OpenSource(o.in, schema.ImportOptions{Format: schema.Format(o.format), Mapping: mapping})
	if err != nil {
		return badInput("import", o.in, err) // the file is there but its records cannot be read
	}
	defer src.Close()
	var write func(schema.Record) error
	var queries int
	var commit func() error
	var abort func()
	if src.Dialogues() {
		w, err := schema.CreateWriter[schema.Dialogue](o.out)
		if err != nil {
			return err
		}
		write, commit, abort = func(r schema.Record) error { return w.Write(*r.Dialogue) }, w.Close, w.Abort
	} else {
		if schema.IsParquet(o.out) {
			return withCode(exitUsage, fmt.Errorf("import: %s: Parquet output holds dialogues; write problems as .jsonl", o.out))
		}
		w, err := schema.CreateWriter[schema.Problem](o.out)
		if err != nil {
			return err
		}
		write, commit, abort = func(r schema.Record) error {
			if as.IsQuery(r.Problem) {
				queries++
				return w.Write(schema.Problem{Query: r.Problem.AsQuery()})
			}
			return w.Write(*r.Problem)
		}, w.Close, w.Abort
	}
	n := 0
	fail := func(err error, code int) error {
		abort()
		if rej != nil {
			rej.abort()
		}
		return withCode(code, fmt.Errorf("import: %w", err))
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err, exitFailed)
		}
		r, err := src.Next()
		if err == io.EOF {
			break
		}
		var re *schema.RecordError
		if errors.As(err, &re) && rej != nil {
			if err := rej.add(re); err != nil {
				return fail(err, exitFailed)
			}
			continue
		}
		if err != nil {
			abort()
			if rej != nil {
				rej.abort()
			}
			return inputOr("import", o.in, err, exitBadData)
		}
		if err := write(r); err != nil {
			return fail(err, exitFailed)
		}
		n++
	}
	if err := commit(); err != nil {
		return fail(err, exitFailed)
	}
	if rej != nil {
		if err := rej.close(); err != nil {
			return withCode(exitFailed, fmt.Errorf("import: %w", err))
		}
	}
	if src.Dialogues() {
		fmt.Fprintf(o.stderr, "imported %d records (format %s) into %s\n", n, src.Format(), o.out)
	} else {
		fmt.Fprintf(o.stderr, "imported %d records (format %s, as %s: %d queries, %d problems) into %s\n", n, src.Format(), as, queries, n-queries, o.out)
	}
	if rej != nil && rej.n > 0 {
		fmt.Fprintf(o.stderr, "rejected %d records, see %s\n", rej.n, rej.path)
	}
	return nil
}

// importParquet copies the dialogues of a Parquet file into OUT (JSONL or
// Parquet), with the same record checks and --on-error handling as text.
func importParquet(ctx context.Context, o importOptions, rej *rejectsFile) error {
	r, err := schema.OpenReader[schema.Dialogue](o.in)
	if err != nil {
		return badInput("import", o.in, err)
	}
	defer r.Close()
	w, err := schema.CreateWriter[schema.Dialogue](o.out)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fail := func(err error) error {
		w.Abort()
		if rej != nil {
			rej.abort()
		}
		return inputOr("import", o.in, err, exitFailed)
	}
	n := 0
	for d, err := range schema.All(ctx, r) {
		var re *schema.RecordError
		if errors.As(err, &re) && rej != nil {
			if err := rej.add(re); err != nil {
				return fail(err)
			}
			continue
		}
		if err != nil {
			return fail(err)
		}
		if err := w.Write(d); err != nil {
			return fail(err)
		}
		n++
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	if rej != nil {
		if err := rej.close(); err != nil {
			return withCode(exitFailed, fmt.Errorf("import: %w", err))
		}
	}
	fmt.Fprintf(o.stderr, "imported %d records (format parquet) into %s\n", n, o.out)
	if rej != nil && rej.n > 0 {
		fmt.Fprintf(o.stderr, "rejected %d records, see %s\n", rej.n, rej.path)
	}
	return nil
}

// errWriter falls back to stderr when the app has none.
func errWriter(w io.Writer) io.Writer {
	if w == nil {
		return os.Stderr
	}
	return w
}
