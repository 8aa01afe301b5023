package harness

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

//go:embed evalplus.py
var plusSource string

// plusVersion identifies the differential judge's source; it seeds the
// markers of its programs (see markerFor).
var plusVersion = func() string {
	h := sha256.Sum256([]byte(plusSource))
	return hex.EncodeToString(h[:6])
}()

// ErrNoPlusInputs means a problem carries no EvalPlus inputs (it was not
// imported from a HumanEval+ or MBPP+ file).
var ErrNoPlusInputs = errors.New("harness: problem has no EvalPlus inputs")

// PlusTests are EvalPlus's differential tests for one problem: inputs on
// which the candidate must agree with the reference solution.
type PlusTests struct {
	TaskID     string
	Dataset    string // "humaneval" or "mbpp": picks the input decoding and special oracles
	EntryPoint string
	Reference  string // program defining EntryPoint, known to be correct
	// Inputs is a JSON array of argument lists; the first BaseCount are
	// EvalPlus's base_input, the rest its plus_input.
	Inputs    json.RawMessage
	BaseCount int
	Atol      float64
	// NonFinite: the record held Python's bare NaN/Infinity/-Infinity,
	// which the loader turned into the strings "NaN", "Infinity" and
	// "-Infinity" (schema.MetaPythonNonFinite); the judge turns them back
	// into floats, as EvalPlus reads them (Mbpp/404's -Infinity).
	NonFinite bool
}

// PlusTestsOf reads EvalPlus's base_input, plus_input and atol from p.Extra
// (the EvalPlus adapter keeps them there). withBase puts base_input first,
// judged as its own set the way EvalPlus judges it (expected outputs from
// the reference, not the record's assertion text); without it only
// plus_input is tested. It fails with ErrNoPlusInputs when p has none.
//
// A plus_input that is a JSON object is iterated the way EvalPlus's Python
// iterates it: MbppPlus v0.2.0's Mbpp/793 has `{}`, which is no input at all
// (the candidate must still load); a non-empty object is an error.
func PlusTestsOf(p schema.Problem, withBase bool) (PlusTests, error) {
	plusRaw, ok := p.Extra["plus_input"]
	if !ok {
		return PlusTests{}, fmt.Errorf("%w (problem %q)", ErrNoPlusInputs, p.ID)
	}
	plus, err := inputList(plusRaw)
	if err != nil {
		return PlusTests{}, fmt.Errorf("harness: problem %q: plus_input: %w", p.ID, err)
	}
	var base []json.RawMessage
	if raw, ok := p.Extra["base_input"]; ok && withBase {
		if base, err = inputList(raw); err != nil {
			return PlusTests{}, fmt.Errorf("harness: problem %q: base_input: %w", p.ID, err)
		}
	}
	var atol float64
	if raw, ok := p.Extra["atol"]; ok {
		if err := json.Unmarshal(raw, &atol); err != nil {
			return PlusTests{}, fmt.Errorf("harness: problem %q: atol: %w", p.ID, err)
		}
	}
	all, err := json.Marshal(append(base, plus...))
	if err != nil {
		return PlusTests{}, fmt.Errorf("harness: problem %q: inputs: %w", p.ID, err)
	}
	ds := "humaneval"
	if strings.HasPrefix(p.ID, "Mbpp/") {
		ds = "mbpp"
	}
	if strings.TrimSpace(p.EntryPoint) == "" {
		return PlusTests{}, fmt.Errorf("harness: problem %q has EvalPlus inputs but no entry point", p.ID)
	}
	return PlusTests{TaskID: p.ID, Dataset: ds, EntryPoint: strings.TrimSpace(p.EntryPoint),
		Reference: p.Program(), Inputs: all, BaseCount: len(base), Atol: atol,
		NonFinite: p.Metadata[schema.MetaPythonNonFinite] == "true"}, nil
}

// inputList decodes a list of argument lists; an empty object is an empty
// list (see PlusTestsOf).
func inputList(raw json.RawMessage) ([]json.RawMessage, error) {
	var list []json.RawMessage
	err := json.Unmarshal(raw, &list)
	if err == nil {
		return list, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if len(obj) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("an object with %d keys where a list of argument lists was expected", len(obj))
	}
	return nil, err
}

// pythonInputs is pt's inputs as Python's json module wrote them: with
// NonFinite, the loader's "NaN", "Infinity" and "-Infinity" strings become
// the bare tokens again (json.loads reads them as floats). A whole JSON
// string is matched, quotes included, so no other string changes.
func pythonInputs(pt PlusTests) string {
	s := string(pt.Inputs)
	if pt.NonFinite {
		s = strings.NewReplacer(`"-Infinity"`, `-Infinity`, `"Infinity"`, `Infinity`, `"NaN"`, `NaN`).Replace(s)
	}
	return s
}

// PlusOptions tune a differential judgement. Zero fields take the defaults.
type PlusOptions struct {
	// Timeout bounds the whole run: the reference on every input, then the
	// candidate on each set (default 300s; a backstop, the limits below
	// decide).
	Timeout time.Duration
	// MinCaseTimeout is the least time the candidate gets per input
	// (default 4s, EvalPlus's DEFAULT_MIN_TIME_LIMIT); it gets TimeFactor
	// (default 4) times what the reference took when that is more.
	MinCaseTimeout time.Duration
	TimeFactor     float64
	// SetTimeout caps the candidate's time on one input set, loading
	// included (default 60s, EvalPlus's EVALPLUS_TIMEOUT_PER_TASK); the set
	// gets min(SetTimeout, sum of its per-input limits) + 1s.
	SetTimeout time.Duration
	// RefTimeout bounds the reference per input (default 60s; EvalPlus
	// sets none); an input on which the reference fails or times out is
	// skipped and counted in Skipped.
	RefTimeout time.Duration
	// MaxFailures stops the run after this many failing inputs (default 3).
	MaxFailures int
	// ValueChars caps each reported value (default 300).
	ValueChars int
	// Limits are the sandbox limits; their Timeout is replaced by Timeout.
	// MemoryBytes defaults to 8 GiB: EvalPlus's 4 GiB for the judge, which
	// holds the expected outputs of every input at once, and 4 GiB for the
	// input set's own process, as EvalPlus gives its untrusted_check
	// process. The sandbox's limit covers the run's processes together, and
	// a set's process that reads the expected outputs copies their pages
	// (reference counts): Mbpp/255's 1.3 GB are held twice.
	Limits executors.Limits
}

// plusMemory is the default memory limit of a plus run.
const plusMemory = 8 << 30

// Resolved returns o with its defaults filled in.
func (o PlusOptions) Resolved() PlusOptions { return o.withDefaults() }

func (o PlusOptions) withDefaults() PlusOptions {
	setDefault(&o.Timeout, 300*time.Second)
	setDefault(&o.MinCaseTimeout, 4*time.Second)
	setDefault(&o.SetTimeout, 60*time.Second)
	setDefault(&o.TimeFactor, 4)
	setDefault(&o.RefTimeout, 60*time.Second)
	setDefault(&o.MaxFailures, 3)
	setDefault(&o.ValueChars, 300)
	o.Limits.Timeout = o.Timeout
	o.Limits.CPUTime = cpuLimit(o.Limits.CPUTime, o.Timeout)
	setDefault(&o.Limits.MemoryBytes, plusMemory)
	if o.Limits.OutputBytes < minOutputBytes {
		o.Limits.OutputBytes = minOutputBytes
	}
	return o
}

// PlusFailure is one input on which the candidate disagreed with the
// reference (wrong_answer), raised (exception) or ran too long (timeout).
type PlusFailure struct {
	Index     int    `json:"index"` // position in PlusTests.Inputs
	Set       string `json:"set"`   // "base" or "plus"
	Kind      Kind   `json:"kind"`
	Input     string `json:"input"` // the call, e.g. "f([1, 2], 3)"
	Expected  string `json:"expected,omitempty"`
	Actual    string `json:"actual,omitempty"`
	Exception string `json:"exception,omitempty"`
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}

// PlusSet is the verdict on one input set (EvalPlus's "base" or "plus"),
// the counterpart of one EvalPlus untrusted_check status.
type PlusSet struct {
	Name    string `json:"set"`
	Inputs  int    `json:"inputs"`
	Total   int    `json:"total"`
	Passed  int    `json:"passed"`
	Skipped int    `json:"skipped"`
	// OK is EvalPlus's "pass": the code loaded and every input it was
	// tested on agreed.
	OK bool `json:"ok"`
}

// PlusVerdict is the judgement of one candidate on EvalPlus inputs.
type PlusVerdict struct {
	// Passed is true only when the run completed, the code loaded and it
	// agreed with the reference on every input of every set (the base set
	// first, when there is one; the plus set runs only after a base pass).
	Passed bool `json:"passed"`
	// Sets are the per-set verdicts, in the order run.
	Sets []PlusSet `json:"sets,omitempty"`
	// Inputs is how many inputs there are; Total how many were tested
	// (fewer when the run stopped at MaxFailures), PassedCount how many
	// agreed, Skipped how many the reference itself failed on.
	Inputs      int           `json:"inputs"`
	Total       int           `json:"total"`
	PassedCount int           `json:"passed_count"`
	Skipped     int           `json:"skipped"`
	Failures    []PlusFailure `json:"failures,omitempty"`
	Load        *LoadFailure  `json:"load,omitempty"`
	Complete    bool          `json:"complete"`
	// Stopped is true when the run ended early at MaxFailures.
	Stopped bool             `json:"stopped,omitempty"`
	Result  executors.Result `json:"result"`
	Limits  executors.Limits `json:"limits"`
	Program string           `json:"-"`
	code    string
}

// Set returns the verdict of the named set ("base" or "plus") and whether
// it ran.
func (v PlusVerdict) Set(name string) (PlusSet, bool) {
	for _, s := range v.Sets {
		if s.Name == name {
			return s, true
		}
	}
	return PlusSet{}, false
}

// SetPassed reports whether the named set ran and passed: EvalPlus's
// base_status (or plus_status) == "pass".
func (v PlusVerdict) SetPassed(name string) bool {
	s, ok := v.Set(name)
	return ok && s.OK && v.Load == nil
}

// Execution is the verdict as an execution record: the candidate's code,
// the sandbox result, and the first failure's exception and message.
func (v PlusVerdict) Execution() schema.Execution {
	passed := v.Passed
	e := schema.Execution{
		Language:  string(executors.Python),
		Code:      v.code,
		Driver:    v.Result.Driver,
		Image:     v.Result.Image,
		TimeoutMS: v.Limits.Timeout.Milliseconds(),
		MemoryB:   v.Limits.MemoryBytes,
		ExitCode:  v.Result.ExitCode,
		TimedOut:  v.Result.TimedOut,
		OOM:       v.Result.OOM,
		Stderr:    v.Result.Stderr,
		Passed:    &passed,
		Duration:  v.Result.Duration,
	}
	if e.Code == "" {
		e.Code = v.Program
	}
	switch {
	case v.Load != nil:
		e.Exception, e.ErrorLine = v.Load.Exception, v.Load.Message
		e.TimedOut = e.TimedOut || v.Load.Kind == KindTimeout
	case len(v.Failures) > 0:
		f := v.Failures[0]
		e.Exception, e.ErrorLine = f.Exception, f.Message
		if f.Kind == KindWrongAnswer {
			e.ErrorLine = firstLineOf(plusFailureText(f))
		}
		if f.Kind == KindTimeout {
			e.TimedOut = true
			if e.ErrorLine == "" {
				e.ErrorLine = "timed out"
			}
		}
	}
	return e
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// BuildPlus generates the differential judge program for code.
func BuildPlus(pt PlusTests, code string, opts PlusOptions) (Program, error) {
	opts = opts.withDefaults()
	if len(pt.Inputs) == 0 || pt.EntryPoint == "" || pt.Reference == "" {
		return Program{}, fmt.Errorf("harness: plus tests for %q need inputs, an entry point and a reference", pt.TaskID)
	}
	taskNum := 0
	if _, n, ok := strings.Cut(pt.TaskID, "/"); ok {
		taskNum, _ = strconv.Atoi(n)
	}
	payload := map[string]any{
		"value_cap":        opts.ValueChars,
		"entry_point":      pt.EntryPoint,
		"dataset":          pt.Dataset,
		"task_num":         taskNum,
		"max_failures":     opts.MaxFailures,
		"min_case_timeout": opts.MinCaseTimeout.Seconds(),
		"time_factor":      opts.TimeFactor,
		"set_timeout":      opts.SetTimeout.Seconds(),
		"ref_timeout":      opts.RefTimeout.Seconds(),
		"load_timeout":     min(opts.RefTimeout, opts.Timeout).Seconds(),
		"atol":             pt.Atol,
		"base_count":       pt.BaseCount,
		// A string, decoded by json.loads inside: JSON's true/null are not Python.
		"inputs":    pythonInputs(pt),
		"reference": pt.Reference,
		"code":      code,
	}
	marker, lit, err := markedLiteral("@@cfplus:", plusVersion, payload)
	if err != nil {
		return Program{}, fmt.Errorf("harness: encode plus payload: %w", err)
	}
	src := plusSource + "\n_cf_plus(" + lit + ")\n"
	return Program{Source: src, marker: marker, opts: Options{Timeout: opts.Timeout, Limits: opts.Limits},
		code: code, plusBase: pt.BaseCount > 0}, nil
}

// JudgePlus runs code against pt in ex. A failing candidate is a verdict,
// not an error; an error means the tests are unusable or the sandbox failed.
// Safe for concurrent use if ex is.
func JudgePlus(ctx context.Context, ex executors.Executor, pt PlusTests, code string, opts PlusOptions) (PlusVerdict, error) {
	pr, err := BuildPlus(pt, code, opts)
	if err != nil {
		return PlusVerdict{}, err
	}
	res, err := ex.Run(ctx, pr.Request())
	if err != nil {
		return PlusVerdict{}, fmt.Errorf("harness: plus run %q: %w", pt.TaskID, err)
	}
	return pr.DecodePlus(res), nil
}

type plusLoadRec struct {
	OK        int    `json:"ok"`
	Stage     string `json:"stage"`
	Kind      Kind   `json:"kind"`
	Exception string `json:"exception"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	Line      int    `json:"line"`
}

type plusFailRec struct {
	I         int    `json:"i"`
	Set       string `json:"set"`
	Kind      Kind   `json:"kind"`
	Input     string `json:"input"`
	Expected  string `json:"expected"`
	Actual    string `json:"actual"`
	Exception string `json:"exception"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

type plusSetRec struct {
	Set     string `json:"set"`
	Inputs  int    `json:"inputs"`
	Total   int    `json:"total"`
	Passed  int    `json:"passed"`
	Skipped int    `json:"skipped"`
	OK      bool   `json:"ok"`
}

type plusDoneRec struct {
	Total   int  `json:"total"`
	Passed  int  `json:"passed"`
	Skipped int  `json:"skipped"`
	Inputs  int  `json:"inputs"`
	Stopped bool `json:"stopped"`
}

// DecodePlus turns a BuildPlus program's result into a verdict. Only lines
// with this program's marker count; a run without its final record fails.
func (pr Program) DecodePlus(res executors.Result) PlusVerdict {
	v := PlusVerdict{Result: res, Program: pr.Source, Limits: pr.opts.Limits, code: pr.code}
	var load *plusLoadRec
	for kind, body := range pr.records(res.Stdout) {
		switch kind {
		case "load":
			keepFirst(&load, body)
		case "fail":
			if r, ok := decodeRec[plusFailRec](body); ok {
				v.Failures = append(v.Failures, PlusFailure{Index: r.I, Set: r.Set, Kind: r.Kind, Input: r.Input,
					Expected: r.Expected, Actual: r.Actual, Exception: r.Exception, Message: r.Message, Traceback: r.Traceback})
			}
		case "set":
			if r, ok := decodeRec[plusSetRec](body); ok {
				v.Sets = append(v.Sets, PlusSet{Name: r.Set, Inputs: r.Inputs, Total: r.Total, Passed: r.Passed, Skipped: r.Skipped, OK: r.OK})
			}
		case "done":
			if r, ok := decodeRec[plusDoneRec](body); ok && load != nil && load.OK == 1 {
				v.Complete = true
				v.Total, v.PassedCount, v.Skipped, v.Inputs, v.Stopped = r.Total, r.Passed, r.Skipped, r.Inputs, r.Stopped
			}
		}
	}
	switch {
	case load == nil:
		v.Load = &LoadFailure{Stage: "solution", Kind: KindException, Message: "the judge never reported loading the code"}
		if res.TimedOut {
			v.Load.Kind, v.Load.Message = KindTimeout, "timed out while loading"
		}
	case load.OK == 0:
		kind := load.Kind
		if kind == "" {
			kind = KindException
		}
		v.Load = &LoadFailure{Stage: load.Stage, Kind: kind, Exception: load.Exception, Message: load.Message, Traceback: load.Traceback, Line: load.Line}
	}
	if !v.Complete && v.Load == nil {
		// Cut short: the run as a whole timed out or died mid-way.
		msg := fmt.Sprintf("the program ended (exit status %d) before all inputs were tested", res.ExitCode)
		kind := KindException
		if res.TimedOut {
			kind, msg = KindTimeout, fmt.Sprintf("the run timed out after %s before all inputs were tested", fmtDur(pr.opts.Timeout))
		}
		v.Failures = append(v.Failures, PlusFailure{Index: -1, Kind: kind, Message: msg})
	}
	want := []string{"plus"}
	if pr.plusBase {
		want = []string{"base", "plus"}
	}
	v.Passed = v.Complete && v.Load == nil && len(v.Failures) == 0 && v.PassedCount == v.Total
	for _, name := range want {
		v.Passed = v.Passed && v.SetPassed(name)
	}
	return v
}

// PlusFeedback renders a plus verdict as execution feedback, in the same
// words Feedback uses for test cases.
func PlusFeedback(v PlusVerdict) string {
	var b strings.Builder
	switch {
	case v.Passed:
		fmt.Fprintf(&b, "All %d %s agree with the reference.\n", v.Total, setsNoun(v))
	case v.Load != nil:
		writeLoad(&b, v.Load, Options{}.withDefaults())
	default:
		if v.Complete {
			fmt.Fprintf(&b, "%d of %d %s tested failed", len(v.Failures), v.Total, setsNoun(v))
			if v.Stopped {
				b.WriteString(" (testing stopped at the first failures)")
			}
			b.WriteString(".\n")
		}
		for _, f := range v.Failures {
			b.WriteString("\n")
			b.WriteString(plusFailureText(f))
		}
	}
	return cut(b.String(), feedbackChars)
}

// setsNoun names the inputs of the sets that ran: "base and plus inputs".
func setsNoun(v PlusVerdict) string {
	var names []string
	for _, s := range v.Sets {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "extra inputs"
	}
	return strings.Join(names, " and ") + " inputs"
}

// plusFailureText is one failure's feedback. A wrong answer whose value
// prints exactly like the expected one says why they differ instead of
// "expected X, got X".
func plusFailureText(f PlusFailure) string {
	var b strings.Builder
	switch f.Kind {
	case KindWrongAnswer:
		switch {
		case f.Expected == f.Actual:
			fmt.Fprintf(&b, "Test failed for input %s: got %s, which %s\n", f.Input, f.Actual, plusNote(f.Message, "does not equal the expected value"))
		case f.Message != "":
			fmt.Fprintf(&b, "Test failed for input %s: expected %s, got %s (%s)\n", f.Input, f.Expected, f.Actual, f.Message)
		default:
			fmt.Fprintf(&b, "Test failed for input %s: expected %s, got %s\n", f.Input, f.Expected, f.Actual)
		}
	case KindTimeout:
		if f.Input != "" {
			fmt.Fprintf(&b, "Test timed out for input %s (%s)\n", f.Input, f.Message)
		} else {
			b.WriteString(f.Message + "\n")
		}
	default:
		if f.Input != "" {
			fmt.Fprintf(&b, "Test raised an exception for input %s:\n", f.Input)
		}
		switch {
		case f.Traceback != "":
			b.WriteString(strings.TrimRight(f.Traceback, "\n") + "\n")
		case f.Exception != "":
			fmt.Fprintf(&b, "%s: %s\n", f.Exception, f.Message)
		default:
			b.WriteString(f.Message + "\n")
		}
	}
	return b.String()
}

func plusNote(msg, fallback string) string {
	if msg == "" {
		return fallback
	}
	return msg
}
