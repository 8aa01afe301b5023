package feedbackloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// formRepair is a repair prompt that says what was wrong and restates the
// exact JSON form the answer must take: a model that wrapped its JSON in
// prose or renamed a key sees again what is expected.
func formRepair(form string) llm.RepairPrompt {
	return func(perr error) string {
		return fmt.Sprintf("Your previous answer could not be used: %v.\nAnswer the same request again with only one JSON object of exactly this form, with nothing before or after it:\n%s", perr, form)
	}
}

// unreadable turns a ChatParse failure into a gate verdict: the gate's own
// verdict when a gate rejected the last answer, else "unreadable" with the
// raw answer. Other errors (transport, budget) are returned as they are.
func unreadable(err error) (gates.Verdict, error) {
	var ge gateError
	if errors.As(err, &ge) {
		return ge.v, nil
	}
	var pe *llm.ParseError
	if errors.As(err, &pe) {
		return gates.Verdict{Reason: "unreadable", Detail: pe.Raw}, nil
	}
	return gates.Verdict{}, err
}

// judgeAnswer is the judge model's JSON verdict.
type judgeAnswer struct {
	Correct *bool  `json:"correct"`
	Reason  string `json:"reason"`
}

const judgeForm = `{"correct": true or false, "reason": "one or two sentences saying why"}
where "correct" is the JSON boolean true or false (not a string).`

// judge asks the judge model whether code answers request, given its real
// output (ran) or why it was not run. An answer still unreadable after the
// repairs is a failing verdict (recorded under GateJudge), not an error.
func (r *run) judge(ctx context.Context, request, code, output string, ran bool) (bool, string, gates.Verdict, error) {
	if r.s.Judge == nil {
		return false, "", gates.Verdict{}, errors.New("simulate: this task has no tests and no judge model is configured")
	}
	prompt, err := r.s.prompts["judge_request"].render(map[string]any{
		"Task": request, "Language": r.lang, "Code": code, "Output": output, "Ran": ran})
	if err != nil {
		return false, "", gates.Verdict{}, err
	}
	a, _, err := llm.ChatParse(ctx, r.s.Judge, llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{JSONMode: true}},
		repairs, formRepair(judgeForm), func(text string) (judgeAnswer, error) {
			var a judgeAnswer
			if err := parse.JSON(text, &a); err != nil {
				return a, err
			}
			if a.Correct == nil {
				return a, errors.New(`the JSON has no boolean "correct"`)
			}
			if !*a.Correct && !gates.ReadableReason(gates.CleanReason(a.Reason)) {
				// A rejection that names nothing would reach the dialogue
				// as a claim of a fault no one can point at.
				return a, gateError{gates.Verdict{Reason: "no_reason", Detail: text},
					`the answer says the code is wrong but its "reason" does not say what is wrong; name the wrong result or the line at fault in one or two sentences, or say true if nothing is wrong`}
			}
			return a, nil
		})
	if err != nil {
		v, err := unreadable(err)
		if err != nil {
			return false, "", gates.Verdict{}, fmt.Errorf("simulate: judge: %w", err)
		}
		r.check(GateJudge, v)
		return false, "", v, nil
	}
	r.check(GateJudge, gates.Verdict{})
	return *a.Correct, gates.CleanReason(a.Reason), gates.Verdict{}, nil
}

// close appends the assistant's reply to an accepted run: the writer's own
// prose (Closing "model"), or a templated sentence when the writer's reply
// fails its gate after repairs or Closing is "template".
func (r *run) close(ctx context.Context, turn Turn) error {
	if !r.runnable {
		return nil // no run to reply to; the answer carries its own summary
	}
	n := 0
	if turn.Problem != nil && r.lang == "python" {
		n = len(turn.Problem.Tests)
	}
	// The closing names the function the tests call: a companion the
	// example line also ran is not what they checked. Without tests it
	// names the last function the run called: a companion defined after
	// the example's call and never called has shown nothing.
	name := ""
	ms := defNameRe.FindAllStringSubmatch(r.code, -1)
	var harness []string
	if n > 0 {
		harness = harnessCalls(turn)
		for i := len(ms) - 1; i >= 0 && name == ""; i-- {
			if slices.Contains(harness, ms[i][1]) {
				name = ms[i][1]
			}
		}
	}
	reached := gates.Reached(r.code, harness...)
	for i := len(ms) - 1; i >= 0 && name == ""; i-- {
		if reached[ms[i][1]] {
			name = ms[i][1]
		}
	}
	if name == "" && len(ms) > 0 {
		name = ms[len(ms)-1][1]
	}
	if turn.Problem != nil && turn.Problem.EntryPoint != "" {
		name = turn.Problem.EntryPoint
	}
	// A test-less run that printed nothing shows nothing: its closing may
	// say the code ran and what it defines, never that an output matched.
	silent := n == 0 && strings.TrimSpace(r.output) == SilentRun
	if r.s.opts.Closing == ClosingModel {
		text, v, err := r.summary(ctx, n, name, silent, harness)
		if err != nil {
			return err
		}
		r.check(GateClosing, v)
		if v.OK() {
			r.add(schema.Message{Role: schema.RoleAssistant, Content: text})
			return nil
		}
	}
	// The templated sentence is one of several phrasings: the first, from
	// the drawn one on, that this dialogue has not said yet.
	variant := int(unit(fmt.Sprintf("%d\x00%s\x00closing\x00%d", r.s.opts.Seed, r.task.ID, len(r.msgs))) * closingVariants)
	said := r.said()
	var text string
	for i := range closingVariants {
		t, err := r.s.prompts["simulate_closing"].render(map[string]any{"Tests": n, "Name": name, "Variant": (variant + i) % closingVariants, "Silent": silent})
		if err != nil {
			return err
		}
		if text = strings.TrimSpace(t); !said[sameWords(text)] {
			break
		}
	}
	r.add(schema.Message{Role: schema.RoleAssistant, Content: text})
	return nil
}

// said is the set of the dialogue's assistant turns so far, as sameWords
// keys.
func (r *run) said() map[string]bool {
	m := map[string]bool{}
	for _, msg := range r.msgs {
		if msg.Role == schema.RoleAssistant {
			m[sameWords(msg.Content)] = true
		}
	}
	return m
}

// sameWords is text with case and white space folded: two replies equal
// under it say the same thing word for word.
func sameWords(text string) string { return strings.Join(strings.Fields(strings.ToLower(text)), " ") }

// A closing may claim only what the run showed: tests where none ran, or
// an output where the run printed nothing, teach a model to report checks
// it never made.
var (
	claimsChecksRe = regexp.MustCompile(`(?i)\b(all|every|each|the|its|both|three|two) (of the )?(tests?|checks?|assertions?|test cases?)\b[^.]*\b(pass|passed|passes|hold|held|succeed)|\b(tests?|checks?) (above |below )?(pass|passed|confirm)|\beverything passes\b|\bthe (checks?|tests?) (above|below|compared|confirm\w*|show\w*)`)
	// outputTellsTestsRe: a run whose own output reports checks (code with
	// its own asserts printing "tests passed") may be closed by naming them.
	outputTellsTestsRe = regexp.MustCompile(`(?i)\b(tests?|checks?|assert\w*|pass(ed)?|ok)\b`)
	claimsOutputRe     = regexp.MustCompile(`(?i)\b(output|printed|prints|result shown|shows the (expected|correct|right))\b[^.]*\b(match|matches|matched|expected|correct|confirms?|shows?)\b|\b(the output|what it printed) (confirms|shows|matches)|\b(gives|gave|produced|produces) the (expected|correct|right) (result|value|output|answer)`)
)

// claimsChangeRe: a closing that says the code was changed ("the change
// asked for is in", "the revised version", "I updated it").
var claimsChangeRe = regexp.MustCompile(`(?i)\bthe (change|fix|update|revision)s?( you| the user)?( asked for| requested)? (is|are) (in|made|done|applied)\b|\b(revised|updated|changed|modified|new|improved|fixed) (version|code|function|implementation)\b|\bi('ve| have)? (revised|updated|changed|modified|improved|rewrote|refactored)\b|\bas revised\b|\bnow (handles|uses|checks|raises|avoids|keeps|runs)\b`)

// kept reports whether the round under way ends with the code it began
// with: its closing may say so, not that something changed.
func (r *run) kept() bool { return r.before != "" && gates.SameCode(r.before, r.code) }

// closingVerdict checks a prose reply to an accepted run: tests is the
// number of tests that ran, output the run's execution turn; kept says
// the round kept the code as it was; code is the code the run ran.
// said holds the dialogue's earlier assistant turns (sameWords keys): a
// closing that repeats one word for word ("The run confirms it: ..." after
// every round) teaches a model to answer by rote. harness names the
// functions the run's tests call besides the code's own lines.
func closingVerdict(text string, tests int, output string, said map[string]bool, kept bool, code string, harness ...string) gates.Verdict {
	silent := tests == 0 && strings.TrimSpace(output) == SilentRun
	switch {
	case gates.UncalledClaim(text, code, harness...) != "":
		// "The output confirms that `f_all` works" of a function the run
		// never called: the output says nothing of it.
		return gates.Verdict{Reason: "claims_uncalled", Detail: gates.UncalledClaim(text, code, harness...)}
	case gates.FalseOnePass(text, code) != "":
		// "It works through its input once" of code that recurses or
		// nests loops is a false account of what the code costs.
		return gates.Verdict{Reason: "claims_one_pass", Detail: gates.FalseOnePass(text, code)}
	case kept && claimsChangeRe.MatchString(text):
		return gates.Verdict{Reason: "claims_unmade_change", Detail: text}
	case said[sameWords(text)]:
		return gates.Verdict{Reason: "repeats_earlier_turn", Detail: text}
	case gates.HasCode(text):
		return gates.Verdict{Reason: "code", Detail: text}
	case ThanksOutput(text) || gates.Transition(text):
		return gates.Verdict{Reason: "thanks_to_output", Detail: text}
	case len(text) < minClosing:
		return gates.Verdict{Reason: "too_short", Detail: text}
	case tests == 0 && claimsChecksRe.MatchString(text) && !outputTellsTestsRe.MatchString(output):
		return gates.Verdict{Reason: "claims_unrun_tests", Detail: text}
	case silent && claimsOutputRe.MatchString(text):
		return gates.Verdict{Reason: "claims_unseen_output", Detail: text}
	case gates.Filler(text) != "":
		// "..., which is what the task asks for" says nothing the run
		// showed; said in every closing, it is what a model learns.
		return gates.Verdict{Reason: "filler", Detail: gates.Filler(text)}
	}
	return gates.Verdict{}
}

// minClosing is the shortest prose reply to a run that says something.
const minClosing = 60

// summary asks the writer to reply to the accepted run in prose; the
// request is not part of the dialogue, the reply is.
func (r *run) summary(ctx context.Context, tests int, name string, silent bool, harness []string) (string, gates.Verdict, error) {
	prompt, err := r.s.prompts["simulate_summary"].render(map[string]any{"Tests": tests, "Name": name, "Silent": silent, "Kept": r.kept()})
	if err != nil {
		return "", gates.Verdict{}, err
	}
	conv := append(slices.Clip(r.conv), llm.User(strings.TrimSpace(prompt)))
	said := r.said()
	for try := 0; ; try++ {
		resp, err := r.s.Writer.Chat(ctx, llm.Request{Messages: conv})
		if err != nil {
			return "", gates.Verdict{}, fmt.Errorf("simulate: writer: %w", err)
		}
		text := strings.TrimSpace(resp.Text)
		v := closingVerdict(text, tests, r.output, said, r.kept(), r.code, harness...)
		if v.OK() || try >= repairs {
			return text, v, nil
		}
		repair := fmt.Sprintf(
			"Your reply could not be used (%s). Answer again in this form: two to four sentences of plain prose, at least %d characters, that say what the output shows and what the code does; no code, no code block, and no thanks: the output comes from the program, not a person.",
			v.Reason, minClosing)
		switch {
		case v.Reason == "repeats_earlier_turn" && r.kept():
			repair = fmt.Sprintf("Your reply could not be used: it repeats, word for word, one you gave earlier in this conversation. Answer again in two to four sentences of plain prose, at least %d characters, about this run: what it shows, and that the code was kept as it was in this round (it has not changed since the earlier run); no code and no code block.", minClosing)
		case v.Reason == "repeats_earlier_turn":
			repair = fmt.Sprintf("Your reply could not be used: it repeats, word for word, one you gave earlier in this conversation. Answer again in two to four sentences of plain prose, at least %d characters, about this run: what it shows and what changed in the code since the earlier run; no code and no code block.", minClosing)
		case v.Reason == "claims_one_pass":
			repair = fmt.Sprintf("Your reply could not be used: it says the code goes over its input once (%q), but the code calls itself or runs more than one loop over it. Answer again in two to four sentences of plain prose, at least %d characters, that say what the run shows and describe how the code works as its lines show it; no code and no code block.", v.Detail, minClosing)
		case v.Reason == "claims_uncalled":
			repair = fmt.Sprintf("Your reply could not be used: it says the run showed something of a function the code defines but never calls (%q), so the output says nothing of it. Answer again in two to four sentences of plain prose, at least %d characters, that say what the output shows of the functions the run called, and that the other one was not called; no code and no code block.", v.Detail, minClosing)
		case v.Reason == "filler":
			repair = fmt.Sprintf("Your reply could not be used: it says the code fits the request (%q) instead of saying what the run shows. Answer again in two to four sentences of plain prose, at least %d characters, that say what the output shows and what the code does; no stock phrase about what the task asks for, no code and no code block.", v.Detail, minClosing)
		case v.Reason == "claims_unmade_change":
			repair = fmt.Sprintf("Your reply could not be used: it says the code was changed, but this round kept it exactly as it was. Answer again in two to four sentences of plain prose, at least %d characters, that say what the run shows and that the code stayed the same; no code and no code block.", minClosing)
		}
		conv = append(slices.Clip(conv), llm.Assistant(text), llm.User(repair))
	}
}

// feedbackAnswer is the feedback model's JSON, read tolerantly (see
// parseFeedback).
type feedbackAnswer struct {
	Category string   `json:"category,omitempty"` // as the model named it
	Met      []string `json:"met"`
	Missed   []string `json:"missed"`
	Feedback string   `json:"feedback"`
}

// gateError is a model answer a gate rejected; msg goes to the repair prompt.
type gateError struct {
	v   gates.Verdict
	msg string
}

func (g gateError) Error() string { return g.msg }

// feedback asks for one simulated human feedback turn aimed at a drawn
// category. The answer passes two gates, with repairs that restate the
// JSON form: it holds no code (a user describes the change, the writer
// makes it), and the category the model says it aimed at is the drawn one.
// A failing verdict (no error) means the round is dropped.
func (r *run) feedback(ctx context.Context, last Turn, round int) (schema.Message, gates.Verdict, error) {
	if r.s.Feedback == nil {
		return schema.Message{}, gates.Verdict{}, errors.New("simulate: feedback_rounds > 0 needs a feedback model")
	}
	key := fmt.Sprintf("%d\x00%s\x00%d", r.s.opts.Seed, r.task.ID, round)
	cat := schema.FeedbackCategories[pick(r.s.weights, unit(key+"\x00category"))]
	oracle := r.task.Solution != "" && unit(key+"\x00oracle") < r.s.opts.Oracle
	solution := ""
	if oracle {
		solution = strings.TrimRight(r.task.Solution, "\n")
	}
	names := make([]string, len(schema.FeedbackCategories))
	for i, c := range schema.FeedbackCategories {
		names[i] = categoryName(c)
	}
	prompt, err := r.s.prompts["feedback_request"].render(map[string]any{
		"Task": last.Text, "Language": r.lang, "Code": r.code, "Output": r.output, "Solution": solution,
		"Categories": strings.Join(names, ", "), "Category": categoryName(cat)})
	if err != nil {
		return schema.Message{}, gates.Verdict{}, err
	}
	form := fmt.Sprintf(`{"category": %q, "met": ["goals the code meets"], "missed": ["goals the code misses"], "feedback": "your message to the assistant: one to three sentences in plain words, with no code"}`, categoryName(cat))
	a, _, err := llm.ChatParse(ctx, r.s.Feedback, llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{JSONMode: true}},
		repairs, formRepair(form), func(text string) (feedbackAnswer, error) {
			a, err := parseFeedback(text)
			if err != nil {
				return a, err
			}
			if gates.HasCode(a.Feedback) {
				return a, gateError{gates.Verdict{Reason: "feedback_code", Detail: a.Feedback},
					"the feedback contains code; describe the change in words only, without code blocks or code lines"}
			}
			if c := canonicalCategory(a.Category); a.Category != "" && c != cat {
				return a, gateError{gates.Verdict{Reason: "feedback_category", Detail: fmt.Sprintf("asked for %s, got %q: %s", cat, a.Category, a.Feedback)},
					fmt.Sprintf("the feedback is aimed at %q, but it must be aimed at %q; write feedback about %s", a.Category, categoryName(cat), categoryName(cat))}
			}
			return a, nil
		})
	if err != nil {
		v, err := unreadable(err)
		if err != nil {
			return schema.Message{}, gates.Verdict{}, fmt.Errorf("simulate: feedback model: %w", err)
		}
		return schema.Message{}, v, nil
	}
	a.Category = cat
	body, err := json.Marshal(a)
	if err != nil {
		return schema.Message{}, gates.Verdict{}, fmt.Errorf("simulate: encode feedback: %w", err)
	}
	fb := schema.Feedback{Category: cat, Oracle: oracle, Body: body}
	return schema.Message{Role: schema.RoleUser, Content: strings.TrimSpace(a.Feedback), Feedback: &fb}, gates.Verdict{}, nil
}

// keptRounds plays rounds 1..n after the accepted answer last, in order,
// and returns the label (follow-up kind or feedback category) of each
// round play kept; a dropped round leaves no label.
func keptRounds(ctx context.Context, last Turn, n int, play func(context.Context, Turn, int) (string, bool, error)) ([]string, error) {
	var labels []string
	for i := 1; i <= n; i++ {
		label, kept, err := play(ctx, last, i)
		if err != nil {
			return nil, err
		}
		if kept {
			labels = append(labels, label)
		}
	}
	return labels, nil
}

// feedbackRound runs feedback round n on the last turn's accepted code.
func (r *run) feedbackRound(ctx context.Context, last Turn, n int) (string, bool, error) {
	label := fmt.Sprintf("fb%d", n)
	mark := r.save()
	msg, v, err := r.feedback(ctx, last, n)
	if err != nil {
		return "", false, err
	}
	if !v.OK() {
		r.reject(mark, GateFeedback, label, v)
		return "", false, nil
	}
	kept, err := r.round(ctx, mark, GateFeedback, label, msg, last, "")
	return msg.Feedback.Category, kept, err
}

// followupAnswer is the follow-up model's JSON.
type followupAnswer struct {
	Kind    string `json:"kind"`
	Request string `json:"request"`
}

// followup runs follow-up n: the user simulator asks a new request of a
// drawn kind that builds on the accepted code, the writer answers it with
// code that runs again (against the problem's tests, where it has them).
func (r *run) followup(ctx context.Context, last Turn, n int) (string, bool, error) {
	if r.s.Feedback == nil {
		return "", false, errors.New("simulate: followups > 0 needs a feedback model (it plays the user)")
	}
	label := fmt.Sprintf("fu%d", n)
	kind := FollowupKinds[pick(r.s.fuWeights, unit(fmt.Sprintf("%d\x00%s\x00followup\x00%d", r.s.opts.Seed, r.task.ID, n)))]
	mark := r.save()
	prompt, err := r.s.prompts["followup_request"].render(map[string]any{
		"Task": last.Text, "Language": r.lang, "Code": r.code, "Output": r.output,
		"Kind": kind, "Description": followupDescriptions[kind]})
	if err != nil {
		return "", false, err
	}
	form := fmt.Sprintf(`{"kind": %q, "request": "your follow-up request to the assistant: one to three sentences in plain words, with no code"}`, kind)
	a, _, err := llm.ChatParse(ctx, r.s.Feedback, llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{JSONMode: true}},
		repairs, formRepair(form), func(text string) (followupAnswer, error) {
			var a followupAnswer
			if err := parse.JSON(text, &a); err != nil {
				return a, err
			}
			a.Request = strings.TrimSpace(a.Request)
			if a.Request == "" {
				return a, errors.New(`the JSON has no "request" text`)
			}
			if gates.HasCode(a.Request) {
				return a, gateError{gates.Verdict{Reason: "followup_code", Detail: a.Request},
					"the request contains code; ask for the change in words only, without code blocks or code lines"}
			}
			if k := strings.ToLower(strings.TrimSpace(a.Kind)); k != "" && strings.ReplaceAll(k, " ", "_") != kind {
				return a, gateError{gates.Verdict{Reason: "followup_kind", Detail: fmt.Sprintf("asked for %s, got %q: %s", kind, a.Kind, a.Request)},
					fmt.Sprintf("the request is of kind %q, but it must be of kind %q (%s)", a.Kind, kind, followupDescriptions[kind])}
			}
			return a, nil
		})
	if err != nil {
		v, err := unreadable(err)
		if err != nil {
			return "", false, fmt.Errorf("simulate: follow-up model: %w", err)
		}
		r.reject(mark, GateFollowup, label, v)
		return "", false, nil
	}
	turn := Turn{Text: a.Request, Problem: last.Problem}
	kept, err := r.round(ctx, mark, GateFollowup, label, schema.Message{Role: schema.RoleUser, Content: a.Request}, turn, kind)
	return kind, kept, err
}

// round adds the user turn msg (feedback or a follow-up request) and runs
// the write-run-fix loop on turn's judge. A round whose revision fails a
// gate after its repairs, or never passes, is taken back whole and counted
// under gate; a kept round is counted as passing and closed.
func (r *run) round(ctx context.Context, m mark, gate, label string, msg schema.Message, turn Turn, kind string) (bool, error) {
	said := r.said()
	r.add(msg)
	before, asked := m.code, msg.Content
	r.before = before
	defer func() { r.before = "" }()
	// A test copied from a task's own example checks what the dialogue
	// already showed passing: only tests beyond the code before and the
	// requests' examples count as new.
	shown := before
	for _, tt := range r.task.Turns {
		shown += "\n" + tt.Text
	}
	var probeErr error
	unchanged := func(text, code string) (gates.Verdict, string) {
		var v gates.Verdict
		if said[sameWords(text)] {
			// The same reply to a new request, word for word: rote.
			return gates.Verdict{Reason: "repeats_earlier_turn", Detail: text},
				fmt.Sprintf("Your answer could not be used: it repeats, word for word, an answer you gave earlier in this conversation, but the user has made a new request. Answer this request: say what you change and why (or why the code must stay as it is), then the complete code in one ```%s block, then a short summary.", r.lang)
		}
		if kind == "explain" {
			// comments are the change asked for: any edit of the text counts
			if strings.TrimSpace(code) == strings.TrimSpace(before) && !gates.ExplainsNoChange(text) {
				v = gates.Verdict{Reason: "unchanged_revision", Detail: text}
			} else if r.lang == "python" && gates.DocText(code) != gates.DocText(before) && !gates.ExplainsCode(before, code) {
				// "Build the result in steps" explains nothing of this code.
				v = gates.Verdict{Reason: "explanation_names_no_code", Detail: fmt.Sprintf("asked: %s\nadded: %s", asked, gates.Cut(gates.DocText(code), 400))}
				return v, fmt.Sprintf("Your answer could not be used: the user asked how the code works, but the comments and docstring you added name nothing of it. Answer again: the complete code in one ```%s block whose comments or docstring say how it works in terms of the code itself (its variables, loops, conditions and what it returns), then a short summary.", r.lang)
			}
		} else {
			v = revisionVerdict(before, code, asked, text, kind)
		}
		if v.OK() && kind == "tests" && r.lang == "python" && gates.BehaviourTests(shown, code) == 0 {
			v = gates.Verdict{Reason: "no_behaviour_tests", Detail: text}
			return v, fmt.Sprintf("Your answer could not be used: the user asked for tests, but no new test calls the code with inputs and checks its result (an assert such as `assert callable(f)` checks nothing, and the task's own example has already passed). Answer again: the complete code in one ```%s block ending with assert-based tests that call the function on inputs other than the task's example, a typical one and an edge case, and compare the results with the expected values, then a short summary.", r.lang)
		}
		if v.OK() && r.lang == "python" && gates.AsksToDocumentParams(asked) {
			if missing := gates.UndocumentedParams(code, asked); len(missing) > 0 {
				v = gates.Verdict{Reason: "params_undocumented", Detail: fmt.Sprintf("asked: %s\nnot named in any docstring or comment: %s\nanswer: %s", asked, strings.Join(missing, ", "), gates.Cut(text, 400))}
				return v, fmt.Sprintf("Your answer could not be used: the user asked for the arguments to be documented, but the docstring names none of %s. Answer again: the complete revised code in one ```%s block whose docstring names each argument with its type and meaning, then a short summary.", strings.Join(missing, ", "), r.lang)
			}
		}
		if s := gates.FalseOnePass(text, code); v.OK() && r.lang == "python" && s != "" {
			// "No change is needed: it makes a single pass" of code that
			// nests loops keeps the code for a false reason.
			v = gates.Verdict{Reason: "claims_one_pass", Detail: fmt.Sprintf("asked: %s\nclaim: %s", asked, s)}
			return v, fmt.Sprintf("Your answer could not be used: it says the code goes over its input once (%q), but the code calls itself or runs more than one loop over it. Answer again: describe how the code works as its lines show it, and change it if what was asked needs a change, then the complete code in one ```%s block, then a short summary.", s, r.lang)
		}
		if s := gates.FalseComputedOnce(text, code); v.OK() && r.lang == "python" && s != "" {
			// "each value is computed once" of a loop that computes
			// len(i) twice per pass keeps the code for a false reason.
			v = gates.Verdict{Reason: "claims_computed_once", Detail: fmt.Sprintf("asked: %s\nclaim: %s\nrepeated: %s", asked, s, gates.RepeatedCall(code))}
			return v, fmt.Sprintf("Your answer could not be used: it says each value is computed once (%q), but a loop of the code computes `%s` twice on every pass. Answer again: store that value in a variable where the loop first needs it, or say plainly why it must stay, then the complete code in one ```%s block, then a short summary.", s, gates.RepeatedCall(code), r.lang)
		}
		if f := gates.UncalledNew(before, code, text, harnessCalls(turn)...); v.OK() && r.lang == "python" && f != "" {
			// A companion defined and never called publishes as if the
			// run had shown it working.
			v = gates.Verdict{Reason: "new_function_uncalled", Detail: fmt.Sprintf("asked: %s\nnever called: %s", asked, f)}
			return v, fmt.Sprintf("Your answer could not be used: it adds `%s`, but the code never calls it, so the run shows nothing of it. Answer again: the complete code in one ```%s block that ends by calling `%s` on an example and printing the result (or say plainly that the run does not call it), then a short summary.", f, r.lang, f)
		}
		if v.OK() && r.lang == "python" && gates.UncheckedInputs(before, code, asked) {
			v = gates.Verdict{Reason: "inputs_unchecked", Detail: fmt.Sprintf("asked: %s\nanswer: %s", asked, gates.Cut(text, 400))}
			return v, fmt.Sprintf("Your answer could not be used: the user asked for the inputs to be checked, but the code checks none of them (a docstring or a claim that it already validates is not a check). Answer again: the complete revised code in one ```%s block that checks the arguments before using them (for example raising TypeError or ValueError with a message that names the argument), then a short summary.", r.lang)
		}
		if v.OK() {
			ev, err := r.emptyVerdict(ctx, turn, asked, before, code)
			if err != nil {
				probeErr = err
			} else if ev.Reason == "empty_raise_over_value" {
				return ev, fmt.Sprintf("Your answer could not be used: the user asked about empty input, and the code now raises an error for it, but before this change %s. That value is the function's own answer for empty input: make it explicit instead (test for the empty argument first and return that value at once), unless the task itself says empty input is an error. Answer again: the complete revised code in one ```%s block, then a short summary.", ev.Detail, r.lang)
			} else if !ev.OK() {
				return ev, fmt.Sprintf("Your answer could not be used: the user asked about empty input, and running %s, so the code does not handle it (an error it raises on purpose, with a clear message, would be handling it). Answer again: the complete revised code in one ```%s block that handles empty input explicitly (return the value the task implies, or raise a ValueError that says why), then a short summary.", ev.Detail, r.lang)
			}
			if r.lang == "python" && gates.NoEmptyPath(code, asked) {
				v = gates.Verdict{Reason: "no_empty_path", Detail: fmt.Sprintf("asked: %s\nanswer: %s", asked, gates.Cut(text, 400))}
				return v, fmt.Sprintf("Your answer could not be used: the user asked for empty input to be handled explicitly, but the code has no path of its own for it (a docstring, or the claim that the same path handles it, is not one). Answer again: the complete revised code in one ```%s block that tests for an empty argument before using it and returns the value the task implies for it, or raises a ValueError that says why, then a short summary.", r.lang)
			}
			return v, ""
		}
		if v.Reason == "no_speedup" {
			return v, fmt.Sprintf("Your answer could not be used: it says the code is faster (%q), but its loops, searches and recursive calls do the same work as before. Answer again: either change the algorithm so it does less work (for example a set for repeated membership tests, a count made once, or a cache of the results a recursion computes more than once), or keep the code and say plainly why it cannot be made faster, then the complete code in one ```%s block, then a short summary.", gates.ClaimsSpeedup(text), r.lang)
		}
		if v.Reason == "memory_kept_reducible" {
			return v, fmt.Sprintf("Your answer could not be used: the user asked for less memory and the code stays as it was, but `%s` holds more than the result needs, and the same algorithm can do without it (a generator instead of a list that is only reduced, or two variables that roll forward instead of a table whose steps read only the two entries before them). Answer again: the complete revised code in one ```%s block, then a short summary.", gates.ReducibleMemory(code), r.lang)
		}
		if v.Reason == "no_change_off_request" {
			return v, fmt.Sprintf("Your answer could not be used: it keeps the code's logic as it was and says no change is needed, but its reason is not about what the user asked (%q). Answer again: either change the code to do what was asked, or say why no change is needed for that request in its own terms (for example what the code keeps in memory, or which Python features it uses), then the complete code in one ```%s block, then a short summary.", gates.Cut(asked, 200), r.lang)
		}
		return v, fmt.Sprintf("Your answer could not be used: the code is the same as before, although the user asked for a change. Answer again in this form: say what you change and why, then the complete revised code in one ```%s block, then a short summary; or, if the code must stay as it is, say explicitly why no change is needed.", r.lang)
	}
	request := r.task.Turns[len(r.task.Turns)-1].Text + "\n\nThe user then asked: " + msg.Content
	end, err := r.loop(ctx, turn, label+".", request, "", unchanged)
	if err == nil {
		err = probeErr
	}
	if err != nil {
		return false, err
	}
	if !end.ok {
		v := end.v
		if v.OK() {
			v = gates.Verdict{Reason: "revision_fails", Detail: fmt.Sprintf("after %d iterations the code still fails: %s", r.s.opts.MaxIterations, gates.Cut(r.output, 600))}
		}
		if end.gate == GateJudge || end.gate == GateEvidence { // counted already
			r.rollback(m, label, v)
			return false, nil
		}
		r.reject(m, gate, label, v)
		return false, nil
	}
	// The first answer was checked with repairs; a fix after it may have
	// gone back to the code before the round, which teaches "agree and
	// change nothing" just the same.
	if kind != "explain" {
		if v := revisionVerdict(before, r.code, asked, r.answersSince(m), kind); !v.OK() {
			r.reject(m, gate, label, v)
			return false, nil
		}
	}
	if kind == "tests" && r.lang == "python" && gates.BehaviourTests(shown, r.code) == 0 {
		r.reject(m, gate, label, gates.Verdict{Reason: "no_behaviour_tests", Detail: gates.Cut(r.answersSince(m), 600)})
		return false, nil
	}
	if r.lang == "python" && gates.AsksToDocumentParams(asked) {
		if missing := gates.UndocumentedParams(r.code, asked); len(missing) > 0 {
			r.reject(m, gate, label, gates.Verdict{Reason: "params_undocumented", Detail: fmt.Sprintf("asked: %s\nnot named in any docstring or comment: %s", asked, strings.Join(missing, ", "))})
			return false, nil
		}
	}
	if ev, err := r.emptyVerdict(ctx, turn, asked, before, r.code); err != nil {
		return false, err
	} else if !ev.OK() {
		r.reject(m, gate, label, ev)
		return false, nil
	}
	if r.lang == "python" && gates.NoEmptyPath(r.code, asked) {
		r.reject(m, gate, label, gates.Verdict{Reason: "no_empty_path", Detail: fmt.Sprintf("asked: %s\nanswer: %s", asked, gates.Cut(r.answersSince(m), 600))})
		return false, nil
	}
	if s := gates.FalseOnePass(r.answersSince(m), r.code); r.lang == "python" && s != "" {
		r.reject(m, gate, label, gates.Verdict{Reason: "claims_one_pass", Detail: fmt.Sprintf("asked: %s\nclaim: %s", asked, s)})
		return false, nil
	}
	if s := gates.FalseComputedOnce(r.answersSince(m), r.code); r.lang == "python" && s != "" {
		r.reject(m, gate, label, gates.Verdict{Reason: "claims_computed_once", Detail: fmt.Sprintf("asked: %s\nclaim: %s\nrepeated: %s", asked, s, gates.RepeatedCall(r.code))})
		return false, nil
	}
	if f := gates.UncalledNew(before, r.code, r.answersSince(m), harnessCalls(turn)...); r.lang == "python" && f != "" {
		r.reject(m, gate, label, gates.Verdict{Reason: "new_function_uncalled", Detail: fmt.Sprintf("asked: %s\nnever called: %s", asked, f)})
		return false, nil
	}
	if r.lang == "python" && gates.UncheckedInputs(before, r.code, asked) {
		r.reject(m, gate, label, gates.Verdict{Reason: "inputs_unchecked", Detail: fmt.Sprintf("asked: %s\nanswer: %s", asked, gates.Cut(r.answersSince(m), 600))})
		return false, nil
	}
	// Tests show that a revision still works, not that it does what the
	// user asked ("guard against wrong types" answered with a docstring
	// passes them): the judge model reads the request and the revision.
	// On untested turns it has done so already, in the loop.
	if r.judged == "tests" && r.s.Judge != nil {
		ok, reason, jv, err := r.judge(ctx, request, r.code, r.output, true)
		if err != nil {
			return false, err
		}
		if !jv.OK() { // counted by the judge
			r.rollback(m, label, jv)
			return false, nil
		}
		if !ok {
			r.reject(m, gate, label, gates.Verdict{Reason: "request_not_met", Detail: fmt.Sprintf("request: %s\njudge: %s\nanswer: %s", asked, reason, gates.Cut(r.answersSince(m), 600))})
			return false, nil
		}
	}
	r.check(gate, gates.Verdict{})
	if err := r.close(ctx, turn); err != nil {
		return false, err
	}
	return true, nil
}

// harnessCalls names the functions a problem's tests call (its entry
// point, and every name its test lines call): the harness runs them even
// where the code's own lines do not. A companion the tests never name is
// not among them, whatever order the code defines it in.
func harnessCalls(turn Turn) []string {
	p := turn.Problem
	if p == nil || len(p.Tests) == 0 {
		return nil
	}
	var out []string
	if p.EntryPoint != "" {
		out = append(out, p.EntryPoint)
	}
	for _, m := range testCallRe.FindAllStringSubmatch(strings.Join(p.Tests, "\n"), -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// testCallRe: a call in a test line.
var testCallRe = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`)

// mark is the state of a dialogue before a round, to go back to when a
// gate rejects the round.
type mark struct {
	msgs, conv, outs int
	code, output     string
}

func (r *run) save() mark {
	return mark{msgs: len(r.msgs), conv: len(r.conv), outs: len(r.outs), code: r.code, output: r.output}
}

// reject drops everything since m and counts v under gate.
func (r *run) reject(m mark, gate, label string, v gates.Verdict) {
	r.check(gate, v)
	r.rollback(m, label, v)
}

// rollback drops everything since m (the round's outcomes stay in the
// outcomes label, marked) and notes why in the labels. The sandbox
// session keeps what the dropped cells defined; later cells redefine what
// they use.
func (r *run) rollback(m mark, label string, v gates.Verdict) {
	r.msgs, r.conv = r.msgs[:m.msgs], r.conv[:m.conv]
	r.code, r.output = m.code, m.output
	r.rejected = append(r.rejected, label+"="+v.Reason)
	if r.sample == "" {
		r.sample = gates.Cut(v.Detail, 160)
	}
}

// answersSince joins the assistant turns added after m.
func (r *run) answersSince(m mark) string {
	var b strings.Builder
	for _, msg := range r.msgs[m.msgs:] {
		if msg.Role == schema.RoleAssistant {
			b.WriteString(msg.Content + "\n")
		}
	}
	return b.String()
}

// revisionVerdict checks a revision: code equal to the code before (after
// gates.NormalizeCode) fails when the request asked for a change and the
// answer does not say why the code stays. kind is the follow-up's kind
// ("" for feedback): one that asks for new behaviour (faster, more inputs,
// more capability, tests) is not met by a docstring either, so those
// compare with gates.SameLogic, and so does feedback that does not ask
// for documentation. Code kept as it was needs a reason, and one about
// what was asked (gates.KeepsForRequest).
func revisionVerdict(before, after, request, answer, kind string) gates.Verdict {
	same := gates.SameCode(before, after)
	switch kind {
	case "optimize", "edge_cases", "extend", "tests":
		same = gates.SameLogic(before, after)
	case "":
		// Feedback that asks for a layout, older versions or less memory
		// is not met by a docstring either; feedback that asks for
		// documentation is.
		if !gates.AsksForDocs(request) {
			same = gates.SameLogic(before, after)
		}
	}
	switch {
	case !same && gates.AsksForSpeed(request) && gates.ClaimsSpeedup(answer) != "" && !gates.LowerCost(before, after):
		// "This version is faster" of code whose loops, searches and
		// calls do the work they did before.
		return gates.Verdict{Reason: "no_speedup", Detail: fmt.Sprintf("asked: %s\nclaim: %s", request, gates.ClaimsSpeedup(answer))}
	case !same || !gates.AsksForChange(request):
		return gates.Verdict{}
	case gates.AsksForLessMemory(request) && gates.ReducibleMemory(after) != "":
		// "A different algorithm would be needed" of code whose memory
		// a generator or two rolling variables cut, same algorithm.
		return gates.Verdict{Reason: "memory_kept_reducible", Detail: fmt.Sprintf("asked: %s\nreducible: %s\nanswer: %s", request, gates.ReducibleMemory(after), gates.Cut(answer, 400))}
	case !gates.ExplainsNoChange(answer):
		return gates.Verdict{Reason: "unchanged_revision", Detail: answer}
	case !gates.KeepsForRequest(request, answer):
		// "No code change is needed: the code already does what the task
		// asks" to "keep the memory small" dodges the request.
		return gates.Verdict{Reason: "no_change_off_request", Detail: fmt.Sprintf("asked: %s\nanswer: %s", request, gates.Cut(answer, 400))}
	}
	return gates.Verdict{}
}

// calibrate asks the judge model about code that the tests have judged, on
// a sample of runs, and records whether it agrees. The judge sees what it
// sees on untested turns: the code and the output of a plain run (not the
// test report); code whose plain run fails is not asked about (an error
// goes back to the writer without the judge). An unreadable verdict is
// counted under GateJudge and left out of the calibration.
func (r *run) calibrate(ctx context.Context, request, code, testOutcome, iter string) error {
	o := r.s.opts
	if r.s.Judge == nil || o.Calibrate <= 0 || unit(fmt.Sprintf("%d\x00%s\x00calibrate\x00%s", o.Seed, r.task.ID, iter)) >= o.Calibrate {
		return nil
	}
	res, err := r.s.Exec.Run(ctx, executors.Request{Language: executors.Language(r.lang), Code: code, Limits: executors.Limits{Timeout: o.Timeout}})
	if err != nil {
		return fmt.Errorf("simulate: calibration run: %w", err)
	}
	if !res.OK() {
		return nil
	}
	ok, _, v, err := r.judge(ctx, request, code, RenderResult(res, o.Timeout, o.OutputChars), true)
	if err != nil || !v.OK() {
		return err
	}
	verdict := "fail"
	if ok {
		verdict = "pass"
	}
	tests := "fail"
	if testOutcome == "pass" {
		tests = "pass"
	}
	r.calib = append(r.calib, tests+":"+verdict)
	return nil
}

// categoryName is a category as words ("resource_use" -> "resource use").
func categoryName(c string) string { return strings.ReplaceAll(c, "_", " ") }
