package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type inspectOptions struct {
	file   string
	sample int
	json   bool
	out    io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "inspect",
		Usage:     "summarise a records file: count, schema, turn and length distributions, roles, languages, ratings, samples",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sample", Value: 2, Usage: "records to render as a sample"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON (distributions as their summary lines)"},
		},
		Action: func(c *cli.Context) error {
			args, sample := c.Args().Slice(), c.Int("sample")
			if len(args) != 1 {
				return withCode(exitUsage, errors.New("inspect: want FILE [--sample N]"))
			}
			return runInspect(c.Context, inspectOptions{file: args[0], sample: sample, json: c.Bool("json"), out: outWriter(c.App.Writer)})
		},
	})
}

func runInspect(ctx context.Context, o inspectOptions) error {
	if err := checkInputFile("inspect", o.file); err != nil {
		return err
	}
	rep, err := schema.Inspect(ctx, o.file, o.sample)
	if err != nil {
		return inputOr("inspect", o.file, err, exitFailed)
	}
	if o.json {
		return writeJSON(o.out, inspectJSON{File: rep.File, Kind: rep.Kind, Format: rep.Format, Records: rep.Records,
			BadCount: rep.BadCount, Bad: rep.Bad, Schema: rep.Schema, Turns: rep.Turns.String(), MessageChars: rep.MsgLen.String(),
			TextChars: rep.TextLen.String(), Roles: rep.Roles, Languages: rep.Langs, Scores: rep.Scores,
			Diversity: rep.Diversity.Summary(5), Samples: rep.Samples})
	}
	rep.Render(o.out)
	return nil
}

// inspectJSON is inspect's report for --json: the table's figures under
// stable snake_case keys.
type inspectJSON struct {
	File         string                  `json:"file"`
	Kind         string                  `json:"kind"`
	Format       string                  `json:"format"`
	Records      int                     `json:"records"`
	BadCount     int                     `json:"bad_records"`
	Bad          []string                `json:"bad,omitempty"`
	Schema       string                  `json:"schema"`
	Turns        string                  `json:"turns"`
	MessageChars string                  `json:"message_chars"`
	TextChars    string                  `json:"text_chars"`
	Roles        map[string]int          `json:"roles,omitempty"`
	Languages    map[string]int          `json:"languages,omitempty"`
	Scores       map[string]map[int]int  `json:"scores,omitempty"`
	Diversity    schema.DiversitySummary `json:"diversity"`
	Samples      []string                `json:"samples,omitempty"`
}

// writeJSON prints v indented, as every --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
