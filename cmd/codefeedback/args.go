package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// permuteArgs moves a command's flags in front of its positional arguments,
// so `codefeedback inspect FILE --sample 3` works as users expect: urfave/cli
// v2 stops reading flags at the first positional argument. A flag that takes
// a value keeps the token after it; "--" ends flag reading as usual.
func permuteArgs(cmds []*cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	// Descend through the command path (e.g. `cache stats`).
	for len(rest) > 0 {
		c := findCommand(cmds, rest[0])
		if c == nil {
			break
		}
		cmd, cmds = c, c.Subcommands
		out = append(out, rest[0])
		rest = rest[1:]
	}
	if cmd == nil {
		return args
	}
	var flags, pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue(cmd, name) && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	return append(append(out, flags...), pos...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the named flag of cmd reads the next argument.
// Unknown flags are assumed to take none (the parser will report them).
func takesValue(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, isBool := f.(*cli.BoolFlag); isBool {
				return false
			}
			return true
		}
	}
	return false
}
