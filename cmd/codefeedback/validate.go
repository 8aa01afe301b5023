package main

import (
	"errors"
	"fmt"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "validate",
		Usage:     "check a pipeline file and report every mistake with file:line",
		ArgsUsage: "PIPELINE.yaml",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, errors.New("validate: want one pipeline file"))
			}
			cfg, err := pipeline.Load(c.Args().First(), "")
			if err != nil {
				var ce pipeline.ConfigErrors
				if errors.As(err, &ce) {
					return withCode(exitUsage, fmt.Errorf("%d mistakes:\n%w", len(ce), err))
				}
				return withCode(exitUsage, err)
			}
			fmt.Fprintf(c.App.Writer, "%s: ok (%d inputs, %d stages, %d outputs)\n", cfg.File, len(cfg.Inputs), len(cfg.Stages), len(cfg.Outputs))
			return nil
		},
	})
}
