// Package simulate builds Code-Feedback style dialogues grounded in real
// execution: the writer model plans and writes code, the code runs in the
// sandbox (a notebook-like session, or the problem's tests through the
// harness), the real output becomes the next turn, and the model analyses
// and fixes until a judge accepts the code or the iteration limit is
// reached. The judge is the problem's tests where it has them, else a judge
// model that answers in JSON. After the code passes, a feedback model can
// play the user for a number of rounds, aiming each round at one feedback
// category (schema.FeedbackCategories), with or without the canonical
// solution in view (oracle); the writer revises and the revision runs again.
//
// Every model call goes through an llm.Chatter, whose cache makes an
// interrupted dialogue resume by replaying the earlier turns. Nothing in an
// execution turn is invented: it is the run's own stdout, stderr and
// traceback (cut with visible markers) or the harness's test report, and
// the turn carries its schema.Execution record.
package feedbackloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// Turn is one user request of a task. Problem, when it has tests, makes the
// tests the judge of this turn's code.
type Turn struct {
	Text    string // the user's message as shown in the dialogue
	Problem *schema.Problem
}

// Task is what one dialogue is built from: one query or problem (one turn)
// or a packed dialogue (several related requests answered in order, in one
// sandbox session).
type Task struct {
	ID       string // stable id of the source (query, problem or dialogue id)
	Sources  []string
	Language string // "" = Options.Language
	Turns    []Turn
	// Solution is the canonical solution the oracle feedback variant shows
	// (the last turn's problem solution); "" disables the oracle variant.
	Solution string
}

// Result is what a simulation produced.
type Result struct {
	Dialogue schema.Dialogue
	// Passed is true when every turn's final code was accepted by its judge.
	Passed bool
	// Reason says why a failed dialogue failed ("" when Passed).
	Reason string
}

// Simulator runs the loop. It is safe for concurrent use when its Chatters
// and Executor are; each Run uses its own sandbox session.
type Simulator struct {
	Writer, Judge, Feedback llm.Chatter
	Exec                    executors.Executor
	// Model names the writer model in the dialogue record when the endpoint
	// does not report one.
	Model string

	opts    Options
	prompts promptSet
	weights []float64
}

// New checks opts (applying defaults) and returns a Simulator. judge may be
// nil when every task has tests; feedback may be nil when FeedbackRounds is 0.
func New(opts Options, writer, judge, feedback llm.Chatter, ex executors.Executor) (*Simulator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	ps, err := loadPrompts(opts.Prompts)
	if err != nil {
		return nil, err
	}
	w, _ := opts.categoryWeights()
	if writer == nil || ex == nil {
		return nil, errors.New("simulate: a writer model and a sandbox are required")
	}
	return &Simulator{Writer: writer, Judge: judge, Feedback: feedback, Exec: ex, opts: opts, prompts: ps, weights: w}, nil
}

// PromptVersion is the combined version of the templates in use.
func (s *Simulator) PromptVersion() string { return s.prompts.Version() }

// TaskFromProblem makes a one-turn task of a query or problem.
func (s *Simulator) TaskFromProblem(p schema.Problem) (Task, error) {
	text, err := s.prompts["simulate_task"].render(map[string]any{
		"Text": strings.TrimSpace(p.Text), "Prompt": strings.TrimRight(p.Prompt, "\n"), "Tests": p.Tests})
	if err != nil {
		return Task{}, err
	}
	t := Task{ID: p.ID, Sources: []string{p.ID}, Language: p.Language, Turns: []Turn{{Text: strings.TrimSpace(text)}}}
	if len(p.Tests) > 0 {
		pc := p
		t.Turns[0].Problem = &pc
		t.Solution = harness.Reference(p)
	}
	return t, nil
}

// TaskFromDialogue makes a task of a packed dialogue: its user requests
// (user turns that are not feedback) in order. Earlier answers are not
// reused: each request is answered afresh with execution in the loop.
func TaskFromDialogue(d schema.Dialogue) (Task, error) {
	t := Task{ID: d.ID, Sources: d.Sources}
	if len(t.Sources) == 0 {
		t.Sources = []string{d.ID}
	}
	for _, m := range d.Messages {
		if m.Role == schema.RoleUser && m.Feedback == nil && strings.TrimSpace(m.Content) != "" &&
			!strings.HasPrefix(m.Content, strings.TrimSpace(schema.ExecutionPrefix)) {
			t.Turns = append(t.Turns, Turn{Text: strings.TrimSpace(m.Content)})
		}
	}
	if len(t.Turns) == 0 {
		return Task{}, fmt.Errorf("simulate: dialogue %s has no user request", d.ID)
	}
	return t, nil
}

// run is the state of one dialogue being built.
type run struct {
	s       *Simulator
	task    Task
	lang    string
	msgs    []schema.Message
	conv    []llm.Message // what the writer sees
	sess    executors.Session
	model   string
	labels  map[string]string
	outs    []string // "<iteration>=<outcome>"
	code    string   // the latest code
	output  string   // the latest execution turn's text
	judged  string   // "tests" or "model"
	reasons []string
	// rejected lists feedback rounds the gates removed, "fb1=feedback_code";
	// sample is the first rejected text; calib lists judge calibrations,
	// "<tests outcome>:<judge verdict>".
	rejected []string
	sample   string
	calib    []string
}

// Run builds the dialogue for task. A failing dialogue is a Result with
// Passed false, not an error; errors come from the models (wrapped llm
// errors: budget, retries exhausted, unreadable answers) or the sandbox.
func (s *Simulator) Run(ctx context.Context, task Task) (Result, error) {
	if len(task.Turns) == 0 {
		return Result{}, fmt.Errorf("simulate: task %s has no turns", task.ID)
	}
	lang := task.Language
	if lang == "" || !executors.Language(lang).Valid() {
		lang = s.opts.Language
	}
	system, err := s.prompts["simulate_writer"].render(map[string]any{"Language": lang})
	if err != nil {
		return Result{}, err
	}
	r := &run{s: s, task: task, lang: lang, conv: []llm.Message{llm.System(strings.TrimSpace(system))},
		model: s.Model, labels: map[string]string{}}
	defer func() {
		if r.sess != nil {
			r.sess.Close()
		}
	}()

	passed, reason := true, ""
	for i, turn := range task.Turns {
		r.add(schema.Message{Role: schema.RoleUser, Content: turn.Text})
		prefix := "" // iterations of the first turn are "1", "2", ...; later turns "t2.1", ...
		if i > 0 {
			prefix = fmt.Sprintf("t%d.", i+1)
		}
		ok, err := r.loop(ctx, turn, prefix, turn.Text)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			passed, reason = false, fmt.Sprintf("turn %d: the code still fails after %d iterations", i+1, s.opts.MaxIterations)
			break
		}
		if err := r.close(turn); err != nil {
			return Result{}, err
		}
	}
	last := task.Turns[len(task.Turns)-1]
	var cats []string
	for round := 1; passed && round <= s.opts.FeedbackRounds; round++ {
		mark := r.save()
		fb, v, err := r.feedback(ctx, last, round)
		if err != nil {
			return Result{}, err
		}
		if !v.OK() { // the feedback itself failed a gate: no round
			r.reject(mark, round, v)
			continue
		}
		feedbackText := r.msgs[len(r.msgs)-1].Content
		ok, err := r.loop(ctx, last, fmt.Sprintf("fb%d.", round), last.Text+"\n\nThe user then asked: "+feedbackText)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			passed, reason = false, fmt.Sprintf("feedback round %d: the revised code still fails after %d iterations", round, s.opts.MaxIterations)
			break
		}
		// A round that asks for a change must change the code or say why
		// not; "You're right..." over identical code teaches the wrong habit.
		if v := revisionVerdict(mark.code, r.code, feedbackText, r.answersSince(mark)); !v.OK() {
			r.reject(mark, round, v)
			continue
		}
		cats = append(cats, fb.Category)
		if err := r.close(last); err != nil {
			return Result{}, err
		}
	}

	method := "execution-feedback"
	if s.opts.FeedbackRounds > 0 {
		method = "human-feedback"
	}
	status := "pass"
	if !passed {
		status = "fail"
	}
	r.labels["final_status"] = status
	r.labels["outcomes"] = strings.Join(r.outs, " ")
	r.labels["judge"] = r.judged
	r.labels["language"] = lang
	if len(cats) > 0 {
		r.labels["feedback_categories"] = strings.Join(cats, ",")
	}
	if len(r.reasons) > 0 {
		r.labels["judge_reason"] = r.reasons[len(r.reasons)-1]
	}
	if len(r.rejected) > 0 {
		r.labels[LabelRejected] = strings.Join(r.rejected, " ")
		r.labels[LabelRejectedSample] = r.sample
	}
	if len(r.calib) > 0 {
		r.labels[LabelCalibration] = strings.Join(r.calib, " ")
	}
	if !passed && s.opts.Failed == FailedLabel {
		r.labels["rejected"] = reason
	}
	d := schema.Dialogue{
		ID:       schema.StableID("dlg-simulate", task.ID, method),
		Messages: r.msgs,
		Stage:    "simulate",
		Method:   method,
		Model:    r.model,
		Prompt:   s.prompts.Version(),
		Sources:  task.Sources,
		Labels:   r.labels,
	}
	return Result{Dialogue: d, Passed: passed, Reason: reason}, nil
}

// add appends m to the dialogue and to the writer's view of it.
func (r *run) add(m schema.Message) {
	r.msgs = append(r.msgs, m)
	switch m.Role {
	case schema.RoleAssistant:
		r.conv = append(r.conv, llm.Assistant(m.Content))
	case schema.RoleExecution:
		r.conv = append(r.conv, llm.User(schema.ExecutionPrefix+m.Content))
	default:
		r.conv = append(r.conv, llm.User(m.Content))
	}
}

// loop asks for code, runs it and feeds the result back until the judge
// accepts it or MaxIterations runs were made. It reports acceptance.
func (r *run) loop(ctx context.Context, turn Turn, iterPrefix, request string) (bool, error) {
	for it := 1; it <= r.s.opts.MaxIterations; it++ {
		resp, err := r.s.Writer.Chat(ctx, llm.Request{Messages: r.conv})
		if err != nil {
			return false, fmt.Errorf("simulate: writer: %w", err)
		}
		if resp.Model != "" {
			r.model = resp.Model
		}
		text := strings.TrimSpace(resp.Text)
		r.add(schema.Message{Role: schema.RoleAssistant, Content: text})
		code, err := parse.Code(text, r.lang)
		if err != nil {
			r.outs = append(r.outs, fmt.Sprintf("%s%d=no_code", iterPrefix, it))
			return false, nil
		}
		r.code = code
		ex, outcome, err := r.execute(ctx, turn, code)
		if err != nil {
			return false, err
		}
		r.output = ex.Content
		r.add(ex)
		if r.judged == "tests" && turn.Problem != nil {
			if err := r.calibrate(ctx, request, code, outcome, iterPrefix+fmt.Sprint(it)); err != nil {
				return false, err
			}
		}
		if outcome == "ok" { // ran cleanly and there are no tests: the judge model decides
			ok, reason, err := r.judge(ctx, request, code, ex.Content)
			if err != nil {
				return false, err
			}
			r.reasons = append(r.reasons, reason)
			outcome = "rejected"
			if ok {
				outcome = "pass"
			}
		}
		r.outs = append(r.outs, fmt.Sprintf("%s%d=%s", iterPrefix, it, outcome))
		if outcome == "pass" {
			return true, nil
		}
	}
	return false, nil
}

// execute runs code for turn: against the problem's tests through the
// harness (one self-contained run), or as the next cell of the dialogue's
// session. outcome is "pass" (tests passed), "ok" (a cell ran cleanly, to be
// judged), "timeout", "oom", "wrong_answer", an exception name, or "error".
func (r *run) execute(ctx context.Context, turn Turn, code string) (schema.Message, string, error) {
	o := r.s.opts
	if turn.Problem != nil && len(turn.Problem.Tests) > 0 && r.lang == "python" {
		r.judged = "tests"
		hopts := harness.Options{Timeout: o.Timeout, CaseTimeout: min(5*time.Second, o.Timeout)}
		v, err := harness.Judge(ctx, r.s.Exec, *turn.Problem, code, hopts)
		if err == nil && v.Outcome() == "timeout" {
			// A timeout may be the machine's load, not the code: one more
			// run decides before the writer is told to fix a hang.
			v, err = harness.Judge(ctx, r.s.Exec, *turn.Problem, code, hopts)
		}
		if err != nil {
			return schema.Message{}, "", fmt.Errorf("simulate: judge with tests: %w", err)
		}
		e := v.Execution()
		e.ExecutedAt = time.Now().UTC()
		return schema.Message{Role: schema.RoleExecution, Content: strings.TrimRight(v.Feedback, "\n"), Exec: &e}, v.Outcome(), nil
	}
	if r.judged == "" {
		r.judged = "model"
	}
	if r.sess == nil {
		sess, err := r.s.Exec.Open(ctx, executors.Language(r.lang), executors.SessionOptions{Limits: executors.Limits{Timeout: o.Timeout}})
		if err != nil {
			return schema.Message{}, "", fmt.Errorf("simulate: open %s session: %w", r.lang, err)
		}
		r.sess = sess
	}
	at := time.Now().UTC()
	res, err := r.sess.Exec(ctx, code)
	if err != nil {
		return schema.Message{}, "", fmt.Errorf("simulate: run cell: %w", err)
	}
	info := r.s.Exec.Info()
	e := schema.Execution{
		Language: r.lang, Code: code, Driver: firstNonEmpty(res.Driver, info.Driver), Image: firstNonEmpty(res.Image, info.Image),
		TimeoutMS: o.Timeout.Milliseconds(), MemoryB: info.Limits.MemoryBytes,
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, OOM: res.OOM, Exception: res.Exception, ErrorLine: res.ErrorLine,
		Stdout: res.Stdout, Stderr: res.Stderr, Duration: res.Duration, ExecutedAt: at,
	}
	return schema.Message{Role: schema.RoleExecution, Content: RenderResult(res, o.Timeout, o.OutputChars), Exec: &e}, resultOutcome(res), nil
}

// resultOutcome names a cell's outcome.
func resultOutcome(res executors.Result) string {
	switch {
	case res.TimedOut:
		return "timeout"
	case res.OOM:
		return "oom"
	case res.OK():
		return "ok"
	case res.Exception != "":
		return res.Exception
	}
	return "error"
}

// RenderResult is the text of an execution turn for a cell: its stdout,
// then its stderr (the traceback), each cut to keep at most chars bytes
// (head and tail, with a marker saying how much was cut), and a line for a
// timeout. Everything shown is the run's own output.
func RenderResult(res executors.Result, timeout time.Duration, chars int) string {
	var b strings.Builder
	if s := strings.TrimRight(res.Stdout, "\n"); s != "" {
		b.WriteString(trimMiddle(s, chars))
		if res.StdoutTruncated {
			b.WriteString("\n[... output cut by the sandbox's output limit ...]")
		}
		b.WriteString("\n")
	}
	if s := strings.TrimRight(res.Stderr, "\n"); s != "" {
		b.WriteString(trimMiddle(s, chars))
		b.WriteString("\n")
	}
	if res.TimedOut {
		fmt.Fprintf(&b, "Execution timed out after %s.\n", timeout)
	}
	if b.Len() == 0 {
		if res.OK() {
			return "[the code ran without printing anything]"
		}
		fmt.Fprintf(&b, "[no output; exit status %d]\n", res.ExitCode)
	}
	return strings.TrimRight(b.String(), "\n")
}

// trimMiddle keeps the first and last parts of s on line boundaries when it
// is longer than n bytes: a traceback's end holds the error, its start the
// context.
func trimMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n/2], s[len(s)-n/2:]
	if i := strings.LastIndexByte(head, '\n'); i > n/4 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < n/4 {
		tail = tail[i+1:]
	}
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", head, len(s)-len(head)-len(tail), tail)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// judgeAnswer is the judge model's JSON verdict.
type judgeAnswer struct {
	Correct *bool  `json:"correct"`
	Reason  string `json:"reason"`
}

// judge asks the judge model whether code solves request, given its real output.
func (r *run) judge(ctx context.Context, request, code, output string) (bool, string, error) {
	if r.s.Judge == nil {
		return false, "", errors.New("simulate: this task has no tests and no judge model is configured")
	}
	prompt, err := r.s.prompts["judge_request"].render(map[string]any{
		"Task": request, "Language": r.lang, "Code": code, "Output": output})
	if err != nil {
		return false, "", err
	}
	a, _, err := llm.ChatParse(ctx, r.s.Judge, llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{JSONMode: true}},
		2, nil, func(text string) (judgeAnswer, error) {
			var a judgeAnswer
			if err := parse.JSON(text, &a); err != nil {
				return a, err
			}
			if a.Correct == nil {
				return a, errors.New(`the JSON has no boolean "correct"`)
			}
			return a, nil
		})
	if err != nil {
		return false, "", fmt.Errorf("simulate: judge: %w", err)
	}
	return *a.Correct, strings.TrimSpace(a.Reason), nil
}

// close appends the assistant's closing remark after accepted code.
func (r *run) close(turn Turn) error {
	n := 0
	if turn.Problem != nil && r.lang == "python" {
		n = len(turn.Problem.Tests)
	}
	name := ""
	if m := defNameRe.FindAllStringSubmatch(r.code, -1); len(m) > 0 {
		name = m[len(m)-1][1]
	}
	if turn.Problem != nil && turn.Problem.EntryPoint != "" {
		name = turn.Problem.EntryPoint
	}
	variant := int(unit(fmt.Sprintf("%d\x00%s\x00closing\x00%d", r.s.opts.Seed, r.task.ID, len(r.msgs))) * closingVariants)
	text, err := r.s.prompts["simulate_closing"].render(map[string]any{"Tests": n, "Name": name, "Variant": variant})
	if err != nil {
		return err
	}
	r.add(schema.Message{Role: schema.RoleAssistant, Content: strings.TrimSpace(text)})
	return nil
}

// feedbackAnswer is the feedback model's JSON, read tolerantly (see
// parseFeedback).
type feedbackAnswer struct {
	Category string   `json:"category,omitempty"` // as the model named it
	Met      []string `json:"met"`
	Missed   []string `json:"missed"`
	Feedback string   `json:"feedback"`
}

// feedback adds one simulated human feedback turn aimed at a drawn
// category. The answer passes two gates, with repairs: it holds no code
// (a user describes the change, the writer makes it), and the category the
// model says it aimed at is the drawn one. A failed verdict (no error)
// means the round is dropped; nothing is added then.
func (r *run) feedback(ctx context.Context, last Turn, round int) (schema.Feedback, gates.Verdict, error) {
	if r.s.Feedback == nil {
		return schema.Feedback{}, gates.Verdict{}, errors.New("simulate: feedback_rounds > 0 needs a feedback model")
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
		return schema.Feedback{}, gates.Verdict{}, err
	}
	a, _, err := llm.ChatParse(ctx, r.s.Feedback, llm.Request{Messages: []llm.Message{llm.User(prompt)}, Params: llm.Params{JSONMode: true}},
		2, nil, func(text string) (feedbackAnswer, error) {
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
	var ge gateError
	if errors.As(err, &ge) {
		return schema.Feedback{}, ge.v, nil
	}
	if err != nil {
		return schema.Feedback{}, gates.Verdict{}, fmt.Errorf("simulate: feedback model: %w", err)
	}
	a.Category = cat
	body, err := json.Marshal(a)
	if err != nil {
		return schema.Feedback{}, gates.Verdict{}, fmt.Errorf("simulate: encode feedback: %w", err)
	}
	fb := schema.Feedback{Category: cat, Oracle: oracle, Body: body}
	r.add(schema.Message{Role: schema.RoleUser, Content: strings.TrimSpace(a.Feedback), Feedback: &fb})
	return fb, gates.Verdict{}, nil
}

// gateError is a model answer a gate rejected; msg goes to the repair prompt.
type gateError struct {
	v   gates.Verdict
	msg string
}

func (g gateError) Error() string { return g.msg }

// parseFeedback reads the feedback model's JSON whatever it called the
// fields: "met"/"achieved_goals"/"goals_met"/..., "missed"/"unmet_goals"/...,
// "feedback"/"message"/..., "category"/"goal"/...; lists may be a string.
func parseFeedback(text string) (feedbackAnswer, error) {
	var raw map[string]any
	if err := parse.JSON(text, &raw); err != nil {
		return feedbackAnswer{}, err
	}
	norm := map[string]any{}
	for k, v := range raw {
		norm[strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(k))] = v
	}
	get := func(keys ...string) any {
		for _, k := range keys {
			if v, ok := norm[k]; ok && v != nil {
				return v
			}
		}
		return nil
	}
	a := feedbackAnswer{
		Category: asString(get("category", "goal", "aimed_at", "aim", "focus", "feedback_category", "target_goal")),
		Met:      asList(get("met", "achieved_goals", "achieved", "goals_met", "met_goals", "goals_achieved", "strengths")),
		Missed:   asList(get("missed", "unmet_goals", "unmet", "missed_goals", "goals_missed", "goals_unmet", "not_met", "weaknesses")),
		Feedback: strings.TrimSpace(asString(get("feedback", "message", "feedback_message", "comment", "text", "response"))),
	}
	if a.Feedback == "" {
		return a, errors.New(`the JSON has no "feedback" text`)
	}
	return a, nil
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		return strings.Join(asList(x), "; ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asList(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		var out []string
		for _, p := range strings.Split(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s := strings.TrimSpace(asString(e)); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// canonicalCategory maps a category as a model writes it ("Best
// practices", "resource-use") to schema.FeedbackCategories, or "".
func canonicalCategory(s string) string {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	for _, c := range schema.FeedbackCategories {
		if k == c {
			return c
		}
	}
	return ""
}

// mark is the state of a dialogue before a feedback round, to go back to
// when a gate rejects the round.
type mark struct {
	msgs, conv, outs int
	code, output     string
}

func (r *run) save() mark {
	return mark{msgs: len(r.msgs), conv: len(r.conv), outs: len(r.outs), code: r.code, output: r.output}
}

// reject drops everything since m and records why.
func (r *run) reject(m mark, round int, v gates.Verdict) {
	r.msgs, r.conv, r.outs = r.msgs[:m.msgs], r.conv[:m.conv], r.outs[:m.outs]
	r.code, r.output = m.code, m.output
	r.rejected = append(r.rejected, fmt.Sprintf("fb%d=%s", round, v.Reason))
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

// revisionVerdict checks a feedback round's result: code equal to the code
// before (after gates.NormalizeCode) fails when the feedback asked for a
// change and no answer says why the code stays.
func revisionVerdict(before, after, feedback, answers string) gates.Verdict {
	if !gates.SameCode(before, after) || !gates.AsksForChange(feedback) || gates.ExplainsNoChange(answers) {
		return gates.Verdict{}
	}
	return gates.Verdict{Reason: "unchanged_revision", Detail: feedback}
}

// calibrate asks the judge model about code that the tests have judged, on
// a sample of runs, and records whether it agrees. The judge sees what it
// sees on untested turns: the code and the output of a plain run (not the
// test report); code whose plain run fails is not asked about (an error
// goes back to the writer without the judge).
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
	ok, _, err := r.judge(ctx, request, code, RenderResult(res, o.Timeout, o.OutputChars))
	if err != nil {
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

// Labels of the gates and of the judge's calibration on simulate dialogues.
const (
	// LabelRejected lists feedback rounds removed by a gate: "fb1=feedback_code".
	LabelRejected       = "feedback_rejected"
	LabelRejectedSample = "feedback_rejected_sample"
	// LabelCalibration lists "<tests>:<judge>" pairs, e.g. "fail:pass" for a
	// program the tests fail and the judge model accepted.
	LabelCalibration = "judge_calibration"
)

// closingVariants is the number of phrasings prompts/simulate_closing.tmpl has.
const closingVariants = 8

var defNameRe = regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*)`)
