package evaluate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/schema"
)

// Benchmark names (those of the benchmarks registry).
const (
	HumanEval     = benchmarks.HumanEval
	MBPP          = benchmarks.MBPP
	HumanEvalPlus = benchmarks.HumanEvalPlus
	MBPPPlus      = benchmarks.MBPPPlus
)

// Names lists the benchmarks Load evaluates; their files come from the
// benchmarks registry.
var Names = []string{HumanEval, MBPP, HumanEvalPlus, MBPPPlus}

// Supported reports whether Load evaluates the benchmark called name.
func Supported(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// MBPPTestSplit is the official MBPP test split (task ids 11 to 510) that
// the mbpp benchmark evaluates.
var MBPPTestSplit = [2]int{11, 510}

// Task is one problem of a benchmark, ready to evaluate.
type Task struct {
	Benchmark string
	Problem   schema.Problem
	// EntryPoint is the function under test (for MBPP, found in the tests
	// and the reference solution).
	EntryPoint string
	// Plus holds EvalPlus's inputs, base_input then plus_input (plus
	// benchmarks only); they replace the problem's own tests.
	Plus *harness.PlusTests
}

// HumanEvalStyle reports whether answers complete a prompt holding the
// function's signature (HumanEval, HumanEval+).
func (t Task) HumanEvalStyle() bool {
	return t.Problem.Prompt != "" && !strings.HasPrefix(t.Problem.ID, "Mbpp/")
}

// Load reads a benchmark's tasks from its registry file under the benchmark
// directory dir (see benchmarks.Dir); a missing file's error says how to
// fetch it. The checksum is not required, so a hand-made benchmark
// directory (a subset, a fixed task) can be evaluated too. limit > 0 keeps
// the first limit tasks. A malformed record is an error; LoadSkipping
// skips it.
func Load(dir, name string, limit int) ([]Task, error) {
	ts, skipped, err := LoadSkipping(dir, name, limit)
	if err == nil && len(skipped) > 0 {
		err = fmt.Errorf("evaluate: %s: %s: %s", name, skipped[0].TaskID, skipped[0].Reason)
	}
	return ts, err
}

// LoadSkipping reads a benchmark's tasks like Load, but a record that
// cannot become a task is skipped and returned with its reason instead of
// failing the benchmark. (MbppPlus's Mbpp/793, whose `plus_input` is `{}`,
// is a task with no plus inputs, as EvalPlus reads it.)
func LoadSkipping(dir, name string, limit int) ([]Task, []Skipped, error) {
	spec, ok := benchmarks.Lookup(name)
	if !ok || !Supported(spec.Name) {
		return nil, nil, fmt.Errorf("evaluate: unknown benchmark %q (want %s)", name, strings.Join(Names, ", "))
	}
	name = spec.Name
	path := spec.Path(dir)
	if !benchmarks.Present(dir, spec) {
		return nil, nil, fmt.Errorf("evaluate: %w", benchmarks.Verify(path, spec))
	}
	ps, err := schema.LoadProblems(path)
	if err != nil {
		return nil, nil, fmt.Errorf("evaluate: load %s: %w", name, err)
	}
	var out []Task
	var skipped []Skipped
	for _, p := range ps {
		if name == MBPP {
			n, err := strconv.Atoi(strings.TrimPrefix(p.ID, "Mbpp/"))
			if err != nil || n < MBPPTestSplit[0] || n > MBPPTestSplit[1] {
				continue
			}
		}
		t := Task{Benchmark: name, Problem: p, EntryPoint: strings.TrimSpace(p.EntryPoint)}
		if t.EntryPoint == "" {
			t.EntryPoint = mbppEntryPoint(p)
		}
		if name == HumanEvalPlus || name == MBPPPlus {
			pt, err := harness.PlusTestsOf(p, true)
			if err != nil {
				skipped = append(skipped, Skipped{Benchmark: name, TaskID: p.ID, Reason: err.Error()})
				continue
			}
			t.Plus = &pt
		}
		out = append(out, t)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	if len(out) == 0 {
		return nil, skipped, fmt.Errorf("evaluate: %s: no problems in %s", name, path)
	}
	return out, skipped, nil
}

var reCall = regexp.MustCompile(`([A-Za-z_]\w*)\s*\(`)

// mbppEntryPoint is the function the tests call that the reference
// solution defines (MBPP records name none).
func mbppEntryPoint(p schema.Problem) string {
	for _, t := range p.Tests {
		for _, m := range reCall.FindAllStringSubmatch(t, -1) {
			if defines(p.Solution, m[1]) {
				return m[1]
			}
		}
	}
	return ""
}
