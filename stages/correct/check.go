package correct

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

//go:embed check.py
var checkScript string

// Observed outcomes of a run that are not exception names.
const (
	ObservedPass        = "pass"
	ObservedWrongAnswer = "wrong_answer" // a test's assert failed
	ObservedTimeout     = "timeout"
	ObservedOther       = "error" // failed with no exception we could name
)

// KindOf maps an observed outcome to the bug kind it proves, or "" when it
// proves none (a pass, or an exception outside the five kinds such as
// IndexError).
func KindOf(observed string) Kind {
	switch observed {
	case "SyntaxError", "IndentationError", "TabError":
		return Syntax
	case "NameError":
		return Name
	case "TypeError":
		return Type
	case ObservedWrongAnswer:
		return Logic
	case ObservedTimeout:
		return Timeout
	}
	return ""
}

// Checker runs candidate code against a problem's tests in the sandbox.
// Safe for concurrent use when its Executor is.
type Checker struct {
	Exec executors.Executor
	// Timeout bounds an ordinary run (default 10 s); LoopTimeout bounds runs
	// of code expected to loop forever (default 2 s).
	Timeout, LoopTimeout time.Duration
}

func (c *Checker) timeout(loop bool) time.Duration {
	if loop {
		if c.LoopTimeout > 0 {
			return c.LoopTimeout
		}
		return 2 * time.Second
	}
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 10 * time.Second
}

// Run is one checked execution.
type Run struct {
	Program  string // the whole program sent to the sandbox
	Observed string // ObservedPass, ObservedWrongAnswer, ObservedTimeout, an exception name, or ObservedOther
	Result   executors.Result
	Limits   executors.Limits
	// Line is the line in solution.py the error points at (the innermost
	// solution frame, or the syntax error's line); 0 when none.
	Line int
	// FailedTest is the failing test line, for wrong answers and errors
	// raised while a test ran.
	FailedTest string
	At         time.Time
}

// Passed reports whether every test passed.
func (r Run) Passed() bool { return r.Observed == ObservedPass }

// Program builds the test program for code: the problem's setup as
// setup.py, the code as solution.py, then its test imports and tests as
// test.py. The setup runs first, or right after the solution when it reads
// names it does not bind (MBPP's setup builds trees from the solution's Node
// class).
func Program(p *schema.Problem, code string) (string, error) {
	files := [][2]string{}
	if strings.TrimSpace(p.Setup) != "" {
		files = append(files, [2]string{"setup.py", p.Setup})
	}
	files = append(files, [2]string{"solution.py", code}, [2]string{"test.py", TestSource(p)})
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(files); err != nil {
		return "", fmt.Errorf("correct: encode program files: %w", err)
	}
	return "FILES = " + b.String() + checkScript, nil
}

// TestSource is test.py: the test imports, then one test per line.
func TestSource(p *schema.Problem) string {
	var b strings.Builder
	if s := strings.TrimSpace(p.TestImport); s != "" {
		b.WriteString(s + "\n")
	}
	for _, t := range p.Tests {
		b.WriteString(strings.TrimRight(normalizeNewlines(t), "\n") + "\n")
	}
	return b.String()
}

// Check runs code against p's tests; loop selects the short time limit for
// code expected to hang. A failing program is a Run, not an error; an error
// means the sandbox failed.
func (c *Checker) Check(ctx context.Context, p *schema.Problem, code string, loop bool) (Run, error) {
	prog, err := Program(p, code)
	if err != nil {
		return Run{}, err
	}
	lim := executors.Limits{Timeout: c.timeout(loop)}
	return c.rerun(ctx, prog, lim)
}

// Rerun runs a program recorded in an execution again under the same time
// limit, to confirm what it showed.
func (c *Checker) Rerun(ctx context.Context, e *schema.Execution) (Run, error) {
	return c.rerun(ctx, e.Code, executors.Limits{Timeout: time.Duration(e.TimeoutMS) * time.Millisecond})
}

func (c *Checker) rerun(ctx context.Context, prog string, lim executors.Limits) (Run, error) {
	at := time.Now().UTC()
	res, err := c.Exec.Run(ctx, executors.Request{Language: executors.Python, Code: prog, Limits: lim})
	if err != nil {
		return Run{}, fmt.Errorf("correct: run tests: %w", err)
	}
	r := Run{Program: prog, Result: res, Limits: lim, At: at}
	r.Observed = observe(res)
	r.Line, r.FailedTest = locate(res.Stderr)
	return r, nil
}

var excLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)(?::|$)`)

// observe classifies a result. The driver's parsed exception is preferred;
// the last traceback line is the fallback.
func observe(res executors.Result) string {
	switch {
	case res.TimedOut:
		return ObservedTimeout
	case res.OK():
		return ObservedPass
	}
	exc := res.Exception
	if exc == "" {
		lines := strings.Split(strings.TrimRight(res.Stderr, "\n"), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], "Test failed:") || strings.HasPrefix(lines[i], "  ") {
				continue
			}
			if m := excLine.FindStringSubmatch(lines[i]); m != nil {
				exc = m[1]
			}
			break
		}
	}
	if i := strings.LastIndex(exc, "."); i >= 0 {
		exc = exc[i+1:] // builtins.NameError -> NameError
	}
	switch exc {
	case "":
		return ObservedOther
	case "AssertionError":
		return ObservedWrongAnswer
	}
	return exc
}

var frameRe = regexp.MustCompile(`(?m)^  File "(solution\.py|test\.py)", line (\d+)`)

// locate finds the innermost solution.py line and the test.py line of a
// traceback, and returns the solution line with the failing test's text.
func locate(stderr string) (line int, test string) {
	testLine := 0
	for _, m := range frameRe.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "solution.py" {
			line = n
		} else {
			testLine = n
		}
	}
	if testLine > 0 {
		// the line after the frame header is the test's source text
		re := regexp.MustCompile(`(?m)^  File "test\.py", line ` + strconv.Itoa(testLine) + `.*\n    (.*)$`)
		if m := re.FindStringSubmatch(stderr); m != nil {
			test = strings.TrimSpace(m[1])
		}
	}
	return line, test
}

// Output is the text of an execution turn for r: what the run printed, in the
// order a terminal shows it, with a note for a timeout. It holds only real
// output.
func (r Run) Output() string {
	var b strings.Builder
	if s := strings.TrimRight(r.Result.Stdout, "\n"); s != "" {
		b.WriteString(s + "\n")
	}
	if s := strings.TrimRight(r.Result.Stderr, "\n"); s != "" {
		b.WriteString(s + "\n")
	}
	if r.Result.TimedOut {
		fmt.Fprintf(&b, "Timed out: the run was stopped after the %s time limit.\n", r.Limits.Timeout)
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "(no output; exit code %d)\n", r.Result.ExitCode)
	}
	return "Execution result:\n" + b.String()
}

// Execution is the record of r for an execution turn.
func (r Run) Execution(info executors.Info) *schema.Execution {
	passed := r.Passed()
	driver := r.Result.Driver
	if driver == "" {
		driver = info.Driver
	}
	image := r.Result.Image
	if image == "" {
		image = info.Image
	}
	mem := r.Limits.MemoryBytes
	if mem == 0 {
		mem = info.Limits.MemoryBytes
	}
	return &schema.Execution{
		Language:   string(executors.Python),
		Code:       r.Program,
		Driver:     driver,
		Image:      image,
		TimeoutMS:  r.Limits.Timeout.Milliseconds(),
		MemoryB:    mem,
		ExitCode:   r.Result.ExitCode,
		TimedOut:   r.Result.TimedOut,
		OOM:        r.Result.OOM,
		Exception:  r.Result.Exception,
		ErrorLine:  r.Result.ErrorLine,
		Stdout:     r.Result.Stdout,
		Stderr:     r.Result.Stderr,
		Passed:     &passed,
		Duration:   r.Result.Duration,
		ExecutedAt: r.At,
	}
}

func normalizeNewlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// executionResult turns a recorded execution back into the result fields
// observe reads.
func executionResult(e *schema.Execution) executors.Result {
	return executors.Result{
		Stdout: e.Stdout, Stderr: e.Stderr, ExitCode: e.ExitCode, TimedOut: e.TimedOut, OOM: e.OOM,
		Exception: e.Exception, ErrorLine: e.ErrorLine, Duration: e.Duration, Driver: e.Driver, Image: e.Image,
	}
}
