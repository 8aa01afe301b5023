package main

import (
	"github.com/urfave/cli/v2"

	// Sandbox drivers register their URL schemes in init. This file and
	// drivers_docker.go (build tag !nodocker) are the only places that pick
	// them: `go build -tags nodocker` gives a slim, bwrap-only binary.
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
)

// executorFlag is the one sandbox flag every command that runs code takes.
// --driver is kept as an alias for scripts written before it was unified.
func executorFlag(dest *string) *cli.StringFlag {
	return &cli.StringFlag{
		Name:        "executor",
		Aliases:     []string{"driver"},
		Usage:       "sandbox: bwrap, docker, or a URL such as bwrap://?memory=1GiB or docker://codefeedback-sandbox:bookworm?pool=4",
		Value:       "bwrap://",
		Destination: dest,
	}
}
