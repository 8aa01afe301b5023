// Package harness judges a candidate solution against a problem's tests in a
// sandbox and says what happened, phrased as execution feedback (the way
// OpenCodeInterpreter's evaluation does: the exception and its traceback, the
// expected versus actual value with the test input, or a timeout).
//
// One verdict costs one sandbox run: Build generates a single Python program
// (judge.py plus the problem and candidate as literals) that loads the
// candidate, runs every test case under its own guard and timer, and prints
// one marker line per event on the original stdout. The candidate's stdout is
// diverted to a private file inside the sandbox and comes back inside the
// final record, so nothing the candidate prints can forge a result, and a
// candidate that exits early leaves the summary incomplete, which never
// counts as a pass.
//
// Test styles, all given as schema.Problem.Tests entries:
//   - MBPP: one assert statement per entry (Setup = test_setup_code,
//     TestImport = the imports the tests need).
//   - HumanEval and LeetCodeDataset: one entry defining check(candidate);
//     EntryPoint names the function ("has_close_elements") or an expression
//     ("Solution().twoSum"). The check body is split into one case per
//     top-level assert (statements before an assert belong to its case; a
//     loop holding asserts is one case); a body that cannot run statement by
//     statement (return, global, ...) is one case calling check.
//
// Setup runs before the candidate, or after it when it uses names that only
// the candidate defines (MBPP builds trees from the solution's Node class).
// A Prompt that defines no function or class (LeetCodeDataset's import
// preamble) runs before the candidate too; a HumanEval prompt is part of the
// candidate's code instead (see Reference).
// The in-process judge withstands accidental and naive tampering (printed
// fake markers, exit, os._exit, patched builtins, disabled asserts); it is
// not a proof against code written to introspect the judge itself, which
// shares its interpreter. The sandbox around it is what keeps the host safe.
package harness

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
	"golang.org/x/sync/errgroup"
)

//go:embed judge.py
var judgeSource string

// Version identifies the judge: a short hash of the judge program's source
// and of feedbackRev. Stages whose output holds verdicts or feedback put it
// in their cache version.
func Version() string { return judgeVersion }

// feedbackRev changes whenever Feedback's wording changes.
const feedbackRev = "feedback-2"

var judgeVersion = func() string {
	h := sha256.Sum256([]byte(judgeSource + "\x00" + feedbackRev))
	return hex.EncodeToString(h[:6])
}()

// Kind classifies one test case's outcome.
type Kind string

const (
	KindPass        Kind = "pass"
	KindException   Kind = "exception"    // the code raised (or exited, or crashed)
	KindWrongAnswer Kind = "wrong_answer" // an assert failed
	KindTimeout     Kind = "timeout"      // the case or the whole run ran out of time
	KindSyntax      Kind = "syntax"       // the candidate does not compile
)

// CaseResult is one test case's outcome. Values (Input, Expected, Actual)
// are Python source text and repr()s, cut at Options.ValueChars.
type CaseResult struct {
	Test      string `json:"test"` // the case's source, e.g. "assert f(3, 4) == 7"
	Passed    bool   `json:"passed"`
	Kind      Kind   `json:"kind"`
	Exception string `json:"exception,omitempty"` // e.g. "ZeroDivisionError"
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"` // trimmed to the candidate's and the test's frames
	// Line is, for an exception, the innermost line of the candidate's code
	// it passed through (0 when it never did).
	Line     int    `json:"line,omitempty"`
	Input    string `json:"input,omitempty"` // the call under test, e.g. "f(3, 4)"
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	Op       string `json:"op,omitempty"` // the comparison, "==" unless the test used another
	// NotRun marks a case the judge never started: the run ended (time
	// limit, crash, exit) during an earlier case. Its Kind is that ending,
	// so counts stay as before, but feedback must not claim it timed out.
	NotRun bool `json:"not_run,omitempty"`
}

// LoadFailure says why no test ran: the candidate (or the problem's set-up)
// failed to compile or to run at top level, or the entry point is missing.
type LoadFailure struct {
	Stage     string `json:"stage"` // solution, setup, test_import, tests, entry_point
	Kind      Kind   `json:"kind"`  // syntax, exception or timeout
	Exception string `json:"exception,omitempty"`
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"`
	// Line is the line of the candidate's code at fault: a syntax error's
	// line, or the innermost candidate line an exception passed through; 0
	// when there is none (a timeout, or set-up code failing on its own).
	Line int `json:"line,omitempty"`
}

// Verdict is the judgement of one candidate.
type Verdict struct {
	// Passed is true only when the judge ran to its end and every case passed.
	Passed      bool         `json:"passed"`
	Total       int          `json:"total"`
	PassedCount int          `json:"passed_count"`
	Cases       []CaseResult `json:"cases"`
	Load        *LoadFailure `json:"load,omitempty"` // nil when the code loaded
	// Complete is true when the judge reported its end; false means the run
	// was cut short (timeout, crash, exit) and unreported cases were failed.
	Complete bool `json:"complete"`
	// Stdout is what the candidate printed, cut at Options.StdoutBytes;
	// StdoutBytes is the full size.
	Stdout      string           `json:"stdout,omitempty"`
	StdoutBytes int64            `json:"stdout_bytes,omitempty"`
	Result      executors.Result `json:"result"`
	Program     string           `json:"-"` // the program that ran
	Limits      executors.Limits `json:"limits"`
	Feedback    string           `json:"feedback"` // ready to paste as the next turn
	prog        Program
}

// Options tune a judgement. Zero fields take the defaults.
type Options struct {
	// Timeout bounds the whole run (default 10s); CaseTimeout bounds each
	// case and the candidate's loading (default 5s, at most Timeout).
	Timeout     time.Duration
	CaseTimeout time.Duration
	// Limits are the sandbox limits; their Timeout is replaced by Timeout.
	Limits executors.Limits
	// ValueChars caps each reported value (default 300); StdoutBytes the
	// candidate's stdout kept (default 4096).
	ValueChars  int
	StdoutBytes int
	// FeedbackFailures is how many failing cases the feedback shows in
	// full (default 3).
	FeedbackFailures int
}

// cpuLimit is the CPU-time limit of a run bounded by timeout: at least a
// second past it. A busy loop spends CPU time as fast as wall time on an
// idle machine, so a CPU limit equal to the timeout raced the deadline and
// the same endless loop ended as "killed by SIGXCPU" (an error) or as a
// timeout from one run to the next; the deadline is what ends it now.
func cpuLimit(cpu, timeout time.Duration) time.Duration {
	return max(cpu, timeout+time.Second)
}

// caseTimer is the judge's per-case timer, 0 (unarmed) when it is as long
// as the whole run: such a timer cannot let a later case run, it only races
// the run's own deadline, and which of the two fires first follows the
// machine's load, and with it the feedback's words (a planted endless loop
// read "timed out after 1s" or "execution timed out after 1s" from one run
// to the next).
func caseTimer(o Options) time.Duration {
	if o.CaseTimeout >= o.Timeout {
		return 0
	}
	return o.CaseTimeout
}

func (o Options) withDefaults() Options {
	setDefault(&o.Timeout, 10*time.Second)
	setDefault(&o.CaseTimeout, 5*time.Second)
	if o.CaseTimeout > o.Timeout {
		o.CaseTimeout = o.Timeout
	}
	setDefault(&o.ValueChars, 300)
	setDefault(&o.StdoutBytes, 4096)
	setDefault(&o.FeedbackFailures, 3)
	o.Limits.Timeout = o.Timeout
	o.Limits.CPUTime = cpuLimit(o.Limits.CPUTime, o.Timeout)
	// The summary needs room beside the candidate's stdout copy; the judge
	// keeps its own output under outputBudget.
	if o.Limits.OutputBytes < minOutputBytes {
		o.Limits.OutputBytes = minOutputBytes
	}
	return o
}

// setDefault sets *v to d when it is unset (zero or below).
func setDefault[T int | int64 | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

const (
	minOutputBytes = 128 << 10
	outputBudget   = 64 << 10 // detail budget for case records; past it they shrink
)

// ErrNoTests means the problem has nothing to judge with.
var ErrNoTests = errors.New("harness: problem has no tests")

// Program is a generated judge program for one candidate.
type Program struct {
	Source string
	marker string
	// payload is the judge's argument as a literal (JudgeBatch passes it
	// on); empty for a recovered program.
	payload string
	opts    Options
	// What Build made it from; empty for a program recovered from an old
	// record that stored the program itself.
	problem schema.Problem
	code    string
	built   bool
	// plusBase: a BuildPlus program whose inputs start with a base set.
	plusBase bool
}

// Build generates the judge program for a candidate. code is the complete
// candidate source (for HumanEval: prompt plus completion). It fails only
// for a problem that cannot be judged.
func Build(p schema.Problem, code string, opts Options) (Program, error) {
	opts = opts.withDefaults()
	if len(p.Tests) == 0 {
		return Program{}, fmt.Errorf("%w (problem %q)", ErrNoTests, p.ID)
	}
	for _, t := range p.Tests {
		if strings.Contains(t, "def check(") && strings.TrimSpace(p.EntryPoint) == "" {
			return Program{}, fmt.Errorf("harness: problem %q has a check() test but no entry point", p.ID)
		}
	}
	payload := map[string]any{
		"value_cap":     opts.ValueChars,
		"case_timeout":  caseTimer(opts).Seconds(),
		"output_budget": outputBudget,
		"stdout_cap":    opts.StdoutBytes,
		"entry_point":   strings.TrimSpace(p.EntryPoint),
		"tests":         p.Tests,
		"setup":         p.Setup,
		"test_import":   p.TestImport,
		"prompt":        p.Prompt,
		"code":          code,
	}
	marker, lit, err := markedLiteral("@@cfjudge:", judgeVersion, payload)
	if err != nil {
		return Program{}, fmt.Errorf("harness: encode payload: %w", err)
	}
	return Program{Source: bootSource + "_cf_boot()(" + lit + ")\n", marker: marker, payload: lit, opts: opts, problem: p, code: code, built: true}, nil
}

// markerFor derives a program's marker from its content: prefix plus the
// first 12 bytes (24 hex digits) of a SHA-256 over the judge's version and
// the payload (candidate code, tests, setup, entry point, caps), so the same
// judgement builds the same program byte for byte and its sandbox run can be
// cached. A random nonce would buy no security: the candidate shares the
// judge's interpreter and scratch space and can always read its marker. The
// marker only keeps accidental or naive output (a printed "@@cfjudge: ..."
// line, another program's marker) from being taken for the judge's records.
func markerFor(prefix, version string, payload map[string]any) (string, error) {
	lit, err := pyLiteral(payload) // encoding/json sorts map keys: stable
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(version + "\x00" + lit))
	return prefix + hex.EncodeToString(h[:12]), nil
}

// markedLiteral sets payload's "marker" (markerFor, over the payload
// without it) and returns the marker and the payload as a Python literal
// (a JSON object of strings, numbers and lists is also one).
func markedLiteral(prefix, version string, payload map[string]any) (marker, lit string, err error) {
	if marker, err = markerFor(prefix, version, payload); err != nil {
		return "", "", err
	}
	payload["marker"] = marker
	if lit, err = pyLiteral(payload); err != nil {
		return "", "", err
	}
	return marker, lit, nil
}

// pyLiteral writes v as JSON, which for strings, numbers, lists and objects
// is also a valid Python literal.
func pyLiteral(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// bytecodeFile is the scratch file holding the judge precompiled by the
// sandbox's own Python (see Judge); the program falls back to compiling the
// embedded source when it is absent or unreadable.
const bytecodeFile = "cfjudge.bin"

// bootSource starts every program: the judge's source as one string literal
// (cheap to parse) that is compiled only when no precompiled judge is in the
// scratch directory. Compiling the judge costs more than running most tests.
var bootSource = func() string {
	lit, err := pyLiteral(judgeSource)
	if err != nil {
		panic(err)
	}
	return "# codefeedback test judge: see the judge source in _CF_SRC.\n" +
		"_CF_SRC = " + lit + "\n\n" +
		"def _cf_boot():\n" +
		"    try:\n" +
		"        import marshal\n" +
		"        with open(" + fmt.Sprintf("%q", bytecodeFile) + ", 'rb') as f:\n" +
		"            code = marshal.loads(f.read())\n" +
		"    except Exception:\n" +
		"        code = compile(_CF_SRC, 'cfjudge.py', 'exec')\n" +
		"    g = {'__name__': 'cfjudge', '__builtins__': __builtins__}\n" +
		"    exec(code, g)\n" +
		"    return g['_cf_judge']\n\n"
}()

// Request is the sandbox request that runs the program: self-contained, so
// an execution record holding Source re-runs anywhere.
func (pr Program) Request() executors.Request {
	return executors.Request{Language: executors.Python, Code: pr.Source, Limits: pr.opts.Limits}
}

// compiled caches, per executor, the judge compiled by that executor's
// Python (marshal format is specific to the Python version). nil bytes mean
// the executor could not produce it and programs compile the source.
var compiled sync.Map // executors.Executor -> *compiledJudge

type compiledJudge struct {
	once sync.Once
	code []byte
}

const compileProgram = `import base64, marshal, sys
sys.stdout.write("CFJUDGE-BYTECODE " + base64.b64encode(marshal.dumps(compile(_CF_SRC, "cfjudge.py", "exec"))).decode() + "\n")
`

func judgeBytecode(ctx context.Context, ex executors.Executor) []byte {
	v, _ := compiled.LoadOrStore(ex, &compiledJudge{})
	cj := v.(*compiledJudge)
	cj.once.Do(func() {
		res, err := ex.Run(ctx, executors.Request{Language: executors.Python,
			Code:   "_CF_SRC = " + must(pyLiteral(judgeSource)) + "\n" + compileProgram,
			Limits: executors.Limits{Timeout: 20 * time.Second, OutputBytes: 1 << 20}})
		if err != nil || !res.OK() {
			return
		}
		_, b64, ok := strings.Cut(res.Stdout, "CFJUDGE-BYTECODE ")
		if !ok {
			return
		}
		code, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err == nil {
			cj.code = code
		}
	})
	return cj.code
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// Judge runs code against p's tests in ex and returns the verdict. A failing
// candidate is a verdict, not an error; an error means the problem cannot be
// judged or the sandbox itself failed. Safe for concurrent use if ex is.
func Judge(ctx context.Context, ex executors.Executor, p schema.Problem, code string, opts Options) (Verdict, error) {
	pr, err := Build(p, code, opts)
	if err != nil {
		return Verdict{}, err
	}
	v, err := pr.run(ctx, ex, true)
	if err != nil {
		return Verdict{}, fmt.Errorf("harness: run problem %q: %w", p.ID, err)
	}
	return v, nil
}

// run runs the program in ex and decodes the result. precompiled hands the
// program the judge compiled by ex's Python; only a program built around
// this judge source may take it.
func (pr Program) run(ctx context.Context, ex executors.Executor, precompiled bool) (Verdict, error) {
	req := pr.Request()
	if precompiled {
		if code := judgeBytecode(ctx, ex); code != nil {
			req.Files = map[string][]byte{bytecodeFile: code}
		}
	}
	res, err := ex.Run(ctx, req)
	if err != nil {
		return Verdict{}, err
	}
	return pr.Decode(res), nil
}

type planRec struct {
	Cases []string `json:"cases"`
}

type loadRec struct {
	OK        int    `json:"ok"`
	Kind      Kind   `json:"kind"`
	Stage     string `json:"stage"`
	Exception string `json:"exception"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	Line      int    `json:"line"`
}

type caseRec struct {
	I         int    `json:"i"`
	Kind      Kind   `json:"kind"`
	Exception string `json:"exception"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	Line      int    `json:"line"`
	Input     string `json:"input"`
	Expected  string `json:"expected"`
	Actual    string `json:"actual"`
	Op        string `json:"op"`
	Src       string `json:"src"`
}

type doneRec struct {
	Stdout      string `json:"stdout"`
	StdoutBytes int64  `json:"stdout_bytes"`
}

// Decode turns the run's result into a verdict. Only lines carrying this
// program's marker count; cases the judge never reported fail, as timeouts
// when the run timed out and as exceptions otherwise.
func (pr Program) Decode(res executors.Result) Verdict {
	v := Verdict{Result: res, Program: pr.Source, Limits: pr.opts.Limits, prog: pr}
	var plan *planRec
	var load *loadRec
	reported := map[int]caseRec{}
	for kind, body := range pr.records(res.Stdout) {
		switch kind {
		case "plan":
			keepFirst(&plan, body)
		case "load":
			keepFirst(&load, body)
		case "case":
			if r, ok := decodeRec[caseRec](body); ok {
				if _, dup := reported[r.I]; !dup {
					reported[r.I] = r
				}
			}
		case "done":
			if r, ok := decodeRec[doneRec](body); ok && plan != nil && load != nil {
				v.Complete = true
				v.Stdout, v.StdoutBytes = r.Stdout, r.StdoutBytes
			}
		}
	}
	if plan == nil {
		// The judge never got going: the run died at start (or its output
		// was lost). One failed case stands for the whole run.
		plan = &planRec{Cases: []string{"(all tests)"}}
	}
	v.Total = len(plan.Cases)
	if load != nil && load.OK == 0 {
		v.Load = &LoadFailure{Stage: load.Stage, Kind: load.Kind, Exception: load.Exception,
			Message: load.Message, Traceback: load.Traceback, Line: load.Line}
	}
	missing := pr.missingCase(res)
	// Cases run in plan order, so only the first unreported one was running
	// when the run ended; the later ones never started.
	firstMissing := -1
	for i := range plan.Cases {
		if _, ok := reported[i]; !ok {
			firstMissing = i
			break
		}
	}
	for i, src := range plan.Cases {
		c := CaseResult{Test: src}
		switch r, ok := reported[i]; {
		case v.Load != nil:
			c.Kind, c.Exception, c.Message = v.Load.Kind, v.Load.Exception, "not run: the code failed to load"
		case ok:
			c.Kind, c.Exception, c.Message, c.Traceback, c.Line = r.Kind, r.Exception, r.Message, r.Traceback, r.Line
			c.Input, c.Expected, c.Actual, c.Op = r.Input, r.Expected, r.Actual, r.Op
			if r.Src != "" {
				c.Test = r.Src
			}
		case i == firstMissing:
			c.Kind, c.Exception, c.Message = missing.Kind, missing.Exception, missing.Message
		default:
			c.Kind, c.Exception, c.NotRun = missing.Kind, missing.Exception, true
			c.Message = "not run: the run ended during an earlier test"
		}
		c.Passed = c.Kind == KindPass
		if c.Passed {
			v.PassedCount++
		}
		v.Cases = append(v.Cases, c)
	}
	v.Passed = v.Complete && v.Load == nil && v.Total > 0 && v.PassedCount == v.Total
	v.Feedback = Feedback(v, pr.opts)
	return v
}

// records yields the kind and JSON body of each line of stdout that
// carries this program's marker ("<marker> <kind> <json>"); other lines,
// whatever the candidate printed, are skipped.
func (pr Program) records(stdout string) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		sc := bufio.NewScanner(strings.NewReader(stdout))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		prefix := pr.marker + " "
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), prefix)
			if !ok {
				continue
			}
			kind, body, _ := strings.Cut(line, " ")
			if !yield(kind, []byte(body)) {
				return
			}
		}
	}
}

// decodeRec decodes a record's JSON body; ok is false for a malformed one,
// which counts as not reported.
func decodeRec[T any](body []byte) (r T, ok bool) {
	return r, json.Unmarshal(body, &r) == nil
}

// keepFirst sets *p to the first well-formed record of its kind; later
// ones of that kind are ignored.
func keepFirst[T any](p **T, body []byte) {
	if r, ok := decodeRec[T](body); ok && *p == nil {
		*p = &r
	}
}

// missingCase describes a case the judge never reported, from how the run ended.
func (pr Program) missingCase(res executors.Result) CaseResult {
	switch {
	case res.TimedOut:
		return CaseResult{Kind: KindTimeout, Message: fmt.Sprintf("execution timed out after %s", fmtDur(pr.opts.Timeout))}
	case res.OOM:
		return CaseResult{Kind: KindException, Exception: "MemoryError", Message: "the run was killed: out of memory"}
	case res.Signal != "":
		return CaseResult{Kind: KindException, Message: fmt.Sprintf("the program was killed by %s before this test finished", res.Signal)}
	default:
		return CaseResult{Kind: KindException, Exception: res.Exception,
			Message: fmt.Sprintf("the program ended (exit status %d) before this test reported a result", res.ExitCode)}
	}
}

func fmtDur(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// Reference is the problem's reference program: Prompt followed by
// Solution (HumanEval's prompt holds the signature the canonical body
// continues; LeetCodeDataset's holds the imports; MBPP has none).
func Reference(p schema.Problem) string { return p.Prompt + p.Solution }

// Job is one candidate to judge.
type Job struct {
	Problem schema.Problem
	Code    string
}

// JudgeMany judges jobs with at most parallel runs in flight (match the
// executor's pool size; <= 0 means 4) and returns verdicts in job order. It
// stops at the first error (a sandbox failure or an unjudgeable problem).
func JudgeMany(ctx context.Context, ex executors.Executor, jobs []Job, opts Options, parallel int) ([]Verdict, error) {
	if parallel <= 0 {
		parallel = 4
	}
	out := make([]Verdict, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, j := range jobs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			v, err := Judge(gctx, ex, j.Problem, j.Code, opts)
			if err != nil {
				return fmt.Errorf("job %d: %w", i, err)
			}
			out[i] = v
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// Outcomes of a verdict (see Verdict.Outcome) that are not exception names.
const (
	OutcomePass        = "pass"
	OutcomeWrongAnswer = "wrong_answer" // a test's comparison or assert failed
	OutcomeTimeout     = "timeout"      // the judge's timer or the run's time limit
	OutcomeError       = "error"        // failed without an exception to name
)

// Outcome names how the verdict ended, in one word: OutcomePass, else what
// the first failure shows (the load failure, or the first failing case in
// test order): OutcomeTimeout, OutcomeWrongAnswer, the exception's name as
// the judge reports it ("NameError", "SyntaxError", "numpy.AxisError"), or
// OutcomeError.
func (v Verdict) Outcome() string {
	if v.Passed {
		return OutcomePass
	}
	if l := v.Load; l != nil {
		if l.Kind == KindTimeout {
			return OutcomeTimeout
		}
		return cmp.Or(l.Exception, OutcomeError)
	}
	for _, c := range v.Cases {
		switch {
		case c.Passed:
		case c.Kind == KindTimeout:
			return OutcomeTimeout
		case c.Kind == KindWrongAnswer:
			return OutcomeWrongAnswer
		default:
			return cmp.Or(c.Exception, OutcomeError)
		}
	}
	if v.Result.TimedOut {
		return OutcomeTimeout
	}
	return OutcomeError
}

// Execution is the verdict as an execution record for a dialogue turn: the
// candidate's code and the judge by reference (harness, version, the
// program's SHA-256, the tests and the shown part of the verdict), so that
// Rerun rebuilds and re-runs the program and RenderRecorded renders the
// turn's text again; where and with which limits it ran, how it ended, the
// candidate's stdout and the tests' verdict. The judge program itself (some
// 20 KB) is not stored. Exception is the first failing case's (or the load
// failure's) exception; TimedOut also holds when that failure is a timeout
// of the judge's own per-case timer, so the record reads as Outcome does.
func (v Verdict) Execution() schema.Execution {
	passed := v.Passed
	code := v.Program
	if v.prog.built {
		code = v.prog.code
	}
	e := schema.Execution{
		Language:  string(executors.Python),
		Code:      code,
		Driver:    v.Result.Driver,
		Image:     v.Result.Image,
		TimeoutMS: v.Limits.Timeout.Milliseconds(),
		MemoryB:   v.Limits.MemoryBytes,
		ExitCode:  v.Result.ExitCode,
		TimedOut:  v.Result.TimedOut || v.Outcome() == OutcomeTimeout,
		OOM:       v.Result.OOM,
		Stdout:    v.Stdout,
		Stderr:    v.Result.Stderr,
		Passed:    &passed,
		Duration:  v.Result.Duration,
	}
	switch {
	case v.Load != nil:
		e.Exception, e.ErrorLine = v.Load.Exception, v.Load.Message
	default:
		for _, c := range v.Cases {
			if !c.Passed {
				e.Exception, e.ErrorLine = c.Exception, c.Message
				if c.Kind == KindTimeout && e.ErrorLine == "" {
					e.ErrorLine = "timed out"
				}
				break
			}
		}
	}
	if v.prog.built {
		e.Judge = v.judgeRef(&e)
	}
	return e
}
