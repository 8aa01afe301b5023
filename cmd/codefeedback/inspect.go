package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/codefeedback/codefeedback/schema"
	"github.com/urfave/cli/v2"
)

type inspectOptions struct {
	file   string
	sample int
	out    io.Writer
}

func init() {
	register(&cli.Command{
		Name:      "inspect",
		Usage:     "summarise a records file: count, schema, turn and length distributions, roles, languages, ratings, samples",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sample", Value: 2, Usage: "records to render as a sample"},
		},
		Action: func(c *cli.Context) error {
			args, sample := c.Args().Slice(), c.Int("sample")
			if len(args) != 1 {
				return withCode(exitUsage, errors.New("inspect: want FILE [--sample N]"))
			}
			return runInspect(c.Context, inspectOptions{file: args[0], sample: sample, out: c.App.Writer})
		},
	})
}

func runInspect(ctx context.Context, o inspectOptions) error {
	rep, err := schema.Inspect(ctx, o.file, o.sample)
	if err != nil {
		return withCode(exitBadData, fmt.Errorf("inspect: %w", err))
	}
	rep.Render(o.out)
	return nil
}
