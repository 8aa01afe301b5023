package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/strlit"
	"github.com/codefeedback/codefeedback/schema"
)

// Judging in other languages (as MultiPL-E does for HumanEval): a solution
// plus assert-style tests written in the solution's language, one native
// statement per test:
//
//	javascript, typescript  assert.deepStrictEqual(f(1, 2), 3);   assert(ok(x));
//	c, cpp                  assert(f(1, 2) == 3);                  assert(strcmp(g(), "ab") == 0);
//	go                      assertEqual(f(1, 2), 3)                assertTrue(ok(x))
//	java                    assertEquals(Solution.f(1, 2), 3);     assertTrue(Solution.ok(x));
//	rust                    assert_eq!(f(1, 2), 3);                assert!(ok(x));
//	ruby                    assert_equal(f(1, 2), 3)               assert(ok(x))
//	php                     assert(f(1, 2) === 3);                 assert(ok($x));
//	lua                     assert(f(1, 2) == 3)                   assert(ok(x))
//
// An equality test reports expected against actual with the call as input;
// any other test passes or fails as a whole. BuildIn generates one program
// (the candidate first, so its line numbers hold, then a judge in the same
// language) that runs every test under its own guard (a forked child per
// test in C and C++, try/catch, recover or catch_unwind elsewhere) and prints
// the same marker records as the Python judge, so Decode, Verdict, Outcome
// and Feedback are shared. A failed compile is a load failure of kind
// syntax with the compiler's first error and its line.

// LangBuilders are the languages BuildIn supports.
var langBuilders = map[executors.Language]func(b *langBuild) string{
	executors.JavaScript: buildJS,
	executors.TypeScript: buildJS,
	executors.C:          buildC,
	executors.CPP:        buildCPP,
	executors.Go:         buildGo,
	executors.Java:       buildJava,
	executors.Rust:       buildRust,
	executors.Ruby:       buildRuby,
	executors.PHP:        buildPHP,
	executors.Lua:        buildLua,
}

// Judged reports whether BuildIn can judge lang (Python through Build).
func Judged(lang executors.Language) bool {
	_, ok := langBuilders[lang]
	return ok || lang == executors.Python
}

// langTest is one parsed test.
type langTest struct {
	Src      string // the statement as written
	Actual   string // equality tests: the expression under test
	Expected string // and its expected value
	Op       string // the equality written, where the language has two (PHP: "===" or "==")
	Cond     string // boolean tests: the condition
	Stmt     string // anything else: run as is; passes unless it throws
}

type langBuild struct {
	lang   executors.Language
	code   string
	tests  []langTest
	marker string
	lines  int // lines of the candidate's code
	opts   Options
}

// LangProgram is a generated judge program in a language other than Python.
type LangProgram struct {
	Program
	Language executors.Language
	lines    int // the candidate's lines; 0 when unknown (a re-run record)
}

// Request is the sandbox request that runs the program.
func (lp LangProgram) Request() executors.Request {
	return executors.Request{Language: lp.Language, Code: lp.Source, Limits: lp.opts.Limits,
		CompileLimits: executors.Limits{Timeout: 2 * lp.opts.Timeout}}
}

// BuildIn generates the judge program for code in lang against tests
// written in lang. Python goes through Build.
func BuildIn(lang executors.Language, p schema.Problem, code string, opts Options) (LangProgram, error) {
	opts = opts.withDefaults()
	build, ok := langBuilders[lang]
	if !ok {
		return LangProgram{}, fmt.Errorf("harness: no judge for %s", lang)
	}
	if len(p.Tests) == 0 {
		return LangProgram{}, fmt.Errorf("%w (problem %q)", ErrNoTests, p.ID)
	}
	b := &langBuild{lang: lang, code: strings.TrimRight(code, "\n") + "\n", opts: opts}
	b.lines = strings.Count(b.code, "\n")
	for _, t := range p.Tests {
		b.tests = append(b.tests, parseLangTest(lang, t))
	}
	marker, err := markerFor("@@cfjudge:", judgeVersion+"/"+string(lang), map[string]any{"code": code, "tests": p.Tests})
	if err != nil {
		return LangProgram{}, fmt.Errorf("harness: encode payload: %w", err)
	}
	b.marker = marker
	return LangProgram{Program: Program{Source: build(b), marker: marker, opts: opts}, Language: lang, lines: b.lines}, nil
}

// JudgeIn judges code in lang against p's tests (in that language); Python
// goes to Judge. Like Judge, a failing candidate is a verdict, not an error.
func JudgeIn(ctx context.Context, ex executors.Executor, lang executors.Language, p schema.Problem, code string, opts Options) (Verdict, error) {
	if lang == executors.Python || lang == "" {
		return Judge(ctx, ex, p, code, opts)
	}
	lp, err := BuildIn(lang, p, code, opts)
	if err != nil {
		return Verdict{}, err
	}
	res, err := ex.Run(ctx, lp.Request())
	if err != nil {
		return Verdict{}, fmt.Errorf("harness: run problem %q (%s): %w", p.ID, lang, err)
	}
	return lp.Decode(res), nil
}

// Decode turns the run's result into a verdict: the Python judge's
// decoding, plus a failed compile (or a program that never started its
// judge) as a load failure, and the candidate's own output as Stdout.
func (lp LangProgram) Decode(res executors.Result) Verdict {
	v := lp.Program.Decode(res)
	started := false
	var out []string
	for _, l := range strings.SplitAfter(res.Stdout, "\n") {
		if strings.HasPrefix(l, lp.marker+" ") {
			started = true
			continue
		}
		out = append(out, l)
	}
	v.Stdout = strings.Join(out, "")
	if len(v.Stdout) > lp.opts.StdoutBytes {
		v.StdoutBytes = int64(len(v.Stdout))
		v.Stdout = v.Stdout[:lp.opts.StdoutBytes]
	}
	switch {
	case res.Phase == "compile" && !res.TimedOut:
		v.Load = &LoadFailure{Stage: "solution", Kind: KindSyntax, Exception: "CompileError",
			Message: res.ErrorLine, Traceback: lp.candidateErrors(res.Stderr), Line: res.Line}
	case res.Phase == "compile":
		v.Load = &LoadFailure{Stage: "solution", Kind: KindTimeout, Message: "the compiler ran out of time"}
	case !started && !res.TimedOut && res.Exception != "":
		kind := KindException
		if res.Exception == "SyntaxError" || res.Exception == "ParseError" {
			kind = KindSyntax
		}
		tb := res.Stderr
		if kind == KindSyntax {
			tb = lp.candidateErrors(tb)
		}
		v.Load = &LoadFailure{Stage: "solution", Kind: kind, Exception: res.Exception,
			Message: res.ErrorLine, Traceback: tb, Line: res.Line}
	}
	if v.Load != nil {
		for i := range v.Cases {
			v.Cases[i] = CaseResult{Test: v.Cases[i].Test, Kind: v.Load.Kind, Exception: v.Load.Exception,
				Message: "not run: the code failed to load"}
		}
		v.PassedCount, v.Passed = 0, false
	}
	v.Feedback = Feedback(v, lp.opts)
	return v
}

// reNodeNoise is node's own part of a load failure: its loader's frames
// and its version banner.
var reNodeNoise = regexp.MustCompile(`(?m)^\s+at [^\n]*\(?node:internal/[^\n]*\n|^\n?Node\.js v[\d.]+\n?`)

// reDiagAt is a diagnostic line that starts with the file and line it is
// about (main.rb:26: ..., ./main.go:30:2: ..., Main.java:12: ...).
var reDiagAt = regexp.MustCompile(`^(?:\./)?[\w.-]+\.(?:rb|go|java|ts|js|php|lua):(\d+)\b`)

// candidateErrors cuts a compiler's or parser's report at its first error
// past the candidate's lines: a parser that recovers (Ruby's) goes on to
// report the judge's lines as broken too, which says nothing about the
// candidate. The first error is always kept.
func (lp LangProgram) candidateErrors(stderr string) string {
	if lp.Language == executors.JavaScript || lp.Language == executors.TypeScript {
		stderr = reNodeNoise.ReplaceAllString(stderr, "")
	}
	if lp.lines <= 0 {
		return stderr
	}
	lines := strings.SplitAfter(stderr, "\n")
	seen := false
	for i, l := range lines {
		m := reDiagAt.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		// +1: a Go candidate without a package clause moves down a line.
		if n := atoiSafe(m[1]); seen && n > lp.lines+1 {
			return strings.Join(lines[:i], "")
		}
		seen = true
	}
	return stderr
}

func atoiSafe(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1e8 {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// ExecutionIn is Verdict.Execution for a program in lang.
func (v Verdict) ExecutionIn(lang executors.Language) schema.Execution {
	e := v.Execution()
	if lang != "" {
		e.Language = string(lang)
	}
	return e
}

var (
	reJSEq    = regexp.MustCompile(`^assert\.(?:deepStrictEqual|strictEqual|deepEqual|equal)\s*\(([\s\S]*)\)\s*;?$`)
	reJSOk    = regexp.MustCompile(`^assert(?:\.ok)?\s*\(([\s\S]*)\)\s*;?$`)
	reCAssert = regexp.MustCompile(`^assert\s*\(([\s\S]*)\)\s*;?$`)
	reGoEq    = regexp.MustCompile(`^assertEqual\s*\(([\s\S]*)\)\s*;?$`)
	reGoTrue  = regexp.MustCompile(`^assertTrue\s*\(([\s\S]*)\)\s*;?$`)
	reJavaEq  = regexp.MustCompile(`^assertEquals\s*\(([\s\S]*)\)\s*;?$`)
	reRustEq  = regexp.MustCompile(`^assert_eq!\s*\(([\s\S]*)\)\s*;?$`)
	reRustOk  = regexp.MustCompile(`^assert!\s*\(([\s\S]*)\)\s*;?$`)
	reRubyEq  = regexp.MustCompile(`^assert_equal\s*\(([\s\S]*)\)\s*;?$`)
)

// callAsserts are the languages whose tests call an equality assertion
// (two arguments) or a boolean one (one argument); C-like asserts of an
// expression are read apart, in parseLangTest.
var callAsserts = map[executors.Language]struct{ eq, cond *regexp.Regexp }{
	executors.JavaScript: {reJSEq, reJSOk},
	executors.TypeScript: {reJSEq, reJSOk},
	executors.Go:         {reGoEq, reGoTrue},
	executors.Java:       {reJavaEq, reGoTrue},
	executors.Rust:       {reRustEq, reRustOk},
	executors.Ruby:       {reRubyEq, reCAssert},
}

// parseLangTest recognises a test's equality or boolean assertion.
func parseLangTest(lang executors.Language, src string) langTest {
	s := strings.TrimSpace(src)
	t := langTest{Src: s}
	two := func(re *regexp.Regexp) bool {
		if m := re.FindStringSubmatch(s); m != nil {
			if args := strlit.SplitTop(m[1], ","); len(args) == 2 || (len(args) == 3 && strings.TrimSpace(args[2]) == "") {
				t.Actual, t.Expected = strings.TrimSpace(args[0]), strings.TrimSpace(args[1])
				return true
			}
		}
		return false
	}
	one := func(re *regexp.Regexp) bool {
		if m := re.FindStringSubmatch(s); m != nil && len(strlit.SplitTop(m[1], ",")) == 1 {
			t.Cond = strings.TrimSpace(m[1])
			return true
		}
		return false
	}
	if a, ok := callAsserts[lang]; ok && (two(a.eq) || one(a.cond)) {
		return t
	}
	switch lang {
	case executors.C, executors.CPP:
		if m := reCAssert.FindStringSubmatch(s); m != nil {
			if sides := strlit.SplitTop(m[1], "=="); len(sides) == 2 {
				t.Actual, t.Expected = strings.TrimSpace(sides[0]), strings.TrimSpace(sides[1])
				return t
			}
			t.Cond = strings.TrimSpace(m[1])
			return t
		}
	case executors.PHP, executors.Lua:
		if m := reCAssert.FindStringSubmatch(s); m != nil && len(strlit.SplitTop(m[1], ",")) == 1 {
			ops := []string{"=="}
			if lang == executors.PHP {
				ops = []string{"===", "=="}
			}
			for _, op := range ops {
				if sides := strlit.SplitTop(m[1], op); len(sides) == 2 {
					t.Actual, t.Expected, t.Op = strings.TrimSpace(sides[0]), strings.TrimSpace(sides[1]), op
					return t
				}
			}
			t.Cond = strings.TrimSpace(m[1])
			return t
		}
	}
	t.Stmt = s
	return t
}

// jsonStr is a JSON string literal, which is also a valid string literal in
// JavaScript, TypeScript, Go, Java and (with \u escapes avoided) C and Rust.
func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// cStr is a C/C++/Rust string literal of s (hex escapes for control
// bytes; JSON's \u escapes are not C).
func cStr(s string) string { return strlit.DoubleQuoted(s, strlit.Hex) }

func (b *langBuild) planJSON() string {
	var cases []string
	for _, t := range b.tests {
		cases = append(cases, t.Src)
	}
	j, _ := json.Marshal(map[string]any{"cases": cases})
	return string(j)
}

// caseForms are how a language writes one test as a closure, as Printf
// formats: eq gets the quoted source, the actual and the expected
// expression; cond the quoted source and the condition; stmt the statement
// (without its trailing ';': the form adds its own separator).
type caseForms struct {
	quote          func(string) string
	eq, cond, stmt string
}

// writeCases writes b's tests to w, one closure a test.
func (b *langBuild) writeCases(w *strings.Builder, f caseForms) {
	for _, t := range b.tests {
		switch {
		case t.Actual != "":
			fmt.Fprintf(w, f.eq, f.quote(t.Actual), t.Actual, t.Expected)
		case t.Cond != "":
			fmt.Fprintf(w, f.cond, f.quote(t.Cond), t.Cond)
		default:
			fmt.Fprintf(w, f.stmt, strings.TrimSuffix(t.Stmt, ";"))
		}
	}
}

func (b *langBuild) valueCap() int { return b.opts.ValueChars }

var reMarker = regexp.MustCompile(`@@cfjudge:[0-9a-f]{24}`)

// rerunLang re-runs a recorded judge program in a language other than
// Python: the marker comes from its source, the limits from the record.
func rerunLang(ctx context.Context, ex executors.Executor, e schema.Execution) (Verdict, error) {
	lang := executors.Language(e.Language)
	if _, ok := langBuilders[lang]; !ok {
		return Verdict{}, fmt.Errorf("%w: language %q", ErrNotJudgeProgram, e.Language)
	}
	marker := reMarker.FindString(e.Code)
	if marker == "" || !strings.Contains(e.Code, "codefeedback test judge") {
		return Verdict{}, ErrNotJudgeProgram
	}
	opts := Options{Timeout: time.Duration(e.TimeoutMS) * time.Millisecond,
		Limits: executors.Limits{MemoryBytes: e.MemoryB}}.withDefaults()
	lp := LangProgram{Program: Program{Source: e.Code, marker: marker, opts: opts}, Language: lang}
	res, err := ex.Run(ctx, lp.Request())
	if err != nil {
		return Verdict{}, fmt.Errorf("harness: re-run: %w", err)
	}
	return lp.Decode(res), nil
}
