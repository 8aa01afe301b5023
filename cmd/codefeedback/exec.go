package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/executors"
)

type execOptions struct {
	Lang    string
	Driver  string // driver name or URL
	Timeout time.Duration
	Memory  string
	JSON    bool
	Stdin   string   // file whose content is the program's stdin
	DB      string   // SQLite database file, placed in scratch as db.sqlite
	Files   []string // NAME=PATH: host file PATH placed in scratch as NAME
	File    string   // program file, "-" for stdin
	// MaxInput caps each input file read into memory (program, --stdin,
	// --db, each --file) and their total.
	MaxInput string
}

func init() {
	var o execOptions
	register(&cli.Command{
		Name:      "exec",
		Usage:     "run a snippet (Python, Bash, SQL, JavaScript, TypeScript, C, C++, Go, Java, Rust, Ruby, PHP, Lua) in a sandbox and report what happened",
		ArgsUsage: "FILE|-",
		Description: "Prints the program's stdout and stderr, then a status line (exit code, signal, timeout, " +
			"OOM, wall time) on stderr; --json prints the result record instead. Exits with the program's exit " +
			"code (124 on timeout). Compiled languages report a failed compile as the result (phase compile, the " +
			"compiler's first error and its line). --lang list prints the languages the chosen driver's sandbox can run.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lang", Usage: "python, bash, sql, javascript, typescript, c, cpp, go, java, rust, ruby, php, lua (or a fence name: js, ts, c++, golang, rs, rb); list: what this sandbox can run", Value: "python", Destination: &o.Lang},
			executorFlag(&o.Driver),
			&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit", Value: 5 * time.Second, Destination: &o.Timeout},
			&cli.StringFlag{Name: "memory", Usage: "memory limit, e.g. 512MiB", Value: "512MiB", Destination: &o.Memory},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON", Destination: &o.JSON},
			&cli.StringFlag{Name: "stdin", Usage: "file to feed the program on stdin", Destination: &o.Stdin},
			&cli.StringFlag{Name: "db", Usage: "SQLite database FILE for --lang sql (a copy; the file itself is not changed)", Destination: &o.DB},
			&cli.StringSliceFlag{Name: "file", Usage: "NAME=PATH: copy host file PATH into the run's scratch directory as NAME (repeatable)"},
			&cli.StringFlag{Name: "max-input", Usage: "largest program, --stdin, --db or --file input, and their total", Value: "64MiB", Destination: &o.MaxInput},
		},
		Action: func(c *cli.Context) error {
			if o.Lang == "list" {
				return runExecLangs(c.Context, o, os.Stdout)
			}
			if c.NArg() != 1 {
				return withCode(exitUsage, fmt.Errorf("exec: want one FILE (or - for stdin), got %d arguments", c.NArg()))
			}
			o.File = c.Args().First()
			o.Files = c.StringSlice("file")
			return runExec(c.Context, o, os.Stdin, os.Stdout, os.Stderr)
		},
	})
}

func runExec(ctx context.Context, o execOptions, in io.Reader, stdout, stderr io.Writer) error {
	maxIn := int64(executors.DefaultMaxInput)
	if o.MaxInput != "" {
		var err error
		if maxIn, err = executors.ParseBytes(o.MaxInput); err != nil {
			return withCode(exitUsage, fmt.Errorf("exec: --max-input: %w", err))
		}
	}
	budget := &inputBudget{left: maxIn, cap: cmp.Or(o.MaxInput, "64MiB")}
	var code []byte
	var err error
	if o.File == "-" {
		code, err = budget.read(in, "the program on stdin")
	} else if err = checkInputFile("exec", o.File); err != nil {
		return err
	} else {
		code, err = budget.readFile(o.File)
	}
	if err != nil {
		return withCode(readCode(err), fmt.Errorf("exec: reading program: %w", err))
	}
	mem, err := executors.ParseBytes(o.Memory)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("exec: --memory: %w", err))
	}
	lang, ok := executors.ParseLanguage(o.Lang)
	if !ok {
		return withCode(2, fmt.Errorf("exec: unknown language %q (want one of %s, or list)", o.Lang, executors.LanguageNames()))
	}
	req := executors.Request{Language: lang, Code: string(code),
		Limits: executors.Limits{Timeout: o.Timeout, MemoryBytes: mem}}
	if o.Stdin != "" {
		b, err := budget.readFile(o.Stdin)
		if err != nil {
			return withCode(readCode(err), fmt.Errorf("exec: --stdin: %w", err))
		}
		req.Stdin = string(b)
	}
	if req.Files, err = execFiles(o, budget); err != nil {
		return withCode(readCode(err), err)
	}
	if err := req.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	// One program: one sandbox; the container's cgroup is sized for the run.
	raw, err := executorURL("exec", o.Driver, "pool", "1", "memory", o.Memory)
	if err != nil {
		return err
	}
	// No pre-flight run first: a program that ran fine needs no other
	// proof that the sandbox works. Only a failure is checked, so that a
	// sandbox that cannot run anything says so instead of blaming the program.
	ex, err := executors.OpenUnchecked(ctx, raw)
	if err != nil {
		return err
	}
	defer ex.Close()
	res, err := ex.Run(ctx, req)
	if (err != nil && !errors.Is(err, executors.ErrNoToolchain)) || (err == nil && !res.OK()) {
		if perr := executors.Preflight(ctx, ex); perr != nil {
			return perr
		}
	}
	if errors.Is(err, executors.ErrNoToolchain) {
		return withCode(2, fmt.Errorf("exec: %w (see codefeedback exec --lang list; Debian packages: %s)", err, strings.Join(lang.DebianPackages(), " ")))
	}
	if err != nil {
		return err
	}
	if o.JSON {
		if err := writeJSON(stdout, res); err != nil {
			return err
		}
	} else {
		io.WriteString(stdout, res.Stdout)
		io.WriteString(stderr, res.Stderr)
		fmt.Fprintln(stderr, statusLine(res))
	}
	switch {
	case res.TimedOut:
		return quietExit(124) // the status line said it timed out
	case res.ExitCode != 0:
		return quietExit(res.ExitCode & 0xFF)
	}
	return nil
}

// runExecLangs prints, for every language, whether the driver's sandbox
// has its toolchain (and which tool is missing).
func runExecLangs(ctx context.Context, o execOptions, stdout io.Writer) error {
	raw, err := executorURL("exec", o.Driver, "pool", "1")
	if err != nil {
		return err
	}
	ex, err := executors.Open(ctx, raw)
	if err != nil {
		return withCode(2, err)
	}
	defer ex.Close()
	langs, err := executors.Languages(ctx, ex)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(stdout, langs)
	}
	for _, l := range langs {
		switch {
		case l.Available && len(l.Tools) > 0:
			fmt.Fprintf(stdout, "%-11s yes  %s\n", l.Language, strings.Join(l.Tools, " "))
		case l.Available:
			fmt.Fprintf(stdout, "%-11s yes  (built into the runner)\n", l.Language)
		default:
			fmt.Fprintf(stdout, "%-11s no   %s not found; Debian packages: %s\n", l.Language, l.Missing,
				strings.Join(l.Language.DebianPackages(), " "))
		}
	}
	return nil
}

// execFiles reads --db and --file into a request's Files.
func execFiles(o execOptions, budget *inputBudget) (map[string][]byte, error) {
	files := map[string][]byte{}
	add := func(name, path, flag string) error {
		b, err := budget.readFile(path)
		if err != nil {
			return fmt.Errorf("exec: %s: %w", flag, err)
		}
		if _, dup := files[name]; dup {
			return fmt.Errorf("exec: %s: %s given twice", flag, name)
		}
		files[name] = b
		return nil
	}
	if o.DB != "" {
		if err := add("db.sqlite", o.DB, "--db"); err != nil {
			return nil, err
		}
	}
	for _, f := range o.Files {
		name, path, ok := strings.Cut(f, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("exec: --file %q: want NAME=PATH", f)
		}
		if err := add(name, path, "--file"); err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	return files, nil
}

// inputBudget caps the inputs of one exec together: each read may take what
// the earlier ones left, so the request held in memory stays under the cap.
type inputBudget struct {
	left int64
	cap  string // the flag's value, for errors
}

func (b *inputBudget) readFile(path string) ([]byte, error) {
	data, err := executors.ReadInputFile(path, max(b.left, 1))
	return b.took(data, err)
}

func (b *inputBudget) read(r io.Reader, name string) ([]byte, error) {
	data, err := executors.ReadInput(r, name, max(b.left, 1))
	return b.took(data, err)
}

func (b *inputBudget) took(data []byte, err error) ([]byte, error) {
	var big *executors.InputTooLargeError
	if errors.As(err, &big) {
		return nil, fmt.Errorf("%s is too large: the inputs together may hold --max-input %s (raise it to run this)", big.Name, b.cap)
	}
	b.left -= int64(len(data))
	return data, err
}

func statusLine(r executors.Result) string {
	parts := []string{fmt.Sprintf("exit %d", r.ExitCode)}
	if r.Signal != "" {
		parts = append(parts, "signal "+r.Signal)
	}
	if r.TimedOut {
		parts = append(parts, "timed out")
	}
	if r.OOM {
		parts = append(parts, "out of memory")
	}
	if r.Killed && !r.TimedOut {
		parts = append(parts, "killed")
	}
	if r.StdoutTruncated || r.StderrTruncated {
		parts = append(parts, "output truncated")
	}
	if r.Exception != "" {
		parts = append(parts, r.ErrorLine)
	}
	parts = append(parts, r.Duration.Round(time.Millisecond/10).String(), r.Driver)
	return "[" + strings.Join(parts, " · ") + "]"
}
