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
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

var commands []*cli.Command

// register adds a command; called from each command file's init.
func register(c *cli.Command) { commands = append(commands, c) }

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

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	return &cli.App{
		Name:     "codefeedback",
		Usage:    "synthesize multi-turn coding dialogues grounded in real code execution",
		Version:  version,
		Commands: commands,
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
	os.Exit(1)
}
