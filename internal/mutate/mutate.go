// Package mutate plants bugs of a chosen kind into Python code: a small
// script run inside the sandbox (mutate.py, on Python's own syntax tree)
// applies named operators, each planting one kind of bug. The correct
// stage builds its dialogues on it; evaluation tests use it to make wrong
// answers.
package mutate

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// Kind is the class of a planted bug, named by how it must fail.
type Kind string

// The five bug kinds.
const (
	Syntax  Kind = "syntax"  // SyntaxError or IndentationError (TabError) at compile time
	Name    Kind = "name"    // NameError
	Type    Kind = "type"    // TypeError
	Logic   Kind = "logic"   // a test fails with a wrong answer, no exception
	Timeout Kind = "timeout" // the run hits its time limit
	// Runtime is any other exception, panic or crash while the tests run;
	// no operator plants it (a model may, outside Python, where it is the
	// error a compiled language has left).
	Runtime Kind = "runtime"
)

// Kinds lists the bug kinds in a fixed order.
func Kinds() []Kind { return []Kind{Syntax, Name, Type, Logic, Timeout} }

// ParseKind checks a kind name.
func ParseKind(s string) (Kind, error) {
	for _, k := range append(Kinds(), Runtime) {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("mutate: unknown bug kind %q (want one of %v)", s, append(Kinds(), Runtime))
}

// operators maps each operator of mutate.py to its kind. It must list the
// same operators as the script's OPERATORS table (a test checks this).
var operators = map[string]Kind{
	"syntax_drop_colon":      Syntax,
	"syntax_drop_bracket":    Syntax,
	"syntax_bad_indent":      Syntax,
	"name_misspell":          Name,
	"name_rename_param":      Name,
	"type_str_wrap":          Type,
	"type_num_to_str":        Type,
	"type_drop_conversion":   Type,
	"logic_compare_swap":     Logic,
	"logic_arith_swap":       Logic,
	"logic_off_by_one_range": Logic,
	"logic_off_by_one_index": Logic,
	"logic_drop_return":      Logic,
	"logic_bool_flip":        Logic,
	"timeout_drop_increment": Timeout,
	"timeout_reverse_step":   Timeout,
	"timeout_while_true":     Timeout,
}

// Operators returns the mutation operators of the given kinds (all kinds
// when none are given), sorted by name.
func Operators(kinds ...Kind) []string {
	want := map[Kind]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var ops []string
	for op, k := range operators {
		if len(kinds) == 0 || want[k] {
			ops = append(ops, op)
		}
	}
	sort.Strings(ops)
	return ops
}

//go:embed mutate.py
var script string

// Script returns the source of the in-sandbox mutation script; a stage
// caching mutants puts it in its cache version.
func Script() string { return script }

// Mutant is one planted bug: the whole mutated source and where and how it
// differs from the original.
type Mutant struct {
	Operator    string `json:"operator"`
	Kind        Kind   `json:"kind"`
	Code        string `json:"code"`
	Description string `json:"description"`
	Line        int    `json:"line"` // 1-based line of the change in Code
}

// Mutator plants bugs by running mutate.py in the sandbox. Safe for
// concurrent use when its Executor is.
type Mutator struct {
	Exec executors.Executor
	// PerOperator caps the mutants per operator (default 2); sites are
	// chosen by the seed.
	PerOperator int
}

// Mutate returns mutants of source for the given operators (all when ops is
// empty), in operator order. The same source, seed and operators give the
// same mutants. Syntax mutants are guaranteed not to compile and all others
// to compile; whether they fail the tests as intended is checked later. An
// error means the sandbox failed, the script failed, or source does not
// parse.
func (m *Mutator) Mutate(ctx context.Context, source string, seed int64, ops []string) ([]Mutant, error) {
	for _, op := range ops {
		if _, ok := operators[op]; !ok {
			return nil, fmt.Errorf("mutate: unknown mutation operator %q", op)
		}
	}
	in, err := json.Marshal(Request(source, seed, ops, m.PerOperator))
	if err != nil {
		return nil, fmt.Errorf("mutate: encode mutation request: %w", err)
	}
	res, err := m.Exec.Run(ctx, executors.Request{
		Language: executors.Python,
		Code:     script,
		Stdin:    string(in),
		Limits:   executors.Limits{Timeout: 30 * time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("mutate: run mutation script: %w", err)
	}
	if !res.OK() {
		return nil, fmt.Errorf("mutate: mutation script failed (exit %d, timed out %v): %s", res.ExitCode, res.TimedOut, tail(res.Stderr, 600))
	}
	return Decode([]byte(res.Stdout))
}

// Decode reads mutate.py's output and checks each mutant's kind.
func Decode(data []byte) ([]Mutant, error) {
	var out struct {
		Mutants []Mutant `json:"mutants"`
		Error   string   `json:"error"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("mutate: decode mutation output: %w (stdout %q)", err, tail(string(data), 200))
	}
	if out.Error != "" {
		return nil, fmt.Errorf("mutate: mutation: %s", out.Error)
	}
	for i, mu := range out.Mutants {
		if operators[mu.Operator] != mu.Kind {
			return nil, fmt.Errorf("mutate: mutant %d: operator %q has kind %q, want %q", i, mu.Operator, mu.Kind, operators[mu.Operator])
		}
	}
	return out.Mutants, nil
}

// Request is mutate.py's input: at most perOperator mutants (2 when 0)
// of source per operator, sites chosen by seed. A caller running the
// script itself (inside a larger batch) sends it and reads the answer
// with Decode.
func Request(source string, seed int64, ops []string, perOperator int) map[string]any {
	per := perOperator
	if per <= 0 {
		per = 2
	}
	return map[string]any{"source": source, "seed": seed, "operators": ops, "per_operator": per}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
