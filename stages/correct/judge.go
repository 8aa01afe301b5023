package correct

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/schema"
)

// Observed outcomes of a run that are not exception names: the harness's
// outcome words.
const (
	observedPass        = harness.OutcomePass
	observedWrongAnswer = harness.OutcomeWrongAnswer // a test's comparison or assert failed
	observedTimeout     = harness.OutcomeTimeout
	observedOther       = harness.OutcomeError // failed with no exception we could name
)

// kindOf maps an observed outcome to the bug kind it proves, or "" when it
// proves none (a pass, or an exception outside the five kinds such as
// IndexError).
func kindOf(observed string) mutate.Kind { return observedKinds[observed] }

// observedKinds maps each observed outcome that proves a kind to it.
var observedKinds = map[string]mutate.Kind{
	"SyntaxError": mutate.Syntax, "IndentationError": mutate.Syntax, "TabError": mutate.Syntax,
	"NameError":         mutate.Name,
	"TypeError":         mutate.Type,
	observedWrongAnswer: mutate.Logic,
	observedTimeout:     mutate.Timeout,
}

// observedOf lists the observed outcomes that prove kind k, sorted.
func observedOf(k mutate.Kind) []string {
	var out []string
	for o, ok := range observedKinds {
		if ok == k {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// checker judges candidate code against a problem's tests with the test
// harness (executors/harness) in the sandbox. Safe for concurrent use when
// its Executor is.
type checker struct {
	Exec executors.Executor
	// Timeout bounds an ordinary run (default 10 s); LoopTimeout bounds runs
	// of code expected to loop forever (default 2 s).
	Timeout, LoopTimeout time.Duration
	// LoopFactor, when above 0, bounds a run expected to loop forever by
	// LoopFactor times the reference solution's run time instead (see
	// LoopLimit).
	LoopFactor float64
}

// loopFloor is the least time limit of a run expected to hang.
const loopFloor = 500 * time.Millisecond

// LoopLimit is the time limit of a run expected to loop forever, given the
// reference solution's passing run: LoopFactor times its run time, rounded
// up to a quarter second, at least half a second and at most LoopTimeout
// (LoopTimeout itself when LoopFactor is 0). A planted endless loop shows
// as surely at half a second as at two when the reference takes 30 ms,
// and these runs, which always last their whole limit, were most of the
// stage's time. The reference's time grows with the machine's load, and
// the limit with it.
func (c *checker) LoopLimit(ref judgedRun) time.Duration {
	top := cmp.Or(c.LoopTimeout, 2*time.Second)
	if c.LoopFactor <= 0 {
		return top
	}
	const quarter = 250 * time.Millisecond
	d := time.Duration(c.LoopFactor * float64(ref.Verdict.Result.Duration))
	d = (d + quarter - 1) / quarter * quarter
	return min(max(d, loopFloor), top)
}

// options are the harness options of a run bounded by t, each test by at
// most 5 s of it.
func options(t time.Duration) harness.Options {
	return harness.Options{Timeout: t, CaseTimeout: min(5*time.Second, t)}
}

// limit is the time limit of an ordinary run, or with loop of one expected
// to hang when there is no reference run to scale it by.
func (c *checker) limit(loop bool) time.Duration {
	if loop {
		return cmp.Or(c.LoopTimeout, 2*time.Second)
	}
	return cmp.Or(c.Timeout, 10*time.Second)
}

// judgedRun is one judged execution.
type judgedRun struct {
	Verdict harness.Verdict
	// Observed is the verdict's outcome (harness.Verdict.Outcome) with any
	// module prefix of an exception name dropped: observedPass,
	// observedWrongAnswer, observedTimeout, an exception name, or
	// observedOther. The first failure decides: the code's failure to load,
	// else the first failing test in order.
	Observed string
	// Line is the line of the code the first failure points at (a syntax
	// error's line, or the innermost line an exception passed through); 0
	// when none.
	Line int
	// FailedTest is the source of the first failing test; "" when the code
	// failed before any test ran.
	FailedTest string
	At         time.Time
	// Lang is the language the code ran in; "" is Python.
	Lang executors.Language
}

// Passed reports whether every test passed.
func (r judgedRun) Passed() bool { return r.Verdict.Passed }

// newRun reads a verdict's first failure.
func newRun(v harness.Verdict, at time.Time) judgedRun {
	r := judgedRun{Verdict: v, Observed: v.Outcome(), At: at}
	if i := strings.LastIndex(r.Observed, "."); i >= 0 {
		r.Observed = r.Observed[i+1:] // json.decoder.JSONDecodeError -> JSONDecodeError
	}
	if f, ok := firstFailure(v); ok {
		r.Line = f.Line
		if v.Load == nil {
			r.FailedTest = f.Test
		}
	}
	return r
}

// firstFailure is the failure that decides a verdict's outcome, as a case:
// the load failure, or the first failing test.
func firstFailure(v harness.Verdict) (harness.CaseResult, bool) {
	if l := v.Load; l != nil {
		return harness.CaseResult{Kind: l.Kind, Exception: l.Exception, Message: l.Message, Traceback: l.Traceback, Line: l.Line}, true
	}
	for _, c := range v.Cases {
		if !c.Passed {
			return c, true
		}
	}
	return harness.CaseResult{}, false
}

// Check judges code against p's tests; loop selects the short time limit
// for code expected to hang. A failing program is a judgedRun, not an error; an
// error means the sandbox failed or p cannot be judged.
func (c *checker) Check(ctx context.Context, p *schema.Problem, code string, loop bool) (judgedRun, error) {
	return c.CheckWithin(ctx, p, code, c.limit(loop))
}

// CheckWithin is Check with the run's time limit t.
func (c *checker) CheckWithin(ctx context.Context, p *schema.Problem, code string, t time.Duration) (judgedRun, error) {
	at := time.Now().UTC()
	lang, err := languageOf(p)
	if err != nil {
		return judgedRun{}, err
	}
	v, err := harness.JudgeIn(ctx, c.Exec, lang, *p, code, options(t))
	if err != nil {
		return judgedRun{}, fmt.Errorf("correct: run tests: %w", err)
	}
	r := newRun(v, at)
	if lang != executors.Python {
		r.Lang = lang
	}
	return r, nil
}

// Rerun runs the judge program recorded in an execution again under the
// same limits, to confirm what it showed.
func (c *checker) Rerun(ctx context.Context, e *schema.Execution) (judgedRun, error) {
	at := time.Now().UTC()
	v, err := harness.Rerun(ctx, c.Exec, *e)
	if err != nil {
		return judgedRun{}, fmt.Errorf("correct: %w", err)
	}
	r := newRun(v, at)
	if e.Language != "" && e.Language != string(executors.Python) {
		r.Lang = executors.Language(e.Language)
	}
	return r, nil
}

// Output is the text of an execution turn for r: the harness's feedback
// (the error with its traceback, expected versus actual with the test, or
// the timeout), all real output of the run.
func (r judgedRun) Output() string { return strings.TrimRight(r.Verdict.Feedback, "\n") }

// Execution is the record of r for an execution turn; what the run's result
// does not name (driver, image, memory limit) comes from info.
func (r judgedRun) Execution(info executors.Info) *schema.Execution {
	e := r.Verdict.ExecutionIn(r.Lang)
	e.ExecutedAt = r.At
	if e.Driver == "" {
		e.Driver = info.Driver
	}
	if e.Image == "" {
		e.Image = info.Image
	}
	if e.MemoryB == 0 {
		e.MemoryB = info.Limits.MemoryBytes
	}
	return &e
}

func normalizeNewlines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// ProveTimeout re-checks code whose run timed out under limit, so that a
// "loop never ends" label rests on more than the wall clock (which a
// loaded machine stretches): a re-run with a CPU-time limit of twice
// limit (1 s to 4 s) and a wall-clock limit of four times that plus 2 s,
// with no per-test timer. An endless loop spends its CPU time and is
// stopped by that limit (SIGXCPU), or, waiting without spending CPU, by
// the long deadline: proven. Code that only ran out of wall time finishes
// this time, and the returned run, with its real outcome, replaces the
// timeout.
func (c *checker) ProveTimeout(ctx context.Context, p *schema.Problem, code string, limit time.Duration) (proof judgedRun, proven bool, err error) {
	cpu := min(max(2*limit, time.Second), 4*time.Second)
	wall := 4*cpu + 2*time.Second
	opts := harness.Options{Timeout: wall, CaseTimeout: wall}
	lang, err := languageOf(p)
	if err != nil {
		return judgedRun{}, false, err
	}
	var req executors.Request
	var decode func(executors.Result) harness.Verdict
	if lang == executors.Python {
		pr, err := harness.Build(*p, code, opts)
		if err != nil {
			return judgedRun{}, false, fmt.Errorf("correct: prove timeout: %w", err)
		}
		req, decode = pr.Request(), pr.Decode
	} else {
		lp, err := harness.BuildIn(lang, *p, code, opts)
		if err != nil {
			return judgedRun{}, false, fmt.Errorf("correct: prove timeout: %w", err)
		}
		req, decode = lp.Request(), lp.Decode
	}
	// The harness keeps CPU time past the time limit (harness.cpuLimit); the
	// proof wants the CPU limit to end an endless loop first, and the wall
	// clock to end code that waits.
	req.Limits.CPUTime = cpu
	req.Limits.WallTimeout = wall
	at := time.Now().UTC()
	res, err := c.Exec.Run(ctx, req)
	if err != nil {
		return judgedRun{}, false, fmt.Errorf("correct: prove timeout: %w", err)
	}
	proof = newRun(decode(res), at)
	if lang != executors.Python {
		proof.Lang = lang
	}
	return proof, res.Signal == "SIGXCPU" || res.TimedOut || proof.Observed == observedTimeout, nil
}
