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
}

// PlusTestsOf reads EvalPlus's base_input, plus_input and atol from p.Extra
// (the EvalPlus adapter keeps them there). withBase puts base_input first;
// without it only plus_input is tested (base_input repeats the problem's
// Tests, which Judge already runs). It fails with ErrNoPlusInputs when p
// has none.
func PlusTestsOf(p schema.Problem, withBase bool) (PlusTests, error) {
	plusRaw, ok := p.Extra["plus_input"]
	if !ok {
		return PlusTests{}, fmt.Errorf("%w (problem %q)", ErrNoPlusInputs, p.ID)
	}
	var base, plus []json.RawMessage
	if err := json.Unmarshal(plusRaw, &plus); err != nil {
		return PlusTests{}, fmt.Errorf("harness: problem %q: plus_input: %w", p.ID, err)
	}
	if raw, ok := p.Extra["base_input"]; ok && withBase {
		if err := json.Unmarshal(raw, &base); err != nil {
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
		Reference: p.Program(), Inputs: all, BaseCount: len(base), Atol: atol}, nil
}

// PlusOptions tune a differential judgement. Zero fields take the defaults.
type PlusOptions struct {
	// Timeout bounds the whole run (default 60s).
	Timeout time.Duration
	// MinCaseTimeout is the least time the candidate gets per input
	// (default 1s); it gets TimeFactor (default 4) times what the reference
	// took when that is more, as EvalPlus does.
	MinCaseTimeout time.Duration
	TimeFactor     float64
	// RefTimeout bounds the reference per input (default 5s); an input on
	// which the reference fails or times out is skipped.
	RefTimeout time.Duration
	// MaxFailures stops the run after this many failing inputs (default 3).
	MaxFailures int
	// ValueChars caps each reported value (default 300).
	ValueChars int
	// Limits are the sandbox limits; their Timeout is replaced by Timeout.
	Limits executors.Limits
}

func (o PlusOptions) withDefaults() PlusOptions {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MinCaseTimeout <= 0 {
		o.MinCaseTimeout = time.Second
	}
	if o.TimeFactor <= 0 {
		o.TimeFactor = 4
	}
	if o.RefTimeout <= 0 {
		o.RefTimeout = 5 * time.Second
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 3
	}
	if o.ValueChars <= 0 {
		o.ValueChars = 300
	}
	o.Limits.Timeout = o.Timeout
	o.Limits.CPUTime = cpuLimit(o.Limits.CPUTime, o.Timeout)
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

// PlusVerdict is the judgement of one candidate on EvalPlus inputs.
type PlusVerdict struct {
	// Passed is true only when the run completed, the code loaded and it
	// agreed with the reference on every input the reference could answer.
	Passed bool `json:"passed"`
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
	Program string           `json:"-"`
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
		"ref_timeout":      opts.RefTimeout.Seconds(),
		"load_timeout":     min(opts.RefTimeout, opts.Timeout).Seconds(),
		"atol":             pt.Atol,
		"base_count":       pt.BaseCount,
		// A string, decoded by json.loads inside: JSON's true/null are not Python.
		"inputs":    string(pt.Inputs),
		"reference": pt.Reference,
		"code":      code,
	}
	marker, err := markerFor("@@cfplus:", plusVersion, payload)
	if err != nil {
		return Program{}, fmt.Errorf("harness: encode plus payload: %w", err)
	}
	payload["marker"] = marker
	lit, err := pyLiteral(payload)
	if err != nil {
		return Program{}, fmt.Errorf("harness: encode plus payload: %w", err)
	}
	src := plusSource + "\n_cf_plus(" + lit + ")\n"
	return Program{Source: src, marker: marker, opts: Options{Timeout: opts.Timeout, Limits: opts.Limits}}, nil
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
	v := PlusVerdict{Result: res, Program: pr.Source}
	var load *plusLoadRec
	for kind, body := range pr.records(res.Stdout) {
		switch kind {
		case "load":
			var r plusLoadRec
			if json.Unmarshal(body, &r) == nil && load == nil {
				load = &r
			}
		case "fail":
			var r plusFailRec
			if json.Unmarshal(body, &r) == nil {
				v.Failures = append(v.Failures, PlusFailure{Index: r.I, Set: r.Set, Kind: r.Kind, Input: r.Input,
					Expected: r.Expected, Actual: r.Actual, Exception: r.Exception, Message: r.Message, Traceback: r.Traceback})
			}
		case "done":
			var r plusDoneRec
			if json.Unmarshal(body, &r) == nil && load != nil && load.OK == 1 {
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
		v.Load = &LoadFailure{Stage: load.Stage, Kind: kind, Exception: load.Exception, Message: load.Message, Traceback: load.Traceback}
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
	v.Passed = v.Complete && v.Load == nil && len(v.Failures) == 0 && v.PassedCount == v.Total
	return v
}

// PlusFeedback renders a plus verdict as execution feedback, in the same
// words Feedback uses for test cases.
func PlusFeedback(v PlusVerdict) string {
	var b strings.Builder
	switch {
	case v.Passed:
		fmt.Fprintf(&b, "All %d extra inputs agree with the reference.\n", v.Total)
	case v.Load != nil:
		writeLoad(&b, v.Load, Options{}.withDefaults())
	default:
		if v.Complete {
			fmt.Fprintf(&b, "%d of %d extra inputs tested failed", len(v.Failures), v.Total)
			if v.Stopped {
				b.WriteString(" (testing stopped at the first failures)")
			}
			b.WriteString(".\n")
		}
		for _, f := range v.Failures {
			b.WriteString("\n")
			switch f.Kind {
			case KindWrongAnswer:
				fmt.Fprintf(&b, "Test failed for input %s: expected %s, got %s\n", f.Input, f.Expected, f.Actual)
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
		}
	}
	return cut(b.String(), feedbackChars)
}
