package main

import (
	"github.com/urfave/cli/v2"

	_ "github.com/codefeedback/codefeedback/executors/env/all"
)

// intercodeCmd is the `codefeedback intercode` command. Its subcommands come
// from several files (fetch and replay here, run in intercode_run.go), each
// adding itself with registerIntercode from its init; the variable is set
// before any init runs, so file order does not matter.
var intercodeCmd = &cli.Command{
	Name:  "intercode",
	Usage: "InterCode environments: fetch InterCode's data files, replay its trajectories, run agents",
}

func registerIntercode(c *cli.Command) {
	intercodeCmd.Subcommands = append(intercodeCmd.Subcommands, c)
}

func init() { register(intercodeCmd) }
