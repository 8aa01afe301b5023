package correct

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// kindHints tell the model what an error of each kind looks like.
var kindHints = map[mutate.Kind]string{
	mutate.Syntax:  "a syntax error, such as a missing colon, an unclosed bracket or a wrong indentation, so that the code does not compile.",
	mutate.Name:    "a name error: a variable or function that is misspelled or never defined where it is used.",
	mutate.Type:    "a type error: an operation applied to a value of the wrong type, such as adding a string to a number.",
	mutate.Logic:   "a logic error: the code runs without any exception but returns a wrong result for at least one test (an off-by-one, a wrong comparison or operator).",
	mutate.Timeout: "a loop that never ends for at least one of the test inputs.",
}

// modelGenerator runs the model path. Safe for concurrent use when its
// Chatter and Executor are.
type modelGenerator struct {
	Chat    llm.Chatter
	Exec    executors.Executor
	Checker *checker
	// Model names the model in the dialogue record (the endpoint's answer
	// takes precedence when it reports one).
	Model string
}

// discardError explains why the model path produced no dialogue for a problem:
// the injected bug did not bite, bit as the wrong kind, or the fix failed.
type discardError struct {
	Kind     mutate.Kind
	Observed string
	Reason   string
}

func (d *discardError) Error() string {
	return fmt.Sprintf("correct: %s injection discarded: %s (observed %s)", d.Kind, d.Reason, d.Observed)
}

// promptNames are the model path's prompts for code in lang: Python keeps
// its own, so its dialogues stay as they were.
func promptNames(lang executors.Language) (inject, fix string) {
	if lang == executors.Python {
		return "correct_inject", "correct_fix"
	}
	return "correct_inject_lang", "correct_fix_lang"
}

func promptVersion(lang executors.Language) (string, error) {
	inject, fix := promptNames(lang)
	return prompts.Versions(inject, fix, "correct_request")
}

func render(name string, data any) (string, error) {
	t, err := prompts.Get(name)
	if err != nil {
		return "", err
	}
	return t.Render(data)
}

// Generate asks the model for code with a hidden error of kind, runs it
// against p's tests, and when it fails as that kind builds a dialogue: a
// plain request for correct code, the buggy answer, its real error output,
// the fix (p's reference solution when it has one, else the model's) and the
// fix's passing run. A bug that does not bite, bites as another kind, or a
// fix that fails gives a *discardError error; other errors come from the model
// client or the sandbox.
func (g *modelGenerator) Generate(ctx context.Context, p *schema.Problem, kind mutate.Kind) (schema.Dialogue, error) {
	lang, err := languageOf(p)
	if err != nil {
		return schema.Dialogue{}, err
	}
	hint, ok := kindHints[kind]
	if lang != executors.Python {
		hint, ok = langHint(lang, kind), kind != ""
	}
	if !ok {
		return schema.Dialogue{}, fmt.Errorf("correct: unknown bug kind %q", kind)
	}
	if !plantable(lang, kind) {
		return schema.Dialogue{}, fmt.Errorf("correct: no %s bug can be planted in %s: its failure would not show as that kind", kind, langName(lang))
	}
	if len(p.Tests) == 0 {
		return schema.Dialogue{}, &discardError{Kind: kind, Reason: "problem has no tests to run"}
	}
	task := userPrompt(p)
	injectName, fixName := promptNames(lang)
	tag := string(lang)
	inject, err := render(injectName, map[string]any{"Kind": string(kind), "KindHint": hint, "Task": task,
		"Language": langName(lang), "Fence": tag})
	if err != nil {
		return schema.Dialogue{}, err
	}
	msgs := []llm.Message{llm.User(inject)}
	resp, err := g.Chat.Chat(ctx, llm.Request{Messages: msgs})
	if err != nil {
		return schema.Dialogue{}, fmt.Errorf("correct: ask for %s injection: %w", kind, err)
	}
	model := g.Model
	if resp.Model != "" {
		model = resp.Model
	}
	buggy, err := parse.Code(resp.Text, tag)
	if err != nil {
		return schema.Dialogue{}, &discardError{Kind: kind, Reason: "the answer holds no " + tag + " code: " + err.Error()}
	}
	if sol := p.Solution; strings.TrimSpace(sol) != "" && sameCode(buggy, sol) {
		// Not worth a sandbox run: the reference passes by definition.
		return schema.Dialogue{}, &discardError{Kind: kind, Observed: observedPass,
			Reason: "the code did not fail: the model returned the reference solution unchanged, with no bug planted"}
	}
	bug, err := g.Checker.Check(ctx, p, buggy, kind == mutate.Timeout)
	if err != nil {
		return schema.Dialogue{}, err
	}
	if bug.Kind() != kind {
		reason := "the code did not fail"
		if !bug.Passed() {
			reason = "the code failed as another kind"
		}
		return schema.Dialogue{}, &discardError{Kind: kind, Observed: bug.Observed, Reason: reason}
	}

	var fixText, fixCode, fixBy string
	if sol := normalizeNewlines(p.Solution); strings.TrimSpace(sol) != "" {
		fixCode, fixBy = sol, "reference"
		fixText = analysis(bug, buggy) + " Here is the corrected code:\n\n" + fence(lang, sol)
	} else {
		ask, err := render(fixName, map[string]any{"Output": bug.Output(), "Language": langName(lang), "Fence": tag})
		if err != nil {
			return schema.Dialogue{}, err
		}
		msgs = append(msgs, llm.Assistant(resp.Text), llm.User(ask))
		fr, err := g.Chat.Chat(ctx, llm.Request{Messages: msgs})
		if err != nil {
			return schema.Dialogue{}, fmt.Errorf("correct: ask for the fix: %w", err)
		}
		if fixCode, err = parse.Code(fr.Text, tag); err != nil {
			return schema.Dialogue{}, &discardError{Kind: kind, Observed: bug.Observed, Reason: "the fix holds no " + tag + " code: " + err.Error()}
		}
		fixText, fixBy = strings.TrimSpace(fr.Text), "model"
	}
	fix, err := g.Checker.Check(ctx, p, fixCode, false)
	if err != nil {
		return schema.Dialogue{}, err
	}
	if !fix.Passed() {
		return schema.Dialogue{}, &discardError{Kind: kind, Observed: fix.Observed, Reason: "the " + fixBy + " fix does not pass"}
	}

	request, err := render("correct_request", map[string]any{"Task": task})
	if err != nil {
		return schema.Dialogue{}, err
	}
	version, err := promptVersion(lang)
	if err != nil {
		return schema.Dialogue{}, err
	}
	info := g.Exec.Info()
	id := schema.StableID("dlg-correct", "model", p.ID, string(kind), buggy)
	fn := funcName(p, buggy)
	return schema.Dialogue{
		ID: id,
		Messages: []schema.Message{
			{Role: schema.RoleUser, Content: strings.TrimSpace(request)},
			{Role: schema.RoleAssistant, Content: intro(id, fn, buggy, buggy) + "\n\n" + fence(lang, buggy)},
			{Role: schema.RoleExecution, Content: bug.Output(), Exec: bug.Execution(info)},
			{Role: schema.RoleAssistant, Content: fixText},
			{Role: schema.RoleExecution, Content: fix.Output(), Exec: fix.Execution(info)},
			{Role: schema.RoleAssistant, Content: passesAll(id, fn, fix)},
		},
		Stage:   "correct",
		Method:  "model-injection",
		Model:   model,
		Prompt:  version,
		Sources: []string{p.ID},
		Labels: map[string]string{
			"bug_kind":     string(kind),
			"observed":     bug.Observed,
			"fix_by":       fixBy,
			"final_status": observedPass,
		},
	}, nil
}

// isDiscarded reports whether err is a discarded injection (not a failure).
func isDiscarded(err error) bool {
	var d *discardError
	return errors.As(err, &d)
}
