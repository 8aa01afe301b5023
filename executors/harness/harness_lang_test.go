package harness_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/schema"
)

// multiLangProblem is one line of data/multilang.jsonl: a problem in one
// language, its reference solution, tests in that language, and a planted
// bug with the kind of failure it must produce.
type multiLangProblem struct {
	ID          string   `json:"id"`
	Problem     string   `json:"problem"`
	Language    string   `json:"language"`
	Description string   `json:"description"`
	Solution    string   `json:"solution"`
	Tests       []string `json:"tests"`
	Bug         string   `json:"bug"`
	BugKind     string   `json:"bug_kind"` // wrong_answer, exception, timeout, syntax
}

func loadMultiLang(t *testing.T) []multiLangProblem {
	t.Helper()
	f, err := os.Open("../../data/multilang.jsonl")
	if err != nil {
		t.Fatalf("open problem set: %v", err)
	}
	defer f.Close()
	var out []multiLangProblem
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p multiLangProblem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("bad line: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// checkBugVerdict says whether v is the failure kind planted.
func checkBugVerdict(t *testing.T, kind string, v harness.Verdict) {
	t.Helper()
	if v.Passed {
		t.Fatalf("the planted bug passed: %s", v.Feedback)
	}
	switch kind {
	case "wrong_answer":
		if v.Outcome() != harness.OutcomeWrongAnswer {
			t.Errorf("got outcome %q, want wrong_answer; feedback:\n%s", v.Outcome(), v.Feedback)
		}
		for _, c := range v.Cases {
			if c.Kind == harness.KindWrongAnswer && (c.Expected == "" || c.Actual == "" || c.Input == "") {
				t.Errorf("wrong answer without expected/actual/input: %+v", c)
			}
		}
	case "exception":
		o := v.Outcome()
		if v.Load != nil || o == harness.OutcomeWrongAnswer || o == harness.OutcomeTimeout || o == harness.OutcomeError {
			t.Errorf("got outcome %q load %+v, want a named exception; feedback:\n%s", o, v.Load, v.Feedback)
		}
	case "timeout":
		if v.Outcome() != harness.OutcomeTimeout {
			t.Errorf("got outcome %q, want timeout; feedback:\n%s", v.Outcome(), v.Feedback)
		}
	case "syntax":
		if v.Load == nil || v.Load.Kind != harness.KindSyntax || v.Load.Line == 0 {
			t.Errorf("got load %+v, want a syntax/compile failure with its line; feedback:\n%s", v.Load, v.Feedback)
		}
	default:
		t.Fatalf("unknown bug kind %q", kind)
	}
}

// TestMultiLangProblems judges the reference solutions and planted bugs
// of data/multilang.jsonl in their own languages. By default a few per
// language (a pass, a wrong answer, an exception, a compile error);
// CODEFEEDBACK_LANG_FULL=1 runs all 100 references and 100 bugs.
func TestMultiLangProblems(t *testing.T) {
	ex := sandbox(t)
	ctx := context.Background()
	langs, err := executors.Languages(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range langs {
		have[string(l.Language)] = l.Available
	}
	full := os.Getenv("CODEFEEDBACK_LANG_FULL") == "1"
	sample := map[string]bool{"ml/add": true, "ml/vowels": true, "ml/prime": true}
	opts := harness.Options{Timeout: 60 * time.Second, CaseTimeout: 3 * time.Second}
	problems := loadMultiLang(t)
	count := map[string]int{}
	for _, p := range problems {
		count[p.Language]++
	}
	for lang, n := range count {
		if n < 10 {
			t.Errorf("%s has %d problems, want at least 10", lang, n)
		}
	}
	for _, p := range problems {
		if !full && !sample[p.Problem] {
			continue
		}
		t.Run(p.ID, func(t *testing.T) {
			lang := executors.Language(p.Language)
			if !have[p.Language] {
				if os.Getenv("CI") == "true" {
					t.Fatalf("no %s toolchain", lang)
				}
				t.Skipf("no %s toolchain in the sandbox", lang)
			}
			prob := schema.Problem{Query: schema.Query{ID: p.ID}, Tests: p.Tests}
			o := opts
			if p.BugKind == "timeout" {
				o.Timeout = 20 * time.Second
			}
			if full || p.Problem == "ml/add" {
				v, err := harness.JudgeIn(ctx, ex, lang, prob, p.Solution, o)
				if err != nil {
					t.Fatal(err)
				}
				if !v.Passed || v.Total != len(p.Tests) {
					t.Fatalf("reference: passed %v (%d/%d); feedback:\n%s\nstderr: %s", v.Passed, v.PassedCount, v.Total, v.Feedback, v.Result.Stderr)
				}
			}
			v, err := harness.JudgeIn(ctx, ex, lang, prob, p.Bug, o)
			if err != nil {
				t.Fatal(err)
			}
			checkBugVerdict(t, p.BugKind, v)
			if e := v.ExecutionIn(lang); e.Language != p.Language || e.Passed == nil || *e.Passed {
				t.Errorf("execution record: language %q passed %v", e.Language, e.Passed)
			}
		})
	}
}

func TestParseLangTests(t *testing.T) {
	// Wrong answers name the input: the builders receive the split sides.
	tests := []struct {
		lang executors.Language
		src  string
		want string // the program holds this input literal
	}{
		{executors.JavaScript, "assert.deepStrictEqual(f([1, 2], 'a,b'), [3]);", `"f([1, 2], 'a,b')"`},
		{executors.C, "assert(max_of((int[]){3, 9}, 2) == 9);", `"max_of((int[]){3, 9}, 2)"`},
		{executors.Go, `assertEqual(f("a, b"), 2)`, `"f(\"a, b\")"`},
		{executors.Rust, "assert_eq!(f(&[1, 2]), vec![3]);", `"f(&[1, 2])"`},
		{executors.Java, "assertEquals(S.f(new int[]{1, 2}), 3);", `"S.f(new int[]{1, 2})"`},
		{executors.Ruby, "assert_equal(f([1, 2], 'a,b'), [3])", `'f([1, 2], \'a,b\')'`},
		{executors.PHP, "assert(f([1, 2], 'a,b') === [3]);", `'f([1, 2], \'a,b\')'`},
		{executors.Lua, "assert(f({1, 2}, 'a,b') == 3)", `"f({1, 2}, 'a,b')"`},
	}
	for _, tc := range tests {
		lp, err := harness.BuildIn(tc.lang, schema.Problem{Tests: []string{tc.src}}, "x", harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(lp.Source, tc.want) {
			t.Errorf("%s %q: program does not hold the input %s", tc.lang, tc.src, tc.want)
		}
	}
}

// A parser that recovers reports the judge's own lines as broken after the
// candidate's error; the feedback keeps only the candidate's.
func TestSyntaxFeedbackStopsAtTheCandidate(t *testing.T) {
	code := "def f(n)\n  return 1 if n == 0)\nend\n"
	lp, err := harness.BuildIn(executors.Ruby, schema.Problem{Tests: []string{"assert_equal(f(0), 1)"}}, code, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stderr := "main.rb:2: syntax error, unexpected ')', expecting `end'\n  return 1 if n == 0)\n                    ^\n" +
		"main.rb:26: syntax error, unexpected `do' for lambda\n...ktrace_locations || []).each do |l|\n" +
		"main.rb:32: syntax error, unexpected `end', expecting end-of-input\n"
	v := lp.Decode(executors.Result{ExitCode: 1, Stderr: stderr, Exception: "SyntaxError", ErrorLine: "syntax error, unexpected ')'", Line: 2})
	if v.Load == nil || v.Load.Kind != harness.KindSyntax || v.Load.Line != 2 {
		t.Fatalf("got load %+v, want a syntax failure at line 2", v.Load)
	}
	if strings.Contains(v.Feedback, "main.rb:26") || strings.Contains(v.Feedback, "main.rb:32") || !strings.Contains(v.Feedback, "main.rb:2: syntax error") {
		t.Errorf("feedback keeps the judge's lines or drops the candidate's:\n%s", v.Feedback)
	}
}

// Node's loader frames and version banner are not the candidate's error.
func TestSyntaxFeedbackDropsNodeNoise(t *testing.T) {
	lp, err := harness.BuildIn(executors.JavaScript, schema.Problem{Tests: []string{"assert.deepStrictEqual(f(0), 1);"}}, "function f(n) {\n  return 1;;)\n}\n", harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stderr := "main.js:2\n  return 1;;)\n            ^\n\nSyntaxError: Unexpected token ')'\n" +
		"    at wrapSafe (node:internal/modules/cjs/loader:1464:18)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n"
	v := lp.Decode(executors.Result{ExitCode: 1, Stderr: stderr, Exception: "SyntaxError", ErrorLine: "SyntaxError: Unexpected token ')'", Line: 2})
	if v.Load == nil || !strings.Contains(v.Feedback, "SyntaxError: Unexpected token ')'") || strings.Contains(v.Feedback, "node:internal") || strings.Contains(v.Feedback, "Node.js v") {
		t.Errorf("feedback:\n%s", v.Feedback)
	}
}
