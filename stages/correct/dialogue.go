package correct

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/schema"
)

// mutationOptions configure the mutation path.
type mutationOptions struct {
	// Seed picks the mutation sites; the same seed gives the same dialogues.
	Seed int64
	// Kinds to plant (default: all five).
	Kinds []mutate.Kind
	// PerOperator caps the mutants tried per operator (default 2).
	PerOperator int
	// PerKind is how many dialogues to keep per kind and problem (default 1).
	PerKind int
}

// attempt is one mutant and what its run showed.
type attempt struct {
	mutate.Mutant
	Observed string `json:"observed"`
	Kept     bool   `json:"kept"`
}

// outcome is what the mutation path made of one problem.
type outcome struct {
	Dialogues []schema.Dialogue
	Attempts  []attempt
	// Skipped says why no mutant was tried (the reference solution fails its
	// own tests, or does not parse); empty otherwise.
	Skipped string
}

// mutationGenerator runs the mutation path. Safe for concurrent use when its
// Executor is.
type mutationGenerator struct {
	Exec    executors.Executor
	Checker *checker
	Opts    mutationOptions
	// NoBatch judges every candidate in a run of its own (the path before
	// prejudge; benchmarks compare the two).
	NoBatch bool
}

// newGenerator returns a generator on ex with default time limits.
func newGenerator(ex executors.Executor, opts mutationOptions) *mutationGenerator {
	return &mutationGenerator{Exec: ex, Checker: &checker{Exec: ex, LoopFactor: defaultLoopFactor}, Opts: opts}
}

// Generate plants bugs into p's reference solution and returns one dialogue
// per kept mutant (up to PerKind per kind). A problem whose reference fails
// its own tests yields no dialogue and a Skipped reason. An error means the
// sandbox failed or ctx ended.
func (g *mutationGenerator) Generate(ctx context.Context, p *schema.Problem) (outcome, error) {
	kinds := g.Opts.Kinds
	if len(kinds) == 0 {
		kinds = mutate.Kinds()
	}
	perKind := max(g.Opts.PerKind, 1)
	if lang, err := languageOf(p); err != nil || lang != executors.Python {
		return outcome{Skipped: "the mutation path plants bugs in Python only (method model works in every judged language)"}, nil
	}
	solution := normalizeNewlines(p.Solution)
	if strings.TrimSpace(solution) == "" || len(p.Tests) == 0 {
		return outcome{Skipped: "problem has no reference solution or no tests"}, nil
	}
	// The mutants are planted first so that the reference and every
	// mutant not meant to hang can be judged in the same sandbox run
	// (plant); what that run cannot vouch for is judged on its own below.
	mutants, pre, merr, err := g.plant(ctx, p, solution, kinds, perKind)
	if err != nil {
		return outcome{}, err
	}
	fix, ok := pre[solution]
	if !ok || fix.Observed == observedTimeout {
		if fix, err = g.checkReference(ctx, p, solution); err != nil {
			return outcome{}, err
		}
	}
	if fix.Observed == observedTimeout {
		// Out of time at every limit tried: most likely the machine's
		// load, not the reference. Not a skip to remember: the item is
		// retried later.
		return outcome{}, fmt.Errorf("%w: %s", errReferenceTimeout, p.ID)
	}
	if !fix.Passed() {
		return outcome{Skipped: "reference solution fails its tests: " + fix.Observed}, nil
	}
	if merr != nil {
		return outcome{Skipped: merr.Error()}, nil
	}
	loopLimit := g.Checker.LoopLimit(fix)
	var out outcome
	kept := map[mutate.Kind]int{}
	for _, m := range mutants {
		if kept[m.Kind] >= perKind {
			continue
		}
		run, ok := pre[m.Code]
		if !ok || m.Kind == mutate.Timeout {
			if run, err = g.check(ctx, p, m.Code, m.Kind == mutate.Timeout, loopLimit); err != nil {
				return outcome{}, err
			}
		}
		if m.Kind == mutate.Timeout && run.Observed == observedTimeout {
			// A timeout label must hold on a longer re-check with CPU
			// time; one that does not takes the re-check's outcome.
			proof, proven, err := g.Checker.ProveTimeout(ctx, p, m.Code, loopLimit)
			if err != nil {
				return outcome{}, err
			}
			if !proven {
				run = proof
			}
		}
		a := attempt{Mutant: m, Observed: run.Observed, Kept: kindOf(run.Observed) == m.Kind}
		out.Attempts = append(out.Attempts, a)
		if !a.Kept {
			continue
		}
		kept[m.Kind]++
		d := buildDialogue(p, solution, m, run, fix, g.Exec.Info())
		out.Dialogues = append(out.Dialogues, d)
	}
	return out, nil
}

// plantSource is the prelude of a planting batch: mutate.py, then plant.py.
var plantSource = func() string {
	lit, err := json.Marshal(mutate.Script()) // a JSON string is a Python literal
	if err != nil {
		panic(err)
	}
	return "_CF_MUTATE = " + string(lit) + "\n" + plantPy
}()

//go:embed plant.py
var plantPy string

// plant plants the mutants of solution (ranked in the order Generate tries
// them) and judges, in the same sandbox run, the reference and the mutants
// not meant to hang, with Generate's stop rule (perKind kept per kind):
// harness.JudgeBatchFrom with plant.py. It returns the runs that batch can
// vouch for by code, each the run Check would give. Runs meant to hang are
// left out: their limit is the loop limit, which a batch cannot set for
// one candidate. merr is why no mutant could be planted (a Skipped
// reason); err a sandbox failure. When the batch cannot plant, or with
// NoBatch, the mutants come from mutate.Mutator.Mutate and every run is Check's.
func (g *mutationGenerator) plant(ctx context.Context, p *schema.Problem, solution string, kinds []mutate.Kind, perKind int) (mutants []mutate.Mutant, pre map[string]judgedRun, merr, err error) {
	mu := &mutate.Mutator{Exec: g.Exec, PerOperator: g.Opts.PerOperator}
	ops := mutate.Operators(kinds...)
	if !g.NoBatch {
		accept := map[string][]string{}
		for _, k := range kinds {
			accept[string(k)] = observedOf(k)
		}
		arg := map[string]any{"request": mutate.Request(solution, g.Opts.Seed, ops, g.Opts.PerOperator), "seed": g.Opts.Seed, "problem": p.ID,
			"solution": solution, "accept": accept}
		at := time.Now().UTC()
		b, berr := harness.JudgeBatchFrom(ctx, g.Checker.Exec, *p, options(g.Checker.limit(false)), plantSource, arg,
			harness.BatchOptions{Quota: perKind})
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		if berr == nil {
			pre = map[string]judgedRun{}
			for i, it := range b.Items {
				if b.Usable[i] {
					pre[it.Code] = newRun(b.Verdicts[i], at)
				}
			}
			mutants, merr = mutate.Decode(b.Data)
			g.rank(p, mutants)
			return mutants, pre, merr, nil
		}
	}
	mutants, merr = mu.Mutate(ctx, solution, g.Opts.Seed, ops)
	if merr != nil && ctx.Err() != nil {
		return nil, nil, nil, ctx.Err()
	}
	g.rank(p, mutants)
	return mutants, nil, merr, nil
}

// rank sorts mutants in the order Generate tries them: an order of
// operators drawn per problem, so each kind's first working operator (the
// one kept) varies across problems instead of always being the
// alphabetically first. plant.py draws the same.
func (g *mutationGenerator) rank(p *schema.Problem, mutants []mutate.Mutant) {
	rank := func(op string) uint32 {
		h := fnv.New32a()
		fmt.Fprintf(h, "%d\x00%s\x00%s", g.Opts.Seed, p.ID, op)
		return h.Sum32()
	}
	sort.SliceStable(mutants, func(i, j int) bool { return rank(mutants[i].Operator) < rank(mutants[j].Operator) })
}

// errReferenceTimeout means a problem's reference solution ran out of time
// at every limit tried: a transient condition (load), retried by a later run.
var errReferenceTimeout = errors.New("correct: the reference solution timed out at every limit tried")

// referenceTries is how many times a reference that runs out of time is
// run, each time with twice the last time limit: at load 25-30 the
// reference of Mbpp/123 (5 s on a quiet machine) missed 10 s twice, and
// a problem whose reference is lost yields nothing.
const referenceTries = 3

// checkReference judges the reference solution, running it again with
// twice the time limit (up to referenceTries runs) while it times out.
func (g *mutationGenerator) checkReference(ctx context.Context, p *schema.Problem, code string) (judgedRun, error) {
	t := g.Checker.limit(false)
	var run judgedRun
	var err error
	for i := 0; i < referenceTries; i++ {
		if run, err = g.Checker.CheckWithin(ctx, p, code, t); err != nil || run.Observed != observedTimeout {
			return run, err
		}
		t *= 2
	}
	return run, nil
}

// check judges code, running it once more when a run expected to finish
// timed out: under load a sandbox run can miss its deadline, and a timeout
// is never the bug it was meant to show.
func (g *mutationGenerator) check(ctx context.Context, p *schema.Problem, code string, loop bool, loopLimit time.Duration) (judgedRun, error) {
	t := g.Checker.limit(false)
	if loop {
		t = loopLimit
	}
	run, err := g.Checker.CheckWithin(ctx, p, code, t)
	if err == nil && !loop && run.Observed == observedTimeout {
		run, err = g.Checker.CheckWithin(ctx, p, code, t)
	}
	return run, err
}

// userPrompt is the first user turn: the problem with its tests as examples,
// the way MBPP prompts a model.
func userPrompt(p *schema.Problem) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(normalizeNewlines(p.Text)))
	if len(p.Tests) > 0 {
		tag := "python"
		if l, err := languageOf(p); err == nil {
			tag = string(l)
		}
		b.WriteString("\nYour code should pass these tests:\n\n```" + tag + "\n")
		b.WriteString(testSource(p))
		b.WriteString("```")
	}
	return b.String()
}

// testSource is the problem's tests as shown to the user: the test imports,
// then one test per line.
func testSource(p *schema.Problem) string {
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

// langDefRe finds top-level function definitions outside Python.
var langDefRe = map[executors.Language]*regexp.Regexp{
	executors.JavaScript: regexp.MustCompile(`(?m)^(?:export\s+)?function\s+([A-Za-z_$][\w$]*)`),
	executors.TypeScript: regexp.MustCompile(`(?m)^(?:export\s+)?function\s+([A-Za-z_$][\w$]*)`),
	executors.PHP:        regexp.MustCompile(`(?m)^function\s+([A-Za-z_]\w*)`),
	executors.Lua:        regexp.MustCompile(`(?m)^(?:local\s+)?function\s+([A-Za-z_][\w.]*)`),
	executors.Ruby:       regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*[?!]?)`),
	executors.Go:         regexp.MustCompile(`(?m)^func\s+([A-Za-z_]\w*)`),
	executors.Rust:       regexp.MustCompile(`(?m)^(?:pub\s+)?fn\s+([A-Za-z_]\w*)`),
	executors.C:          regexp.MustCompile(`(?m)^[A-Za-z_][\w \t*]*?[\s*]([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{`),
	executors.CPP:        regexp.MustCompile(`(?m)^[A-Za-z_][\w \t*&:<>,]*?[\s*&>]([A-Za-z_]\w*)\s*\([^;{]*\)\s*(?:const\s*)?\{`),
	executors.Java:       regexp.MustCompile(`(?m)^\s+(?:public\s+|private\s+)?static\s+[\w<>\[\], ]+?\s([A-Za-z_]\w*)\s*\(`),
}

// funcName is the entry point, or the last top-level def of the code (MBPP
// helpers come first), or "".
func funcName(p *schema.Problem, code string) string {
	if p.EntryPoint != "" {
		return p.EntryPoint
	}
	re := defRe
	if l, err := languageOf(p); err == nil && l != executors.Python {
		re = langDefRe[l]
	}
	if re == nil {
		return ""
	}
	m := re.FindAllStringSubmatch(code, -1)
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

// buildDialogue writes the mutation-path dialogue for a kept mutant: the
// problem, the buggy answer, its real failing run, the analysis with the
// original solution as the fix, and the fix's real passing run. Every
// model-free sentence slot has many phrasings, picked by a hash of the
// dialogue id and the slot, so a corpus does not repeat one template.
func buildDialogue(p *schema.Problem, solution string, m mutate.Mutant, bug, fix judgedRun, info executors.Info) schema.Dialogue {
	id := schema.StableID("dlg-correct", "mutation", p.ID, m.Operator, m.Code)
	fn := funcName(p, solution)
	msgs := []schema.Message{
		{Role: schema.RoleUser, Content: userPrompt(p)},
		{Role: schema.RoleAssistant, Content: intro(id, fn, m.Code, solution) + "\n\n" + codeBlock(m.Code)},
		{Role: schema.RoleExecution, Content: bug.Output(), Exec: bug.Execution(info)},
		{Role: schema.RoleAssistant, Content: analysis(bug, m.Code) + " " + fixHint(m.Code, solution) + fixLead(id, fn) + "\n\n" + codeBlock(solution)},
		{Role: schema.RoleExecution, Content: fix.Output(), Exec: fix.Execution(info)},
		{Role: schema.RoleAssistant, Content: recap(id, bug, m.Code, solution) + passesAll(id, fn, fix)},
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
			"final_status": observedPass,
		},
	}
}

// intro opens the first answer; it never reads like a reply to feedback.
// code is the answer's code: one phrasing names the function's arguments
// as it declares them, unless the planted bug renamed one (the fix,
// fixed, declares others): the intro would present the bug as the plan.
func intro(id, fn, code, fixed string) string {
	if fn == "" {
		return pick(id+"\x00intro",
			"Here is my solution:",
			"This should solve it:",
			"A first version:",
			"My approach, as code:",
			"Here is a solution to try:")
	}
	f := "`" + fn + "`"
	return pick(id+"\x00intro",
		"Here is a function "+f+" that solves the task:",
		"The function "+f+" below should do this:",
		"I'll write "+f+" and check it against the tests:",
		takesUnlessPlanted(fn, code, fixed),
		"Let me define "+f+" for this:",
		"A straightforward way to write "+f+":",
		"One way to implement "+f+":",
		"Here is "+f+"; it should handle the examples in the tests:",
		"I would solve this with a function "+f+":",
		"The task asks for "+f+"; here is an implementation:",
		"Below, "+f+" computes what the task describes:",
		"This version of "+f+" should pass the tests:")
}

// takes says which arguments fn declares in code ("`f` takes `a` and
// `b`; a first implementation:"), or that the tests will judge it when
// code declares none that can be read.
func takes(fn, code string) string {
	f := "`" + fn + "`"
	m := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\s*\(([^)]*)\)`).FindStringSubmatch(code)
	var args []string
	if m != nil {
		for _, a := range strings.Split(m[1], ",") {
			// a name, without its type, default or JavaScript/Python decoration
			if n := regexp.MustCompile(`^\s*\*{0,2}([A-Za-z_$][\w$]*)`).FindStringSubmatch(a); n != nil && n[1] != "self" {
				args = append(args, "`"+n[1]+"`")
			}
		}
	}
	switch len(args) {
	case 0:
		return "I'll write " + f + " and let the tests below judge it:"
	case 1:
		return f + " takes " + args[0] + "; a first implementation:"
	}
	return f + " takes " + strings.Join(args[:len(args)-1], ", ") + " and " + args[len(args)-1] + "; a first implementation:"
}

// takesUnlessPlanted is takes, or another phrasing when code and fixed
// declare different arguments.
func takesUnlessPlanted(fn, code, fixed string) string {
	if t := takes(fn, code); t == takes(fn, fixed) {
		return t
	}
	return "I'll write `" + fn + "` and let the tests below judge it:"
}

// fixLead introduces the corrected code after the analysis.
func fixLead(id, fn string) string {
	f := "the function"
	if fn != "" {
		f = "`" + fn + "`"
	}
	return pick(id+"\x00fix",
		"Here is the corrected code:",
		"With that fixed, "+f+" reads:",
		"The corrected version of "+f+":",
		"After the fix:",
		"This is "+f+" with the mistake removed:",
		"Fixing that gives:",
		"Here is "+f+" again, corrected:",
		"The fixed code:",
		"So "+f+" becomes:",
		"Corrected, the code is:")
}

// passesAll is the closing turn after the fix's passing run.
func passesAll(id, fn string, fix judgedRun) string {
	n := fix.Verdict.Total
	f, F := "the corrected code", "The corrected code"
	if fn != "" {
		f = "`" + fn + "`"
		F = f
	}
	if n == 1 {
		return pick(id+"\x00close", "The test passes now.", F+" now passes its test.", "With the fix, the test passes.")
	}
	return pick(id+"\x00close",
		fmt.Sprintf("%s now passes all %d tests.", F, n),
		fmt.Sprintf("All %d tests pass with the fix.", n),
		fmt.Sprintf("The run confirms it: %d of %d tests pass.", n, n),
		fmt.Sprintf("Now every one of the %d tests passes.", n),
		fmt.Sprintf("With this change %s passes the %d tests.", f, n),
		fmt.Sprintf("No failures this time: all %d tests pass.", n),
		fmt.Sprintf("After the fix %s passes each of the %d tests.", f, n),
		fmt.Sprintf("That resolves it; the %d tests all pass.", n))
}

// recap ties the closing turn to the failure it ends: what went wrong
// and the one line whose fix cured it, as the diff of the mutant and the
// passing run show ("The `NameError` came from line 6 alone. "). Without
// it every dialogue closed on the same one-line verdict; "" when the
// texts are equal or the failure has no kind to name.
func recap(id string, bug judgedRun, buggy, fixed string) string {
	n, _ := firstDiff(buggy, fixed)
	if n == 0 || !oneLineApart(buggy, fixed) {
		// "line N alone" is only true of a mutant one line from the fix.
		return ""
	}
	exc := func(generic string) string {
		name, _, _ := strings.Cut(errorMessage(bug), ":")
		if name = strings.TrimSpace(name); name != "" && !strings.ContainsAny(name, " \n`") {
			return "`" + name + "`"
		}
		return generic
	}
	var what string
	switch bug.Kind() {
	case mutate.Syntax:
		what = "syntax error"
	case mutate.Name:
		what = "undefined name"
	case mutate.Type:
		what = exc("type error")
	case mutate.Runtime:
		what = exc("run-time error")
	case mutate.Timeout:
		what = "endless loop"
	case mutate.Logic:
		what = "wrong result"
		if f, ok := firstFailure(bug.Verdict); ok && f.Actual == "None" && f.Expected != "None" {
			what = "`None` result"
		}
	default:
		return ""
	}
	return fmt.Sprintf(pick(id+"\x00recap",
		"The %[1]s came from line %[2]d alone. ",
		"Line %[2]d was the whole cause of the %[1]s. ",
		"Fixing line %[2]d alone took care of the %[1]s. ",
		"So the %[1]s had a single cause, line %[2]d. ",
		"Only line %[2]d was behind the %[1]s. "), what, n)
}

// errorMessage is the first failure's exception line as Python prints it
// ("NameError: name 'x' is not defined"), or its message.
func errorMessage(r judgedRun) string {
	f, _ := firstFailure(r.Verdict)
	switch {
	case f.Exception != "" && f.Message != "":
		return f.Exception + ": " + f.Message
	case f.Exception != "":
		return f.Exception
	}
	return cmp.Or(f.Message, r.Observed)
}

// analysis is the assistant's reading of a failing run: it names the error
// and the line the traceback points at, and states only what the output
// shows.
func analysis(bug judgedRun, buggy string) string {
	var b strings.Builder
	lines := strings.Split(buggy, "\n")
	at := func(n int) string {
		if n >= 1 && n <= len(lines) {
			return fmt.Sprintf("line %d (`%s`)", n, strings.TrimSpace(lines[n-1]))
		}
		return fmt.Sprintf("line %d", n)
	}
	// The lead of each sentence varies with the code, so the analysis of
	// one kind does not open the same way across a corpus.
	v := func(slot string, variants ...string) string { return pick(buggy+"\x00"+slot, variants...) }
	switch bug.Kind() {
	case mutate.Syntax:
		switch {
		case bug.Lang == "" || bug.Lang == executors.Python:
			fmt.Fprintf(&b, v("syntax", "The code does not compile: Python reports `%s`", "Python rejects the code before running it with `%s`",
				"The run stops at compile time: `%s`", "This is a syntax problem, `%s`"), errorMessage(bug))
		case checkedFirst[bug.Lang]:
			// The compiler's own line says it all; "CompileError" is only
			// the harness's name for it.
			msg := errorMessage(bug)
			if l := bug.Verdict.Load; l != nil && l.Message != "" {
				msg = l.Message
			}
			fmt.Fprintf(&b, v("syntax", "The code does not compile: the %s compiler reports `%s`", "The %s compiler rejects the code before any test runs: `%s`",
				"The build fails, so no test runs (%s): `%s`", "This is a compile error in the %s code: `%s`"), langName(bug.Lang), msg)
		default:
			fmt.Fprintf(&b, v("syntax", "The code does not parse: %s reports `%s`", "%s rejects the code before running it with `%s`",
				"The run stops before any test (%s cannot parse it): `%s`", "This is a syntax problem in the %s code, `%s`"), langName(bug.Lang), errorMessage(bug))
		}
		if bug.Line > 0 {
			fmt.Fprintf(&b, " at %s", at(bug.Line))
		}
		b.WriteString(".")
	case mutate.Name, mutate.Type:
		fmt.Fprintf(&b, v("raise", "The run failed with `%s`", "The tests hit `%s`", "Running the tests raised `%s`", "Execution stops with `%s`"), errorMessage(bug))
		if bug.Line > 0 {
			fmt.Fprintf(&b, ", raised at %s", at(bug.Line))
		}
		if bug.FailedTest != "" {
			fmt.Fprintf(&b, " while running the test `%s`", bug.FailedTest)
		}
		b.WriteString(".")
		if bug.Kind() == mutate.Name {
			b.WriteString(v("name", " The code uses a name that is never defined.", " That name is not defined anywhere in the code.",
				" Nothing in the code binds that name.", " The name is a slip: no variable or function is called that."))
		} else {
			b.WriteString(v("type", " An operation got a value of the wrong type.", " Two values of incompatible types meet in one operation.",
				" A value has a different type than the operation expects.", " The types of the operands do not fit together."))
		}
	case mutate.Logic:
		if f, ok := firstFailure(bug.Verdict); ok && f.Actual == "None" && f.Expected != "None" {
			// Say only what the output shows: nothing came back.
			b.WriteString(v("logic", "The code runs without an exception, but the function returns None instead of a result",
				"Nothing crashes, yet the call gives back None where a result is expected",
				"The function returns nothing (None), so every comparison with the expected value fails",
				"The tests run to the end, but the answer is None"))
		} else {
			b.WriteString(v("logic", "The code runs without an exception, but it returns a wrong result", "Nothing crashes, yet the result is wrong",
				"The function returns a value, just not the right one", "The tests run to the end but the answer is off"))
		}
		if bug.FailedTest != "" {
			fmt.Fprintf(&b, v("failed", ": the test `%s` fails", "; `%s` does not hold", ", as `%s` shows"), bug.FailedTest)
		}
		b.WriteString(".")
	case mutate.Timeout:
		fmt.Fprintf(&b, v("timeout", "The run did not finish in time (%s): on at least one test the code keeps running, most likely in a loop that never reaches its exit condition.",
			"The tests time out (%s), so some input makes the code run forever: a loop never reaches its end.",
			"Execution hits the time limit (%s); a loop keeps going because its condition never becomes false."), errorMessage(bug))
	case mutate.Runtime:
		fmt.Fprintf(&b, v("runtime", "The code runs, but a test fails with `%s`", "The tests start, then the run fails with `%s`",
			"At run time the code stops with `%s`", "Running the tests ends in `%s`"), errorMessage(bug))
		if bug.Line > 0 {
			fmt.Fprintf(&b, " at %s", at(bug.Line))
		}
		if bug.FailedTest != "" {
			fmt.Fprintf(&b, " during the test `%s`", bug.FailedTest)
		}
		b.WriteString(".")
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

// oneLineApart reports whether a and b have the same number of lines
// and differ in exactly one.
func oneLineApart(a, b string) bool {
	// the dialogue shows both without their trailing newlines
	la, lb := strings.Split(strings.TrimRight(a, "\n"), "\n"), strings.Split(strings.TrimRight(b, "\n"), "\n")
	if len(la) != len(lb) {
		return false
	}
	diff := 0
	for i := range la {
		if la[i] != lb[i] {
			diff++
		}
	}
	return diff == 1
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
