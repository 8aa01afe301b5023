package correct

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// injectionCase is one run of the model path with a scripted model that
// gives replies in order: the run is discarded for a reason holding
// discarded, or ("" there) yields a dialogue labelled with observed and
// fixBy.
type injectionCase struct {
	name      string
	p         *schema.Problem
	kind      mutate.Kind
	replies   []string
	discarded string
	observed  string
	fixBy     string
}

// run drives the case through a modelGenerator on the test sandbox; tune,
// when not nil, adjusts the generator first. It fails the test on a model
// call past the replies, a discard other than the one wanted, an error,
// labels other than the case's or a dialogue that does not verify on a
// re-run. It returns the dialogue (nil after the wanted discard), the
// generator and the requests the model saw.
func (tc injectionCase) run(t *testing.T, tune func(*modelGenerator)) (*schema.Dialogue, *modelGenerator, []llmtest.Recorded) {
	t.Helper()
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		if c.N > len(tc.replies) {
			t.Errorf("unexpected model call %d", c.N)
			return llmtest.Reply{Text: "no more answers"}
		}
		return llmtest.Reply{Text: tc.replies[c.N-1]}
	})
	c, err := llm.New(llm.Config{Stage: "correct", BaseURL: srv.URL, APIKeyEnv: "CODEFEEDBACK_TEST_NO_KEY",
		Params: llm.Params{Model: "fake-chat"}, MaxAttempts: 1}, llm.Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ex := sandbox(t)
	g := &modelGenerator{Chat: c, Exec: ex, Checker: &checker{Exec: ex, LoopTimeout: 1500e6}}
	if tune != nil {
		tune(g)
	}
	d, err := g.Generate(context.Background(), tc.p, tc.kind)
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatalf("no model call; err %v", err)
	}
	if tc.discarded != "" {
		if !isDiscarded(err) || !strings.Contains(err.Error(), tc.discarded) {
			t.Fatalf("got err %v, want a discard for %q", err, tc.discarded)
		}
		return nil, g, reqs
	}
	if err != nil {
		t.Fatal(err)
	}
	if d.Labels["observed"] != tc.observed || d.Labels["fix_by"] != tc.fixBy || d.Labels["bug_kind"] != string(tc.kind) {
		t.Errorf("labels %v, want observed %s fix_by %s", d.Labels, tc.observed, tc.fixBy)
	}
	if err := verifyDialogue(context.Background(), g.Checker, &d); err != nil {
		t.Errorf("verify: %v", err)
	}
	return &d, g, reqs
}

// fenced is a model's answer: a sentence and the code in a block tagged
// lang.
func fenced(lang, code string) string {
	return "Here is the function.\n\n```" + lang + "\n" + code + "```\n"
}

// TestModelInjection drives the model path with a scripted fake model: an
// answer whose bug does not bite is discarded, one that bites as another
// kind is discarded, and one that fails as asked yields a dialogue with the
// real error, fixed by the reference solution or by the model.
func TestModelInjection(t *testing.T) {
	withRef := &schema.Problem{Query: schema.Query{ID: "t/add", Text: "Write a function add(a, b) that returns the sum."},
		Solution: "def add(a, b):\n    return a + b\n", Tests: []string{"assert add(1, 2) == 3", "assert add(2, 5) == 7"}}
	noRef := &schema.Problem{Query: withRef.Query, Tests: withRef.Tests}
	ok := "def add(a, b):\n    return a + b\n"
	nameBug := "def add(a, b):\n    total = a + b\n    return totl\n"
	cases := []injectionCase{
		{"no bite", withRef, mutate.Name, []string{fenced("python", ok)}, "did not fail", observedPass, ""},
		{"wrong kind", withRef, mutate.Type, []string{fenced("python", nameBug)}, "another kind", "NameError", ""},
		{"name with reference", withRef, mutate.Name, []string{fenced("python", nameBug)}, "", "NameError", "reference"},
		{"logic fixed by model", noRef, mutate.Logic, []string{fenced("python", "def add(a, b):\n    return a - b\n"),
			"The subtraction should be an addition.\n\n```python\n" + ok + "```"}, "", observedWrongAnswer, "model"},
		{"bad model fix", noRef, mutate.Logic, []string{fenced("python", "def add(a, b):\n    return a - b\n"),
			"Fixed.\n\n```python\ndef add(a, b):\n    return a * b\n```"}, "fix does not pass", observedWrongAnswer, ""},
		{"timeout", withRef, mutate.Timeout, []string{fenced("python", "def add(a, b):\n    while a != b:\n        a += 0\n    return a + b\n")}, "", observedTimeout, "reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, g, reqs := tc.run(t, nil)
			if d == nil {
				return
			}
			first := reqs[0].Chat.Messages[0].Content
			if !strings.Contains(first, string(tc.kind)+" error") && !strings.Contains(first, "never ends") {
				t.Errorf("injection prompt does not ask for a %s error:\n%s", tc.kind, first)
			}
			if d.Messages[0].Content != strings.TrimSpace(userPrompt(tc.p)) {
				t.Errorf("first user turn %q, want the plain request %q", d.Messages[0].Content, userPrompt(tc.p))
			}
			if d.Method != "model-injection" || d.Model != "fake-chat" || d.Prompt == "" {
				t.Errorf("method/model/prompt %q/%q/%q", d.Method, d.Model, d.Prompt)
			}
			if tc.observed == "NameError" && !strings.Contains(d.Messages[2].Content, "NameError: name 'totl' is not defined") {
				t.Errorf("feedback turn lacks the real error:\n%s", d.Messages[2].Content)
			}
			// A record or label that no longer tells what the run showed is caught.
			tampered := *d
			tampered.Messages = append([]schema.Message(nil), d.Messages...)
			rec := *d.Messages[2].Exec
			rec.Exception = "ValueError"
			tampered.Messages[2].Exec = &rec
			if err := verifyDialogue(context.Background(), g.Checker, &tampered); err == nil || !strings.Contains(err.Error(), "re-run shows") {
				t.Errorf("verify of a tampered record: %v, want a re-run mismatch", err)
			}
			tampered = *d
			tampered.Labels = map[string]string{"bug_kind": string(tc.kind), "observed": "ValueError"}
			if err := verifyDialogue(context.Background(), g.Checker, &tampered); err == nil || !strings.Contains(err.Error(), "labelled ValueError") {
				t.Errorf("verify of a tampered label: %v, want a label mismatch", err)
			}
		})
	}
}
