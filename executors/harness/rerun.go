package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

// ErrNotJudgeProgram means a recorded execution's code is not a program
// Build generated (a notebook cell, a plain script, an EvalPlus program).
var ErrNotJudgeProgram = errors.New("harness: not a judge program")

// callPrefix starts the last line of every program Build generates; the
// rest of the line is the payload literal and a closing parenthesis.
const callPrefix = "_cf_boot()("

// Recorded recovers the judge program of a recorded execution so that it
// can run again and its output be decoded: rebuilt from the judge reference
// of a lean record (see rebuild), or, for a record that stored the program
// as its code (before records referenced the judge), read from that
// program's payload (marker, timer, caps; it keeps its own embedded judge).
// It fails with ErrNotJudgeProgram when e is neither.
func Recorded(e schema.Execution) (Program, error) {
	if e.Language != "" && e.Language != string(executors.Python) {
		return Program{}, fmt.Errorf("%w: language %q", ErrNotJudgeProgram, e.Language)
	}
	if e.Judge != nil {
		return rebuild(e)
	}
	code := strings.TrimRight(e.Code, "\n")
	last := code[strings.LastIndexByte(code, '\n')+1:]
	lit, ok := strings.CutPrefix(last, callPrefix)
	if !ok || !strings.HasSuffix(lit, ")") {
		return Program{}, ErrNotJudgeProgram
	}
	var payload struct {
		Marker      string  `json:"marker"`
		CaseTimeout float64 `json:"case_timeout"`
		ValueCap    int     `json:"value_cap"`
		StdoutCap   int     `json:"stdout_cap"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSuffix(lit, ")")), &payload); err != nil {
		return Program{}, fmt.Errorf("%w: payload: %v", ErrNotJudgeProgram, err)
	}
	if !strings.HasPrefix(payload.Marker, "@@cfjudge:") {
		return Program{}, fmt.Errorf("%w: marker %q", ErrNotJudgeProgram, payload.Marker)
	}
	opts := Options{
		Timeout:     time.Duration(e.TimeoutMS) * time.Millisecond,
		CaseTimeout: time.Duration(payload.CaseTimeout * float64(time.Second)),
		Limits:      executors.Limits{MemoryBytes: e.MemoryB},
		ValueChars:  payload.ValueCap,
		StdoutBytes: payload.StdoutCap,
	}
	return Program{Source: e.Code, marker: payload.Marker, opts: opts.withDefaults()}, nil
}

// Rerun runs a recorded judge program again in ex, under the record's time
// and memory limits, and returns the fresh verdict; compare its Outcome or
// Execution with the record's. It fails with ErrNotJudgeProgram when e's
// code is not a judge program, or when the sandbox fails.
func Rerun(ctx context.Context, ex executors.Executor, e schema.Execution) (Verdict, error) {
	if e.Language != "" && e.Language != string(executors.Python) {
		return rerunLang(ctx, ex, e) // harness_lang.go
	}
	pr, err := Recorded(e)
	if err != nil {
		return Verdict{}, err
	}
	// The precompiled judge stands in for the embedded one only when the
	// program embeds this very judge.
	v, err := pr.run(ctx, ex, strings.HasPrefix(pr.Source, bootSource))
	if err != nil {
		return Verdict{}, fmt.Errorf("harness: re-run: %w", err)
	}
	return v, nil
}

// HarnessName names this judge in execution records.
const HarnessName = "codefeedback"

// ErrRebuild means a record names this judge's version but its tests and
// code do not rebuild the program it names (the record was edited).
var ErrRebuild = errors.New("harness: the record does not rebuild the program it names")

// programHash is the first 128 bits of the program's SHA-256, in hex: enough
// to tell a rebuilt program from another, at half the bytes in every record.
func programHash(src string) string {
	h := sha256.Sum256([]byte(src))
	return hex.EncodeToString(h[:16])
}

// judgeRef is the record's reference to the judge of v. Options at their
// defaults are left zero, and the exception and message e carries are not
// repeated (see schema.JudgeRef).
func (v Verdict) judgeRef(e *schema.Execution) *schema.JudgeRef {
	pr := v.prog
	o := pr.opts
	def := Options{Timeout: o.Timeout}.withDefaults()
	j := &schema.JudgeRef{
		Harness: HarnessName, Version: judgeVersion, SHA256: programHash(pr.Source),
		Tests: pr.problem.Tests, Setup: pr.problem.Setup, TestImport: pr.problem.TestImport,
		EntryPoint: strings.TrimSpace(pr.problem.EntryPoint), Prompt: pr.problem.Prompt,
		Total: v.Total, PassedCount: v.PassedCount, Incomplete: !v.Complete, RunTimedOut: v.Result.TimedOut, StdoutTotal: v.StdoutBytes,
	}
	if o.CaseTimeout != def.CaseTimeout {
		j.CaseTimeout = o.CaseTimeout.Seconds()
	}
	if o.ValueChars != def.ValueChars {
		j.ValueChars = o.ValueChars
	}
	if o.StdoutBytes != def.StdoutBytes {
		j.StdoutBytes = o.StdoutBytes
	}
	if o.FeedbackFailures != def.FeedbackFailures {
		j.Failures = o.FeedbackFailures
	}
	if l := v.Load; l != nil {
		// e.Exception and e.ErrorLine are the load failure's.
		j.Load = &schema.JudgeCase{Stage: l.Stage, Kind: string(l.Kind), Traceback: l.Traceback, Line: l.Line}
		return j
	}
	failedShown, notRunShown := 0, 0
	for _, c := range v.Cases {
		if c.Passed {
			continue
		}
		// Feedback lists failures and not-run tests apart, each up to
		// FeedbackFailures.
		if c.NotRun {
			j.NotRun++
			if notRunShown < o.FeedbackFailures {
				notRunShown++
				j.Shown = append(j.Shown, schema.JudgeCase{Test: c.Test, Kind: string(c.Kind), NotRun: true})
			}
			continue
		}
		if failedShown == o.FeedbackFailures {
			continue
		}
		jc := schema.JudgeCase{Test: c.Test, Kind: string(c.Kind), Exception: c.Exception, Message: c.Message,
			Traceback: c.Traceback, Line: c.Line, Input: c.Input, Expected: c.Expected, Actual: c.Actual, Op: c.Op}
		// Repeated only where the record's ErrorLine could not tell: an
		// empty message, or a timeout's, which Execution may have filled.
		if failedShown == 0 && c.Exception == e.Exception && c.Message == e.ErrorLine && c.Message != "" &&
			!(c.Kind == KindTimeout && c.Message == "timed out") {
			jc.Exception, jc.Message = "", "" // the record's own, see Execution
		}
		failedShown++
		j.Shown = append(j.Shown, jc)
	}
	return j
}

// recordedOptions are the judge options a lean record was built with.
func recordedOptions(e schema.Execution) Options {
	j := e.Judge
	return Options{
		Timeout:          time.Duration(e.TimeoutMS) * time.Millisecond,
		CaseTimeout:      time.Duration(j.CaseTimeout * float64(time.Second)),
		Limits:           executors.Limits{MemoryBytes: e.MemoryB},
		ValueChars:       j.ValueChars,
		StdoutBytes:      j.StdoutBytes,
		FeedbackFailures: j.Failures,
	}
}

// rebuild builds the program a lean record names. A record of this judge's
// version must rebuild its program byte for byte (ErrRebuild otherwise); a
// record of another version is rebuilt with this judge.
func rebuild(e schema.Execution) (Program, error) {
	j := e.Judge
	if j.Harness != HarnessName {
		return Program{}, fmt.Errorf("%w: harness %q", ErrNotJudgeProgram, j.Harness)
	}
	p := schema.Problem{Query: schema.Query{ID: "recorded"}, Tests: j.Tests, Setup: j.Setup, TestImport: j.TestImport, EntryPoint: j.EntryPoint, Prompt: j.Prompt}
	pr, err := Build(p, e.Code, recordedOptions(e))
	if err != nil {
		return Program{}, fmt.Errorf("harness: rebuild: %w", err)
	}
	if j.Version == judgeVersion && programHash(pr.Source) != j.SHA256 {
		return Program{}, ErrRebuild
	}
	return pr, nil
}

// RenderRecorded renders the text of the execution turn a lean judge record
// stands for (Feedback of its verdict, without the trailing newline, as
// stages write it), from the record alone. ok is false for a record without
// a judge reference.
func RenderRecorded(e schema.Execution) (text string, ok bool) {
	j := e.Judge
	if j == nil || e.Passed == nil {
		return "", false
	}
	v := Verdict{Passed: *e.Passed, Total: j.Total, PassedCount: j.PassedCount, Complete: !j.Incomplete,
		Stdout: e.Stdout, StdoutBytes: j.StdoutTotal}
	v.Result.TimedOut = j.RunTimedOut
	if l := j.Load; l != nil {
		v.Load = &LoadFailure{Stage: l.Stage, Kind: Kind(l.Kind), Exception: e.Exception, Message: e.ErrorLine, Traceback: l.Traceback, Line: l.Line}
	}
	failedShown, notRunShown := 0, 0
	for _, c := range j.Shown {
		if c.NotRun {
			notRunShown++
			v.Cases = append(v.Cases, CaseResult{Test: c.Test, Kind: Kind(c.Kind), NotRun: true})
			continue
		}
		if failedShown == 0 && c.Exception == "" && c.Message == "" && e.ErrorLine != "" &&
			!(Kind(c.Kind) == KindTimeout && e.ErrorLine == "timed out") {
			c.Exception, c.Message = e.Exception, e.ErrorLine
		}
		failedShown++
		v.Cases = append(v.Cases, CaseResult{Test: c.Test, Kind: Kind(c.Kind), Exception: c.Exception, Message: c.Message,
			Traceback: c.Traceback, Line: c.Line, Input: c.Input, Expected: c.Expected, Actual: c.Actual, Op: c.Op})
	}
	if failed := j.Total - j.PassedCount - j.NotRun; v.Load == nil && !v.Passed && failed > failedShown {
		v.Cases = append(v.Cases, CaseResult{Kind: KindException}) // stands for the failures not shown
	}
	for range j.NotRun - notRunShown {
		v.Cases = append(v.Cases, CaseResult{Kind: KindTimeout, NotRun: true}) // counted, not listed
	}
	return strings.TrimRight(Feedback(v, recordedOptions(e)), "\n"), true
}
