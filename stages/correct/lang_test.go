package correct

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// multiLang reads data/multilang.jsonl as problems keyed by id, each with
// its dataset bug.
func multiLang(t *testing.T) (map[string]*schema.Problem, map[string]string) {
	t.Helper()
	f, err := os.Open("../../data/multilang.jsonl")
	if err != nil {
		t.Fatalf("open problem set: %v", err)
	}
	defer f.Close()
	probs, bugs := map[string]*schema.Problem{}, map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			ID, Language, Description, Solution, Bug string
			Tests                                    []string
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad line: %v", err)
		}
		probs[l.ID] = &schema.Problem{Query: schema.Query{ID: l.ID, Text: l.Description, Language: l.Language},
			Solution: l.Solution, Tests: l.Tests}
		bugs[l.ID] = l.Bug
	}
	return probs, bugs
}

// TestModelInjectionLanguages drives the model path on problems of
// data/multilang.jsonl in two compiled languages (C, Go) and a scripted one
// (JavaScript): each planted bug must fail in the sandbox as its kind (a
// compile error as syntax, a panic or crash as runtime), the fix must pass,
// the dialogue's fences must carry the language's tag, and the record must
// verify on a re-run. A "bug" that is the reference unchanged, or a bug
// that shows as another kind, is discarded.
func TestModelInjectionLanguages(t *testing.T) {
	probs, bugs := multiLang(t)
	ex := sandbox(t)
	langs, err := executors.Languages(context.Background(), ex)
	if err != nil {
		t.Fatal(err)
	}
	have := map[executors.Language]bool{}
	for _, l := range langs {
		have[l.Language] = l.Available
	}
	noRef := func(id string) *schema.Problem {
		p := *probs[id]
		p.Solution = ""
		return &p
	}
	cases := []struct {
		injectionCase
		analysis string // a phrase the analysis must hold
	}{
		{injectionCase{"c compile error", probs["ml/add/c"], mutate.Syntax, []string{fenced("c", "int add(int a, int b) {\n  return a + b\n}\n")},
			"", "CompileError", "reference"}, "main.c:2:15: error: expected"},
		{injectionCase{"c crash", probs["ml/vowels/c"], mutate.Runtime, []string{fenced("c", bugs["ml/vowels/c"])},
			"", "Segmentation fault", "reference"}, "Segmentation fault"},
		{injectionCase{"c unchanged", probs["ml/add/c"], mutate.Syntax, []string{fenced("c", probs["ml/add/c"].Solution)},
			"reference solution unchanged", "", ""}, ""},
		{injectionCase{"go panic", probs["ml/average/go"], mutate.Runtime, []string{fenced("go", bugs["ml/average/go"])},
			"", "panic", "reference"}, "index out of range"},
		{injectionCase{"go logic fixed by model", noRef("ml/add/go"), mutate.Logic, []string{fenced("go", bugs["ml/add/go"]),
			"The subtraction should be an addition.\n\n```go\n" + probs["ml/add/go"].Solution + "```"},
			"", observedWrongAnswer, "model"}, "add(2, 3)"},
		{injectionCase{"js type error", probs["ml/vowels/javascript"], mutate.Type, []string{fenced("javascript", bugs["ml/vowels/javascript"])},
			"", "TypeError", "reference"}, "is not a function"},
		{injectionCase{"js name error", probs["ml/vowels/javascript"], mutate.Name, []string{fenced("javascript",
			"function countVowels(s) {\n  let n = 0;\n  for (const c of s) if ('aeiou'.includes(c)) m++;\n  return n;\n}\n")},
			"", "ReferenceError", "reference"}, "m is not defined"},
		{injectionCase{"js wrong kind", probs["ml/vowels/javascript"], mutate.Name, []string{fenced("javascript", bugs["ml/vowels/javascript"])},
			"another kind", "", ""}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lang, err := languageOf(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if !have[lang] {
				if os.Getenv("CI") == "true" {
					t.Fatalf("no %s toolchain", lang)
				}
				t.Skipf("no %s toolchain in the sandbox", lang)
			}
			// Compilers are slow on a loaded machine; the limits only bound.
			d, g, reqs := tc.run(t, func(g *modelGenerator) {
				g.Checker.Timeout = 60 * time.Second
				g.Checker.LoopTimeout = 5 * time.Second
			})
			ask := reqs[0].Chat.Messages[0].Content
			if name := langName(lang); !strings.Contains(ask, "Write a "+name+" solution") || !strings.Contains(ask, "```"+string(lang)+" block") ||
				!strings.Contains(ask, "at least one "+string(tc.kind)+" error: ") || strings.Contains(ask, "Python") ||
				strings.Contains(ask, "error: a "+string(tc.kind)+" error") {
				t.Errorf("injection prompt does not ask for %s code with a %s error:\n%s", name, tc.kind, ask)
			}
			if d == nil {
				return
			}
			if !strings.Contains(d.Messages[0].Content, "```"+string(lang)+"\n"+tc.p.Tests[0]) {
				t.Errorf("the request does not show the tests in a %s fence:\n%s", lang, d.Messages[0].Content)
			}
			for _, i := range []int{1, 3} {
				if c := d.Messages[i].Content; !strings.Contains(c, "```"+string(lang)+"\n") || strings.Contains(c, "```python") {
					t.Errorf("turn %d does not fence its code as %s:\n%s", i, lang, c)
				}
			}
			for _, i := range []int{2, 4} {
				if e := d.Messages[i].Exec; e == nil || e.Language != string(lang) {
					t.Errorf("execution turn %d records language %v, want %s", i, e, lang)
				}
			}
			if tc.fixBy == "reference" && !strings.Contains(d.Messages[3].Content, tc.analysis) {
				t.Errorf("the analysis does not quote %q:\n%s", tc.analysis, d.Messages[3].Content)
			}
			if strings.Contains(d.Messages[3].Content, "CompileError") {
				t.Errorf("the analysis quotes the harness's name for a failed build:\n%s", d.Messages[3].Content)
			}
			if tc.fixBy == "model" && !strings.Contains(d.Messages[2].Content, tc.analysis) {
				t.Errorf("the feedback does not show %q:\n%s", tc.analysis, d.Messages[2].Content)
			}
			if tc.fixBy == "model" {
				fix := reqs[1].Chat.Messages[2].Content
				if !strings.Contains(fix, "corrected "+langName(lang)+" code in a single ```"+string(lang)+" block") {
					t.Errorf("the fix prompt does not ask for %s:\n%s", lang, fix)
				}
			}
			tampered := *d
			tampered.Labels = map[string]string{"bug_kind": string(mutate.Logic), "observed": d.Labels["observed"]}
			if tc.kind != mutate.Logic {
				if err := verifyDialogue(context.Background(), g.Checker, &tampered); err == nil || !strings.Contains(err.Error(), "of bug kind") {
					t.Errorf("verify with a wrong bug_kind label: %v, want a kind mismatch", err)
				}
			}
		})
	}
}

// TestPlantable: a name or type slip in a language whose compiler checks
// names and types is a compile error, so the model path refuses to ask for
// one there instead of discarding every answer.
func TestPlantable(t *testing.T) {
	for _, tc := range []struct {
		lang executors.Language
		kind mutate.Kind
		want bool
	}{
		{executors.Python, mutate.Name, true}, {executors.Python, mutate.Runtime, false},
		{executors.C, mutate.Syntax, true}, {executors.C, mutate.Name, false}, {executors.Go, mutate.Type, false}, {executors.Rust, mutate.Runtime, true},
		{executors.TypeScript, mutate.Name, false}, {executors.JavaScript, mutate.Name, true}, {executors.Lua, mutate.Type, true},
	} {
		if got := plantable(tc.lang, tc.kind); got != tc.want {
			t.Errorf("Plantable(%s, %s) = %v, want %v", tc.lang, tc.kind, got, tc.want)
		}
	}
	g := &modelGenerator{}
	p := &schema.Problem{Query: schema.Query{ID: "ml/add/go", Language: "go"}, Tests: []string{"assertEqual(add(1, 2), 3)"}}
	if _, err := g.Generate(context.Background(), p, mutate.Name); err == nil || isDiscarded(err) || !strings.Contains(err.Error(), "no name bug can be planted in Go") {
		t.Errorf("a name bug in Go: %v, want a refusal", err)
	}
}

// TestStageModelLanguages runs the registered stage's model method through
// the engine on a Go and a JavaScript problem: a name bug is not asked for
// in Go (counted unplantable), the other kinds give dialogues fenced in the
// problem's language.
func TestStageModelLanguages(t *testing.T) {
	probs, bugs := multiLang(t)
	dir := t.TempDir()
	pipelinetest.WriteJSONL(t, filepath.Join(dir, "p.jsonl"), probs["ml/add/go"], probs["ml/vowels/javascript"])
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		ask := c.Request.Messages[0].Content
		switch {
		case strings.Contains(ask, "Write a Go solution") && strings.Contains(ask, "logic error"):
			return llmtest.Reply{Text: fenced("go", bugs["ml/add/go"])}
		case strings.Contains(ask, "Write a JavaScript solution") && strings.Contains(ask, "logic error"):
			return llmtest.Reply{Text: fenced("javascript", strings.Replace(probs["ml/vowels/javascript"].Solution, "let n = 0", "let n = 1", 1))}
		case strings.Contains(ask, "Write a JavaScript solution") && strings.Contains(ask, "name error"):
			return llmtest.Reply{Text: fenced("javascript", strings.Replace(probs["ml/vowels/javascript"].Solution, "n++", "m++", 1))}
		}
		t.Errorf("unexpected prompt:\n%s", ask)
		return llmtest.Reply{Text: "?"}
	})
	out := filepath.Join(dir, "out.jsonl")
	y := pipelinetest.ModelHead(dir, srv.URL) + `inputs: [{path: p.jsonl, format: native}]
stages:
  - {stage: correct, concurrency: 1, retries: 0, settings: {method: model, kinds: [name, logic], timeout: 60s}}
outputs: [{path: ` + out + `, kind: dialogue}]
`
	man := pipelinetest.Run(t, dir, y, pipeline.RunOptions{})
	got := map[string]bool{}
	for _, d := range pipelinetest.Dialogues(t, out) {
		lang := strings.TrimPrefix(d.Sources[0][strings.LastIndex(d.Sources[0], "/"):], "/")
		got[lang+":"+d.Labels["bug_kind"]] = true
		if !strings.Contains(d.Messages[1].Content, "```"+lang+"\n") || d.Method != "model-injection" {
			t.Errorf("dialogue %s (%s): method %s, first answer not fenced as %s:\n%s", d.ID, d.Sources[0], d.Method, lang, d.Messages[1].Content)
		}
	}
	if len(got) != 3 || !got["go:logic"] || !got["javascript:logic"] || !got["javascript:name"] {
		t.Errorf("dialogues %v, want go:logic, javascript:logic, javascript:name", got)
	}
	if st := man.Stages[0].Stats; st["unplantable.name"] != 1 {
		t.Errorf("stats %v, want unplantable.name 1 (the Go problem)", st)
	}
}

// Outside Python a failure's exception type, or for PHP and Lua its
// message, decides the bug kind it proves; anything else is a runtime bug.
func TestKindOutsidePython(t *testing.T) {
	failing := func(msg string) harness.Verdict {
		return harness.Verdict{Cases: []harness.CaseResult{{Passed: true}, {Message: msg}}}
	}
	for _, tc := range []struct {
		lang     executors.Language
		observed string
		msg      string
		want     mutate.Kind
	}{
		{executors.JavaScript, "ReferenceError", "m is not defined", mutate.Name},
		{executors.JavaScript, "TypeError", "s.foo is not a function", mutate.Type},
		{executors.JavaScript, "RangeError", "Invalid array length", mutate.Runtime},
		{executors.Ruby, "NameError", "undefined local variable or method `m'", mutate.Name},
		{executors.Ruby, "TypeError", "String can't be coerced into Integer", mutate.Type},
		{executors.Ruby, "ZeroDivisionError", "divided by 0", mutate.Runtime},
		{executors.PHP, "TypeError", "Unsupported operand types: string + int", mutate.Type},
		{executors.PHP, "Error", "Call to undefined function ad()", mutate.Name},
		{executors.PHP, "Error", "Undefined variable $m", mutate.Name},
		{executors.PHP, "DivisionByZeroError", "Division by zero", mutate.Runtime},
		{executors.Lua, "RuntimeError", "main.lua:3: attempt to call a nil value (global 'ad')", mutate.Name},
		{executors.Lua, "RuntimeError", "main.lua:3: attempt to perform arithmetic on a string value", mutate.Type},
		{executors.Lua, "RuntimeError", "main.lua:3: boom", mutate.Runtime},
		{executors.Go, "panic", "index out of range", mutate.Runtime},
		{executors.Go, observedWrongAnswer, "", mutate.Logic},
		{executors.Go, observedTimeout, "", mutate.Timeout},
		{executors.Go, observedPass, "", ""},
	} {
		r := judgedRun{Lang: tc.lang, Observed: tc.observed, Verdict: failing(tc.msg)}
		if got := r.Kind(); got != tc.want {
			t.Errorf("%s %s %q: got %q, want %q", tc.lang, tc.observed, tc.msg, got, tc.want)
		}
	}
	syntax := judgedRun{Lang: executors.C, Observed: "CompileError", Verdict: harness.Verdict{Load: &harness.LoadFailure{Kind: harness.KindSyntax}}}
	if got := syntax.Kind(); got != mutate.Syntax {
		t.Errorf("a C compile error: got %q, want %q", got, mutate.Syntax)
	}
}
