package harness

import (
	"context"
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

// Recorded recovers the judge program of a recorded execution (the Code
// and limits Verdict.Execution wrote), so that it can run again and its
// output be decoded. It reads only the payload's marker, timer and caps; a
// program built by an older judge keeps its own embedded judge. It fails
// with ErrNotJudgeProgram when e's code is not a judge program.
func Recorded(e schema.Execution) (Program, error) {
	if e.Language != "" && e.Language != string(executors.Python) {
		return Program{}, fmt.Errorf("%w: language %q", ErrNotJudgeProgram, e.Language)
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
