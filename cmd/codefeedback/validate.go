package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:      "validate",
		Usage:     "check a pipeline file and report every mistake with file:line",
		ArgsUsage: "PIPELINE.yaml",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON: the counts, or every mistake with file, line and column"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, errors.New("validate: want one pipeline file"))
			}
			file := c.Args().First()
			if err := checkPipelineFile("validate", file); err != nil {
				return err
			}
			cfg, err := pipeline.Load(file, "")
			if c.Bool("json") {
				return validateJSON(c.App.Writer, file, cfg, err)
			}
			if err != nil {
				var ce pipeline.ConfigErrors
				if errors.As(err, &ce) {
					return withCode(exitUsage, fmt.Errorf("%s:\n%w", plural(len(ce), "mistake"), err))
				}
				return withCode(readCode(err), err)
			}
			fmt.Fprintf(c.App.Writer, "%s: ok (%d inputs, %d stages, %d outputs)\n", cfg.File, len(cfg.Inputs), len(cfg.Stages), len(cfg.Outputs))
			return nil
		},
	})
}

// validateReport is validate's verdict for --json.
type validateReport struct {
	File     string                 `json:"file"`
	OK       bool                   `json:"ok"`
	Inputs   int                    `json:"inputs"`
	Stages   int                    `json:"stages"`
	Outputs  int                    `json:"outputs"`
	Mistakes []pipeline.ConfigError `json:"mistakes,omitempty"`
}

// validateJSON prints the verdict and exits as validate does without
// --json (exitUsage when the file has mistakes).
func validateJSON(w io.Writer, file string, cfg *pipeline.Config, err error) error {
	r := validateReport{File: file, OK: err == nil}
	var ce pipeline.ConfigErrors
	switch {
	case err == nil:
		r.Inputs, r.Stages, r.Outputs = len(cfg.Inputs), len(cfg.Stages), len(cfg.Outputs)
	case errors.As(err, &ce):
		r.Mistakes = ce
	default:
		r.Mistakes = []pipeline.ConfigError{{File: file, Msg: err.Error()}}
	}
	if werr := writeJSON(w, r); werr != nil {
		return werr
	}
	if err != nil {
		return withCode(readCode(err), fmt.Errorf("%s: %s", file, plural(len(r.Mistakes), "mistake")))
	}
	return nil
}

// plural is "1 mistake", "2 mistakes".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
