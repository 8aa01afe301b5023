// Command codefeedback synthesizes multi-turn coding dialogues grounded in real
// code execution. main only builds the app and maps errors to exit codes; each
// command lives in its own file and registers itself in init.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

var commands []*cli.Command

// register adds a command; called from each command file's init.
func register(c *cli.Command) { commands = append(commands, c) }

// Exit codes, one table for every command (docs/reference.md "Exit codes"). exec is
// the one exception: it exits with the program's own status (124 on a
// timeout) once the program ran.
const (
	exitOK          = 0 // done
	exitFailed      = 1 // the work failed: a stage failed, too many items failed (run), mismatches (verify), I/O
	exitUsage       = 2 // bad flags, arguments, formats or pipeline file; nothing was done
	exitLocked      = 3 // the run directory is in use by another run
	exitStopped     = 4 // stopped on purpose at --max-cost; the next run resumes
	exitUnreachable = 5 // a model endpoint or the sandbox could not be reached or opened
	exitLeak        = 6 // audit --fail-on-leak flagged a dialogue
	exitBadData     = 7 // bad input: a named file is missing, empty, a directory or unreadable, or a record is malformed (file and line named; inputs.go)
	exitGate        = 8 // run: a quality gate tripped a stage; what passed every gate was published, the rest quarantined
)

// exitError carries a specific exit code from a command.
type exitError struct {
	code  int
	quiet bool
	err   error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// quietExit makes main exit with code without printing anything: the
// command has already said what happened (e.g. exec's status line).
func quietExit(code int) error {
	return &exitError{code: code, quiet: true, err: fmt.Errorf("exit status %d", code)}
}

// withCode wraps err so main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageError makes a flag the parser rejects (unknown, bad value) exit
// with exitUsage, pointing at the command's help.
func usageError(c *cli.Context, err error, _ bool) error {
	name := "codefeedback"
	if c.Command != nil && c.Command.HelpName != "" {
		name = c.Command.HelpName
	}
	return withCode(exitUsage, fmt.Errorf("%w (see %s --help)", err, name))
}

// setUsageErrors gives every command (and subcommand) usageError.
func setUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = usageError
		}
		setUsageErrors(c.Subcommands)
	}
}

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	setUsageErrors(commands)
	return &cli.App{
		Name:         "codefeedback",
		Usage:        "synthesize multi-turn coding dialogues grounded in real code execution",
		Version:      version,
		Commands:     commands,
		OnUsageError: usageError,
		// An unknown command is a usage error, not a help lookup.
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				names := make([]string, 0, len(commands))
				for _, cmd := range commands {
					names = append(names, cmd.Name)
				}
				return withCode(exitUsage, fmt.Errorf("unknown command %q (commands: %s)", c.Args().First(), strings.Join(names, ", ")))
			}
			return cli.ShowAppHelp(c)
		},
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// runApp runs the CLI with flags accepted after positional arguments too.
func runApp(ctx context.Context, app *cli.App, args []string) error {
	return app.RunContext(ctx, permuteArgs(app.Commands, args))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runApp(ctx, newApp(), os.Args)
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet {
			fmt.Fprintln(os.Stderr, "codefeedback:", err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "codefeedback:", err)
	os.Exit(exitFailed)
}
