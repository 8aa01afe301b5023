package leetcode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// PromptNames are the templates of the model path.
var PromptNames = []string{"leetcode_alt_brute", "leetcode_alt_optimal", "leetcode_alt_python", "leetcode_alt_language"}

// ModelGen writes chain and alternative dialogues with a model, judging
// every Python answer with the problem's tests in simulate's loop. Safe for
// concurrent use when Chat and Exec are.
type ModelGen struct {
	Chat      llm.Chatter
	Sim       *feedbackloop.Simulator
	Languages []string
	Exec      executors.Executor // judges the other-language turns
	Timeout   time.Duration
	tmpl      map[string]prompts.Template
}

// NewModelGen returns a generator; o gives the loop's limits and the
// languages of the "languages" alternative.
func NewModelGen(chat llm.Chatter, ex executors.Executor, o Options) (*ModelGen, error) {
	sim, err := feedbackloop.New(feedbackloop.Options{MaxIterations: o.MaxIterations, FeedbackRounds: 0,
		Failed: feedbackloop.FailedLabel, Seed: o.Seed, Timeout: o.Timeout, Language: "python"}, chat, nil, nil, ex)
	if err != nil {
		return nil, fmt.Errorf("leetcode: %w", err)
	}
	g := &ModelGen{Chat: chat, Sim: sim, Languages: o.Languages, Exec: ex, Timeout: o.Timeout, tmpl: map[string]prompts.Template{}}
	for _, n := range PromptNames {
		if g.tmpl[n], err = prompts.Get(n); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *ModelGen) render(name string, data any) (string, error) {
	s, err := g.tmpl[name].Render(data)
	return strings.TrimSpace(s), err
}

// Chain has the model solve the chain's problems in order, each judged by
// its tests. passed is false when some turn's code still failed after the
// loop's iterations (the dialogue is then labelled, not output, by the stage).
func (g *ModelGen) Chain(ctx context.Context, ps []schema.Problem) (d schema.Dialogue, passed bool, err error) {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	id := schema.StableID("dlg-leetcode", append([]string{"chain", "model"}, ids...)...)
	task := feedbackloop.Task{ID: id, Sources: ids, Language: "python"}
	for i := range ps {
		p := ps[i]
		task.Turns = append(task.Turns, feedbackloop.Turn{Text: UserTurn(p, i, id), Problem: &p})
	}
	res, err := g.Sim.Run(ctx, task)
	if err != nil {
		return schema.Dialogue{}, false, fmt.Errorf("leetcode: chain %s: %w", id, err)
	}
	d = res.Dialogue
	d.ID, d.Stage, d.Method = id, "leetcode", "chain-model"
	d.Labels["mode"] = ModeChains
	d.Labels["chain_length"] = fmt.Sprint(len(ps))
	return d, res.Passed, nil
}

// Alternative writes an alternatives dialogue of the given kind for p.
func (g *ModelGen) Alternative(ctx context.Context, p schema.Problem, kind string) (schema.Dialogue, bool, error) {
	id := schema.StableID("dlg-leetcode", "alternatives", kind, p.ID)
	task := feedbackloop.Task{ID: id, Sources: []string{p.ID}, Language: "python"}
	text := UserTurn(p, 0, id)
	switch kind {
	case AltComplexity:
		first, err := g.render("leetcode_alt_brute", map[string]any{"Problem": text})
		if err != nil {
			return schema.Dialogue{}, false, err
		}
		second, err := g.render("leetcode_alt_optimal", nil)
		if err != nil {
			return schema.Dialogue{}, false, err
		}
		task.Turns = []feedbackloop.Turn{{Text: first, Problem: &p}, {Text: second, Problem: &p}}
	case AltLanguages:
		first, err := g.render("leetcode_alt_python", map[string]any{"Problem": text})
		if err != nil {
			return schema.Dialogue{}, false, err
		}
		task.Turns = []feedbackloop.Turn{{Text: first, Problem: &p}}
	default:
		return schema.Dialogue{}, false, fmt.Errorf("leetcode: unknown alternative %q", kind)
	}
	res, err := g.Sim.Run(ctx, task)
	if err != nil {
		return schema.Dialogue{}, false, fmt.Errorf("leetcode: alternatives for %s: %w", p.ID, err)
	}
	d := res.Dialogue
	d.ID, d.Stage, d.Method = id, "leetcode", "alternatives-"+kind
	d.Labels["mode"] = ModeAlternatives
	d.Labels["alternative"] = kind
	d.Labels["checked_languages"] = "python"
	if !res.Passed {
		return d, false, nil
	}
	switch kind {
	case AltComplexity:
		if reason := complexityGate(d.Messages); reason != "" {
			d.Labels["rejected"] = reason
			return d, false, nil
		}
	case AltLanguages:
		reason, err := g.otherLanguages(ctx, p, &d)
		if err != nil {
			return schema.Dialogue{}, false, err
		}
		if reason != "" {
			d.Labels["rejected"] = reason
			return d, false, nil
		}
	}
	return d, true, nil
}

// complexityGate checks a brute-force-then-optimal dialogue: the second
// solution must differ from the first once comments and whitespace are
// gone, and both answers must state a complexity. It returns the reason
// to reject, or "".
func complexityGate(msgs []schema.Message) string {
	ans := turnAnswers(msgs)
	if len(ans) < 2 {
		return RejectSame
	}
	first, err1 := parse.Code(ans[0].Content, "python")
	second, err2 := parse.Code(ans[len(ans)-1].Content, "python")
	if err1 != nil || err2 != nil || normalizeCode(first) == normalizeCode(second) {
		return RejectSame
	}
	// A turn states its complexity when any of its answers does: after a
	// failed run the fix need not repeat what the first answer said.
	said := turnTexts(msgs)
	if !statesComplexity(said[0]) || !statesComplexity(said[len(said)-1]) {
		return RejectNoComplexity
	}
	return ""
}

// turnTexts returns, for each user turn that has answers, all its
// assistant messages' text joined.
func turnTexts(msgs []schema.Message) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case schema.RoleUser:
			flush()
		case schema.RoleAssistant:
			cur.WriteString(m.Content)
			cur.WriteByte('\n')
		}
	}
	flush()
	return out
}

// otherLanguages asks for the solution in each configured language and
// judges each answer in its own language against the problem's tests
// translated into it (translateTests), adding the execution turn. It
// returns the reason to reject the dialogue: an answer that fails its
// tests, or no other-language turn that could be judged.
func (g *ModelGen) otherLanguages(ctx context.Context, p schema.Problem, d *schema.Dialogue) (string, error) {
	var checked, unchecked, missing, failed []string
	for _, lang := range g.Languages {
		lang = parse.NormLang(lang)
		if lang == "" || lang == "python" {
			continue
		}
		ask, err := g.render("leetcode_alt_language", map[string]any{"Language": languageName(lang), "Fence": lang})
		if err != nil {
			return "", err
		}
		conv := toChat(d.Messages)
		conv = append(conv, llm.User(ask))
		resp, err := g.Chat.Chat(ctx, llm.Request{Messages: conv})
		if err != nil {
			return "", fmt.Errorf("leetcode: %s version: %w", lang, err)
		}
		answer := strings.TrimSpace(resp.Text)
		code, err := parse.Code(answer, lang)
		if err != nil || !hasLangBlock(answer, lang) {
			missing = append(missing, lang) // no code in that language: leave the turn out
			continue
		}
		d.Messages = append(d.Messages,
			schema.Message{Role: schema.RoleUser, Content: ask},
			schema.Message{Role: schema.RoleAssistant, Content: answer})
		elang, _ := executors.ParseLanguage(lang)
		tests := translateTests(p, elang, code)
		if len(tests) == 0 || g.Exec == nil || !harness.Judged(elang) {
			unchecked = append(unchecked, lang)
			continue
		}
		prob := schema.Problem{Query: p.Query, Tests: tests}
		v, err := harness.JudgeIn(ctx, g.Exec, elang, prob, leetcodePrelude(elang, code)+code, harness.Options{Timeout: cmp.Or(g.Timeout, 30*time.Second)})
		if err != nil {
			return "", fmt.Errorf("leetcode: judging the %s version: %w", lang, err)
		}
		e := v.ExecutionIn(elang)
		d.Messages = append(d.Messages, schema.Message{Role: schema.RoleExecution, Content: v.Feedback, Exec: &e})
		checked = append(checked, lang)
		if !v.Passed {
			failed = append(failed, lang)
		}
	}
	if len(checked) > 0 {
		d.Labels["checked_languages"] = "python," + strings.Join(checked, ",")
	}
	if len(unchecked) > 0 {
		d.Labels["unchecked_languages"] = strings.Join(unchecked, ",")
	}
	if len(missing) > 0 {
		d.Labels["missing_languages"] = strings.Join(missing, ",")
	}
	switch {
	case len(failed) > 0:
		d.Labels["failed_languages"] = strings.Join(failed, ",")
		return RejectLangFailed, nil
	case len(checked) == 0:
		return RejectUnjudged, nil
	}
	return "", nil
}

// hasLangBlock reports whether text has a block fenced as lang.
func hasLangBlock(text, lang string) bool {
	for _, b := range parse.CodeBlocks(text) {
		if b.Lang == lang && strings.TrimSpace(b.Code) != "" {
			return true
		}
	}
	return false
}

// toChat is the dialogue as the model sees it (execution turns as user
// messages with the export's prefix).
func toChat(msgs []schema.Message) []llm.Message {
	var out []llm.Message
	for _, m := range msgs {
		switch m.Role {
		case schema.RoleAssistant:
			out = append(out, llm.Assistant(m.Content))
		case schema.RoleExecution:
			out = append(out, llm.User(schema.ExecutionPrefix+m.Content))
		case schema.RoleSystem:
			out = append(out, llm.System(m.Content))
		default:
			out = append(out, llm.User(m.Content))
		}
	}
	return out
}

var langNames = map[string]string{"javascript": "JavaScript", "typescript": "TypeScript", "cpp": "C++", "go": "Go",
	"java": "Java", "rust": "Rust", "c": "C", "csharp": "C#", "kotlin": "Kotlin", "swift": "Swift", "ruby": "Ruby"}

func languageName(l string) string {
	if n, ok := langNames[l]; ok {
		return n
	}
	return l
}

// fatal reports whether a model error must stop the stage (budget spent,
// run cancelled) rather than drop one dialogue.
func fatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, llm.ErrBudgetExceeded)
}
