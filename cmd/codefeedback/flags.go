package main

import (
	"github.com/urfave/cli/v2"
)

// Parallelism has one name on every command, --concurrency, as in the
// pipeline file (`concurrency:`). Older names (audit's --workers) still
// work but are hidden from --help: scripts keep running, new users see
// one word.

// concurrencyFlags returns --concurrency and a hidden flag for each old
// name. defaultText, when not empty, is what --help shows as the default.
func concurrencyFlags(usage string, value int, defaultText string, old ...string) []cli.Flag {
	fs := []cli.Flag{&cli.IntFlag{Name: "concurrency", Value: value, Usage: usage, DefaultText: defaultText}}
	for _, n := range old {
		fs = append(fs, &cli.IntFlag{Name: n, Value: value, Hidden: true, Usage: "old name of --concurrency"})
	}
	return fs
}

// concurrency reads --concurrency, or an old name when only that was given.
func concurrency(c *cli.Context, old ...string) int {
	if !c.IsSet("concurrency") {
		for _, n := range old {
			if c.IsSet(n) {
				return c.Int(n)
			}
		}
	}
	return c.Int("concurrency")
}
