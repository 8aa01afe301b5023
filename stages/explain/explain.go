// Package explain adds a natural-language preface to every assistant turn
// of a dialogue that carries code: what the code does and how, answering the
// latest user turn, without repeating earlier turns. The model writes only
// the preface; the stage places it in front of the turn's existing content,
// so the code is never rewritten. Every preface passes a gate
// (internal/gates.Preface): prose without code, not a transition phrase
// ("Good point. Here's the updated code:"), long enough, naming something
// the code does. A preface that fails is sent back for repair a bounded
// number of times; if it still fails, the turn stays unexplained and the
// rejection is counted and labelled. Nothing is stripped and kept. Every
// explained turn is verified to end with its original content and to hold
// exactly the original code blocks, byte for byte, and a dialogue that
// fails the check is an error, never output.
package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Label keys the stage sets on an explained dialogue.
const (
	LabelExplained = "explained_turns"     // number of turns that got a preface
	LabelRejected  = "explain_rejected"    // turns left unexplained because every preface failed the gate
	LabelOwnProse  = "explained_by_writer" // turns whose own prose already explained the code (no preface added)
	LabelReasons   = "explain_rejected_reasons"
	LabelSample    = "explain_rejected_sample" // the first rejected preface, cut short
	LabelModel     = "explain_model"
)

// Gate is the name of the preface gate in the stage's statistics.
const Gate = "preface"

// ErrCodeChanged means an explained turn's code differs from the original:
// the dialogue is not output.
var ErrCodeChanged = errors.New("explain: code changed")

// Explainer writes prefaces with a model. Safe for concurrent use when Chat is.
type Explainer struct {
	Chat llm.Chatter
	// Repairs bounds the repair requests after a preface with a code block.
	Repairs int
	// ContextChars caps each earlier turn shown to the model (head and tail kept).
	ContextChars int
	// MinChars is the shortest preface accepted.
	MinChars int
	// Sentences is the preface length asked for, e.g. "two to four".
	Sentences string

	system, request, repair prompts.Template
}

// Report says what Explain did to one dialogue.
type Report struct {
	Turns    int // assistant turns that got a preface
	Already  int // turns whose own prose before the code already explains it (no call made)
	Rejected []gates.Verdict
	Repairs  int // repair requests sent
	Model    string
}

// PromptNames are the templates the stage uses.
var PromptNames = []string{"explain_system", "explain_request", "explain_repair"}

// New returns an Explainer with defaults for zero settings.
func New(chat llm.Chatter, repairs int) (*Explainer, error) {
	e := &Explainer{Chat: chat, Repairs: repairs, ContextChars: 3000, MinChars: 20, Sentences: "two to four"}
	var err error
	if e.system, err = prompts.Get("explain_system"); err != nil {
		return nil, err
	}
	if e.request, err = prompts.Get("explain_request"); err != nil {
		return nil, err
	}
	if e.repair, err = prompts.Get("explain_repair"); err != nil {
		return nil, err
	}
	return e, nil
}

// HasCode reports whether content holds a fenced code block with code in it.
func HasCode(content string) bool {
	for _, b := range parse.CodeBlocks(content) {
		if strings.TrimSpace(b.Code) != "" {
			return true
		}
	}
	return false
}

// Explain returns d with a preface in front of every assistant turn that
// carries code and got a preface through the gate; turns whose prefaces
// all failed stay as they were and are listed in the Report and labels. d
// is not modified. Errors: model errors (wrapped llm errors), a
// *llm.ParseError when an answer stayed empty or a refusal, and
// ErrCodeChanged (which should never happen: it guards the contract).
func (e *Explainer) Explain(ctx context.Context, d schema.Dialogue) (schema.Dialogue, Report, error) {
	out := d
	out.Messages = append([]schema.Message(nil), d.Messages...)
	var rep Report
	for i, m := range out.Messages {
		if m.Role != schema.RoleAssistant || !HasCode(m.Content) {
			continue
		}
		if Explained(m.Content, e.MinChars) && (!firstReply(out.Messages[:i]) || gates.NamesPurpose(strings.Split(m.Content, "```")[0], latestRequest(out.Messages[:i]))) {
			// The writer already explained its code before it: a second
			// preface would only repeat it. A first reply's own prose that
			// never says what the code is for gets a preface that does.
			rep.Already++
			continue
		}
		pre, v, r, err := e.preface(ctx, out.Messages[:i], m.Content, out.Messages[i+1:])
		rep.Repairs += r.Repairs
		if r.Model != "" {
			rep.Model = r.Model
		}
		if err != nil {
			return schema.Dialogue{}, rep, fmt.Errorf("explain: turn %d of %s: %w", i, d.ID, err)
		}
		if !v.OK() {
			rep.Rejected = append(rep.Rejected, v)
			continue
		}
		rep.Turns++
		content := pre + "\n\n" + m.Content
		if err := SameCode(m.Content, content); err != nil {
			return schema.Dialogue{}, rep, fmt.Errorf("explain: turn %d of %s: %w", i, d.ID, err)
		}
		out.Messages[i].Content = content
	}
	if rep.Turns > 0 || len(rep.Rejected) > 0 || rep.Already > 0 {
		labels := make(map[string]string, len(d.Labels)+6)
		for k, v := range d.Labels {
			labels[k] = v
		}
		labels[LabelExplained] = fmt.Sprint(rep.Turns)
		if rep.Already > 0 {
			labels[LabelOwnProse] = fmt.Sprint(rep.Already)
		}
		if n := len(rep.Rejected); n > 0 {
			labels[LabelRejected] = fmt.Sprint(n)
			var rs []string
			for _, v := range rep.Rejected {
				rs = append(rs, v.Reason)
			}
			labels[LabelReasons] = strings.Join(rs, ",")
			labels[LabelSample] = gates.Cut(rep.Rejected[0].Detail, 160)
		}
		if rep.Model != "" {
			labels[LabelModel] = rep.Model
		}
		out.Labels = labels
	}
	return out, rep, nil
}

// alreadyChars is how much prose before a turn's first code block counts
// as the turn's own explanation (a one-line lead-in such as "Here is the
// function:" does not).
const alreadyChars = 120

// Explained reports whether content already opens with an explanation of
// its code: at least alreadyChars of prose before the first code block that
// pass the preface gate (prose, not a transition, naming the code).
func Explained(content string, minChars int) bool {
	i := strings.Index(content, "```")
	if i < 0 {
		return false
	}
	pre := strings.TrimSpace(content[:i])
	if len(pre) < max(alreadyChars, minChars) {
		return false
	}
	var code strings.Builder
	for _, b := range parse.CodeBlocks(content) {
		code.WriteString(b.Code + "\n")
	}
	return gates.Preface(pre, code.String(), minChars).OK()
}

// SameCode checks that explained ends with original byte for byte and holds
// exactly original's code blocks (language and code), in order.
func SameCode(original, explained string) error {
	if !strings.HasSuffix(explained, original) {
		return fmt.Errorf("%w: the original content is not kept verbatim", ErrCodeChanged)
	}
	a, b := parse.CodeBlocks(original), parse.CodeBlocks(explained)
	if len(a) != len(b) {
		return fmt.Errorf("%w: %d code blocks before, %d after", ErrCodeChanged, len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("%w: code block %d differs", ErrCodeChanged, i+1)
		}
	}
	return nil
}

// gateError is a preface the gate rejected; its text goes to the repair
// prompt.
type gateError struct{ v gates.Verdict }

func (g gateError) Error() string {
	switch g.v.Reason {
	case "code":
		return "the preface contains code"
	case "transition":
		return "the preface opens with a transition phrase instead of explaining the code"
	case "too_short":
		return "the preface is too short to explain anything"
	case "unrelated":
		return "the preface does not name anything the code does (no function, variable or step of it)"
	case "filler":
		return "the preface claims the code fits the request (" + fmt.Sprintf("%q", g.v.Detail) + ") instead of saying what it does; leave that phrase out"
	case "presents_fault":
		quoted, _, _ := strings.Cut(g.v.Detail, "\n")
		return "the preface describes, as what the code should do, a part of the code that the run after it shows to be wrong (" + quoted + "); say what the code is meant to do and how it sets about it, without describing that part"
	case "no_purpose":
		return "the preface walks through the code's lines but never says, in the task's own terms, what the code computes and why its approach gives the right answer"
	}
	return "the preface fails the check: " + g.v.Reason
}

// preface asks for the preface of reply given the turns before it. A
// preface the gate still rejects after the repairs comes back as a failed
// verdict (not an error) with an empty text.
//
// after are the turns that follow the reply: when its run fails and a
// later turn fixes the code, the preface may not present the part the fix
// replaces as the plan (the reply's code holds a planted or a first
// attempt's fault, which a reader must not learn as the goal).
func (e *Explainer) preface(ctx context.Context, before []schema.Message, reply string, after []schema.Message) (string, gates.Verdict, Report, error) {
	var rep Report
	// The model sees every earlier turn (so it does not repeat them and
	// knows the run results) and, named apart, the request being answered.
	req, history := latestRequest(before), before
	if req == "" {
		req = "(no request: the conversation opens with this reply)"
	}
	// The first reply to a task is where a reader learns what the code is
	// for: its preface must say so in the task's terms.
	first := firstReply(before)
	failure, fixed := Fixed(after)
	prompt, err := e.request.Render(map[string]any{
		"History": e.renderHistory(history), "Request": strings.TrimSpace(req),
		"Reply": reply, "Sentences": e.Sentences, "Failure": cutMiddle(failure, 600)})
	if err != nil {
		return "", gates.Verdict{}, rep, err
	}
	system, err := e.system.Render(nil)
	if err != nil {
		return "", gates.Verdict{}, rep, err
	}
	var code strings.Builder
	for _, b := range parse.CodeBlocks(reply) {
		code.WriteString(b.Code + "\n")
	}
	repair := func(perr error) string {
		rep.Repairs++
		s, err := e.repair.Render(map[string]any{"Problem": perr.Error()})
		if err != nil {
			return perr.Error()
		}
		return strings.TrimSpace(s)
	}
	text, resp, err := llm.ChatParse(ctx, e.Chat, llm.Request{Messages: []llm.Message{
		llm.System(strings.TrimSpace(system)), llm.User(strings.TrimSpace(prompt))}},
		e.Repairs, repair, func(t string) (string, error) {
			if err := parse.Check(t); err != nil {
				return "", err
			}
			t = strings.TrimSpace(t)
			if v := gates.Preface(t, code.String(), e.MinChars); !v.OK() {
				return "", gateError{v}
			}
			if f := gates.Filler(t); f != "" {
				return "", gateError{gates.Verdict{Reason: "filler", Detail: f}}
			}
			if quoted := gates.FaultQuoted(t, code.String(), fixed); len(quoted) > 0 {
				return "", gateError{gates.Verdict{Reason: "presents_fault", Detail: strings.Join(quoted, ", ") + "\n" + t}}
			}
			if first && !gates.NamesPurpose(t, req) {
				// "a loop takes i ... it returns t" says what any reader
				// of the code sees, nothing of what it is for.
				return "", gateError{gates.Verdict{Reason: "no_purpose", Detail: t}}
			}
			return t, nil
		})
	rep.Model = resp.Model
	var ge gateError
	if errors.As(err, &ge) {
		return "", ge.v, rep, nil // out of repairs: the turn stays unexplained
	}
	var pe *llm.ParseError
	if errors.As(err, &pe) {
		// Empty or a refusal after every repair: this turn stays
		// unexplained; the dialogue is not lost for it.
		return "", gates.Verdict{Reason: "unreadable", Detail: pe.Raw}, rep, nil
	}
	if err != nil {
		return "", gates.Verdict{}, rep, err
	}
	return text, gates.Verdict{}, rep, nil
}

// Fixed reads the turns after a reply: when its run failed (an error, a
// failing test, or a judge's reason given as the next user turn) and the
// next assistant turn changes the code, it returns the failing run's text
// and the code of that fix; otherwise "", "".
func Fixed(after []schema.Message) (failure, fixed string) {
	if len(after) == 0 || after[0].Role != schema.RoleExecution {
		return "", ""
	}
	run := after[0]
	failed := run.Exec != nil && (run.Exec.ExitCode != 0 || run.Exec.Exception != "" || run.Exec.TimedOut || run.Exec.Passed != nil && !*run.Exec.Passed)
	rest := after[1:]
	if len(rest) > 0 && rest[0].Role == schema.RoleUser && rest[0].Feedback == nil && strings.HasPrefix(rest[0].Content, judgedLead) {
		failed = true
		failure = rest[0].Content
		rest = rest[1:]
	}
	if !failed || len(rest) == 0 || rest[0].Role != schema.RoleAssistant {
		return "", ""
	}
	var code strings.Builder
	for _, b := range parse.CodeBlocks(rest[0].Content) {
		code.WriteString(b.Code + "\n")
	}
	if code.Len() == 0 {
		return "", ""
	}
	if failure == "" {
		failure = run.Content
	}
	return failure, code.String()
}

// judgedLead is feedbackloop.JudgedLead (the user turn with a judge's
// reason), kept here so the stage does not depend on the loop.
const judgedLead = "I checked the code against the task, and it is not there yet: "

// latestRequest is the last user turn of msgs, or "".
func latestRequest(msgs []schema.Message) string {
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == schema.RoleUser {
			return msgs[j].Content
		}
	}
	return ""
}

// firstReply reports whether a reply after msgs is the dialogue's first.
func firstReply(msgs []schema.Message) bool {
	return !slices.ContainsFunc(msgs, func(m schema.Message) bool { return m.Role == schema.RoleAssistant })
}

// renderHistory shows earlier turns to the model, each cut to ContextChars.
func (e *Explainer) renderHistory(msgs []schema.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		who := "User"
		switch m.Role {
		case schema.RoleAssistant:
			who = "Assistant"
		case schema.RoleExecution:
			who = "Execution result"
		case schema.RoleSystem:
			who = "System"
		}
		fmt.Fprintf(&b, "[%s]\n%s\n\n", who, cutMiddle(strings.TrimSpace(m.Content), e.ContextChars))
	}
	return strings.TrimSpace(b.String())
}

func cutMiddle(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	h, t := n/2, len(s)-n/2
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h] + fmt.Sprintf("\n[... %d bytes not shown ...]\n", t-h) + s[t:]
}
