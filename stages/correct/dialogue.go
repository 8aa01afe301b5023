package correct

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

// Options configure the mutation path.
type Options struct {
	// Seed picks the mutation sites; the same seed gives the same dialogues.
	Seed int64
	// Kinds to plant (default: all five).
	Kinds []Kind
	// PerOperator caps the mutants tried per operator (default 2).
	PerOperator int
	// PerKind is how many dialogues to keep per kind and problem (default 1).
	PerKind int
}

// Attempt is one mutant and what its run showed.
type Attempt struct {
	Mutant
	Observed string `json:"observed"`
	Kept     bool   `json:"kept"`
}

// Outcome is what the mutation path made of one problem.
type Outcome struct {
	Dialogues []schema.Dialogue
	Attempts  []Attempt
	// Skipped says why no mutant was tried (the reference solution fails its
	// own tests, or does not parse); empty otherwise.
	Skipped string
}

// Generator runs the mutation path. Safe for concurrent use when its
// Executor is.
type Generator struct {
	Exec    executors.Executor
	Checker *Checker
	Opts    Options
}

// NewGenerator returns a generator on ex with default time limits.
func NewGenerator(ex executors.Executor, opts Options) *Generator {
	return &Generator{Exec: ex, Checker: &Checker{Exec: ex}, Opts: opts}
}

// Generate plants bugs into p's reference solution and returns one dialogue
// per kept mutant (up to PerKind per kind). A problem whose reference fails
// its own tests yields no dialogue and a Skipped reason. An error means the
// sandbox failed or ctx ended.
func (g *Generator) Generate(ctx context.Context, p *schema.Problem) (Outcome, error) {
	kinds := g.Opts.Kinds
	if len(kinds) == 0 {
		kinds = Kinds()
	}
	perKind := max(g.Opts.PerKind, 1)
	solution := normalizeNewlines(p.Solution)
	if strings.TrimSpace(solution) == "" || len(p.Tests) == 0 {
		return Outcome{Skipped: "problem has no reference solution or no tests"}, nil
	}
	fix, err := g.Checker.Check(ctx, p, solution, false)
	if err != nil {
		return Outcome{}, err
	}
	if !fix.Passed() {
		return Outcome{Skipped: "reference solution fails its tests: " + fix.Observed}, nil
	}
	mu := &Mutator{Exec: g.Exec, PerOperator: g.Opts.PerOperator}
	mutants, err := mu.Mutate(ctx, solution, g.Opts.Seed, Operators(kinds...))
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		return Outcome{Skipped: err.Error()}, nil
	}
	var out Outcome
	kept := map[Kind]int{}
	for _, m := range mutants {
		if kept[m.Kind] >= perKind {
			continue
		}
		run, err := g.Checker.Check(ctx, p, m.Code, m.Kind == Timeout)
		if err != nil {
			return Outcome{}, err
		}
		a := Attempt{Mutant: m, Observed: run.Observed, Kept: KindOf(run.Observed) == m.Kind}
		out.Attempts = append(out.Attempts, a)
		if !a.Kept {
			continue
		}
		kept[m.Kind]++
		d := BuildDialogue(p, solution, m, run, fix, g.Exec.Info())
		out.Dialogues = append(out.Dialogues, d)
	}
	return out, nil
}

// UserPrompt is the first user turn: the problem with its tests as examples,
// the way MBPP prompts a model.
func UserPrompt(p *schema.Problem) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(normalizeNewlines(p.Text)))
	if len(p.Tests) > 0 {
		b.WriteString("\nYour code should pass these tests:\n\n```python\n")
		b.WriteString(TestSource(p))
		b.WriteString("```")
	}
	return b.String()
}

// TestSource is the problem's tests as shown to the user: the test imports,
// then one test per line.
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

var defRe = regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*)`)

// funcName is the entry point, or the last top-level def of the code (MBPP
// helpers come first), or "".
func funcName(p *schema.Problem, code string) string {
	if p.EntryPoint != "" {
		return p.EntryPoint
	}
	m := defRe.FindAllStringSubmatch(code, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// pick chooses one of the variants by a hash of key, so phrasing varies
// across dialogues but not across runs.
func pick(key string, variants ...string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return variants[int(h.Sum32()%uint32(len(variants)))]
}

func codeBlock(code string) string {
	return "```python\n" + strings.TrimRight(code, "\n") + "\n```"
}

// BuildDialogue writes the mutation-path dialogue for a kept mutant: the
// problem, the buggy answer, its real failing run, the analysis with the
// original solution as the fix, and the fix's real passing run.
func BuildDialogue(p *schema.Problem, solution string, m Mutant, bug, fix Run, info executors.Info) schema.Dialogue {
	id := schema.StableID("dlg-correct", "mutation", p.ID, m.Operator, m.Code)
	fn := funcName(p, solution)
	intro := "Here is my solution:"
	if fn != "" {
		intro = pick(id,
			fmt.Sprintf("Here is a function `%s` that solves the task:", fn),
			fmt.Sprintf("The function `%s` below should do this:", fn),
			fmt.Sprintf("I'll write `%s` and check it against the tests:", fn))
	}
	msgs := []schema.Message{
		{Role: schema.RoleUser, Content: UserPrompt(p)},
		{Role: schema.RoleAssistant, Content: intro + "\n\n" + codeBlock(m.Code)},
		{Role: schema.RoleExecution, Content: bug.Output(), Exec: bug.Execution(info)},
		{Role: schema.RoleAssistant, Content: Analysis(bug, m.Code) + " " + fixHint(m.Code, solution) + "Here is the corrected code:\n\n" + codeBlock(solution)},
		{Role: schema.RoleExecution, Content: fix.Output(), Exec: fix.Execution(info)},
		{Role: schema.RoleAssistant, Content: passesAll(fix)},
	}
	return schema.Dialogue{
		ID:       id,
		Messages: msgs,
		Stage:    "correct",
		Method:   "mutation",
		Sources:  []string{p.ID},
		Labels: map[string]string{
			"mutation_op":  m.Operator,
			"bug_kind":     string(m.Kind),
			"observed":     bug.Observed,
			"mutation":     m.Description,
			"mutant_line":  fmt.Sprint(m.Line),
			"final_status": ObservedPass,
		},
	}
}

// passesAll is the closing turn after the fix's passing run.
func passesAll(fix Run) string {
	return fmt.Sprintf("The corrected code now passes all %d tests.", fix.Verdict.Total)
}

// errorMessage is the first failure's exception line as Python prints it
// ("NameError: name 'x' is not defined"), or its message.
func errorMessage(r Run) string {
	f, _ := firstFailure(r.Verdict)
	switch {
	case f.Exception != "" && f.Message != "":
		return f.Exception + ": " + f.Message
	case f.Exception != "":
		return f.Exception
	}
	return cmp.Or(f.Message, r.Observed)
}

// Analysis is the assistant's reading of a failing run: it names the error
// and the line the traceback points at, and states only what the output
// shows.
func Analysis(bug Run, buggy string) string {
	var b strings.Builder
	lines := strings.Split(buggy, "\n")
	at := func(n int) string {
		if n >= 1 && n <= len(lines) {
			return fmt.Sprintf("line %d (`%s`)", n, strings.TrimSpace(lines[n-1]))
		}
		return fmt.Sprintf("line %d", n)
	}
	switch KindOf(bug.Observed) {
	case Syntax:
		fmt.Fprintf(&b, "The code does not compile: Python reports `%s`", errorMessage(bug))
		if bug.Line > 0 {
			fmt.Fprintf(&b, " at %s", at(bug.Line))
		}
		b.WriteString(".")
	case Name, Type:
		fmt.Fprintf(&b, "The run failed with `%s`", errorMessage(bug))
		if bug.Line > 0 {
			fmt.Fprintf(&b, ", raised at %s", at(bug.Line))
		}
		if bug.FailedTest != "" {
			fmt.Fprintf(&b, " while running the test `%s`", bug.FailedTest)
		}
		b.WriteString(".")
		if bug.Observed == "NameError" {
			b.WriteString(" The code uses a name that is never defined.")
		} else {
			b.WriteString(" An operation got a value of the wrong type.")
		}
	case Logic:
		b.WriteString("The code runs without an exception, but it returns a wrong result")
		if bug.FailedTest != "" {
			fmt.Fprintf(&b, ": the test `%s` fails", bug.FailedTest)
		}
		b.WriteString(".")
	case Timeout:
		fmt.Fprintf(&b, "The run did not finish in time (%s): on at least one test the code keeps running, most likely in a loop that never reaches its exit condition.", errorMessage(bug))
	default:
		fmt.Fprintf(&b, "The run failed (%s).", bug.Observed)
	}
	return b.String()
}

// fixHint points at the first line the fix changes, known from the diff of
// a mutant against its original; "" when the texts are equal.
func fixHint(buggy, fixed string) string {
	n, want := firstDiff(buggy, fixed)
	if n == 0 {
		return ""
	}
	lines := strings.Split(buggy, "\n")
	if n <= len(lines) && strings.TrimSpace(lines[n-1]) == strings.TrimSpace(want) {
		return fmt.Sprintf("The mistake is the indentation of line %d. ", n)
	}
	return fmt.Sprintf("The mistake is on line %d, which should read `%s`. ", n, strings.TrimSpace(want))
}

// firstDiff returns the first line number where a and b differ and b's text
// there, or 0 when they are equal.
func firstDiff(a, b string) (int, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return i + 1, y
		}
	}
	return 0, ""
}
