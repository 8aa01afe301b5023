package feedbackloop

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// Result is what a simulation produced.
type Result struct {
	Dialogue schema.Dialogue
	// Passed is true when every turn's final code was accepted by its judge.
	Passed bool
	// Reason says why a failed dialogue failed ("" when Passed).
	Reason string
	// Checks are the gates' verdicts on the dialogue's model answers, in
	// order: a failing one (with the rejected text as Detail) dropped its
	// round, or its dialogue when it was in a first turn. The stage records
	// each with gates.Record, which quarantines the failing ones.
	Checks []Check
}

// Check is one gate's verdict on one model answer (or one round).
type Check struct {
	Gate    string
	Verdict gates.Verdict
}

// Gates of the loop. A model answer that fails a gate is repaired (asked
// again with the reason and the exact answer form) up to twice; one that
// still fails is counted here and its round dropped.
const (
	// GateFeedback checks a feedback round: the feedback answer (readable,
	// the category asked for, no code) and the revision it led to
	// (changed, passing within the iteration limit).
	GateFeedback = "feedback_round"
	// GateFollowup checks a follow-up round the same way.
	GateFollowup = "followup_round"
	// GateWriter checks the writer's answers to a first-turn request or a
	// run: code in the task's language, no thanks to a program's output.
	GateWriter = "writer_answer"
	// GateJudge checks the judge model's answers: readable JSON verdicts.
	GateJudge = "judge_answer"
	// GateClosing checks the writer's prose reply to an accepted run; a
	// rejected one is replaced by a templated sentence (nothing is lost).
	GateClosing = "closing"
	// GateEvidence checks a test-less run the judge model accepted against
	// the run's own output (gates.RunContradicts): one it contradicts
	// drops its dialogue (or round).
	GateEvidence = "run_evidence"
)

// JudgedLead opens the user turn that carries the judge model's reason
// for rejecting a test-less run that ran cleanly.
const JudgedLead = "I checked the code against the task, and it is not there yet: "

// repairs is how many times a gated answer is asked for again.
const repairs = 2

// Simulator runs the loop. It is safe for concurrent use when its Chatters
// and Executor are; each Run uses its own sandbox session.
type Simulator struct {
	Writer, Judge, Feedback llm.Chatter
	Exec                    executors.Executor
	// Model names the writer model in the dialogue record when the endpoint
	// does not report one.
	Model string

	opts      Options
	prompts   promptSet
	weights   []float64
	fuWeights []float64

	langMu sync.Mutex
	langs  map[executors.Language]executors.LanguageStatus
}

// New checks opts (applying defaults) and returns a Simulator. judge may be
// nil when every task has tests; feedback may be nil when FeedbackRounds and
// Followups are 0.
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
	fw, _ := opts.followupWeights()
	if writer == nil || ex == nil {
		return nil, errors.New("simulate: a writer model and a sandbox are required")
	}
	return &Simulator{Writer: writer, Judge: judge, Feedback: feedback, Exec: ex, opts: opts, prompts: ps, weights: w, fuWeights: fw}, nil
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
	s      *Simulator
	task   Task
	lang   string
	msgs   []schema.Message
	conv   []llm.Message // what the writer sees
	sess   executors.Session
	model  string
	labels map[string]string
	outs   []string // "<iteration>=<outcome>"
	code   string   // the latest code
	output string   // the latest execution turn's text
	judged string   // "tests" or "model"
	// runnable is false for a language the sandbox cannot run (whyNot
	// says why): the code is judged by the model from the code alone.
	runnable bool
	whyNot   string
	reasons  []string
	checks   []Check
	// rejected lists rounds the gates removed, "fb1=feedback_code"; sample
	// is the first rejected text; calib lists judge calibrations,
	// "<tests outcome>:<judge verdict>".
	rejected []string
	sample   string
	calib    []string
	// probed caches edge-input probe results by kind, function and code (probe).
	probed map[string]probeResult
	// before is the code before the round under way ("" outside rounds):
	// a closing after a round that kept it may not claim a change.
	before string
}

// Run builds the dialogue for task. A failing dialogue is a Result with
// Passed false, not an error; a round a gate rejects after its repairs is
// dropped and the rest of the dialogue kept. Errors come only from the
// models' transport (wrapped llm errors: budget, retries exhausted) and
// the sandbox.
func (s *Simulator) Run(ctx context.Context, task Task) (Result, error) {
	if len(task.Turns) == 0 {
		return Result{}, fmt.Errorf("simulate: task %s has no turns", task.ID)
	}
	lang := taskLanguage(task, s.opts.Language)
	ok, whyNot, err := s.runnable(ctx, lang)
	if err != nil {
		return Result{}, err
	}
	system, err := s.prompts["simulate_writer"].render(map[string]any{"Language": lang, "Runnable": ok})
	if err != nil {
		return Result{}, err
	}
	r := &run{s: s, task: task, lang: lang, conv: []llm.Message{llm.System(strings.TrimSpace(system))},
		model: s.Model, labels: map[string]string{}, runnable: ok, whyNot: whyNot}
	defer func() {
		if r.sess != nil {
			r.sess.Close()
		}
	}()

	passed, reason := true, ""
	sources, last := task.Sources, task.Turns[len(task.Turns)-1]
	for i, turn := range task.Turns {
		m := r.save()
		r.add(schema.Message{Role: schema.RoleUser, Content: turn.Text})
		prefix := "" // iterations of the first turn are "1", "2", ...; later turns "t2.1", ...
		if i > 0 {
			prefix = fmt.Sprintf("t%d.", i+1)
		}
		var first checkFn
		if i > 0 {
			first = r.newRequestCheck()
		}
		end, err := r.loop(ctx, turn, prefix, turn.Text, GateWriter, first)
		if err != nil {
			return Result{}, err
		}
		if !end.ok && i > 0 {
			// A later request of a packed dialogue that fails is taken
			// back with what follows it; the requests before it stand on
			// their own (their sources only, so lineage stays true).
			v := end.v
			if v.OK() {
				v = gates.Verdict{Reason: "turn_fails", Detail: gates.Cut(r.output, 600)}
			}
			r.rollback(m, fmt.Sprintf("t%d", i+1), v)
			if len(sources) == len(task.Turns) {
				sources = sources[:i]
			}
			r.labels[LabelTurnsDropped] = strconv.Itoa(len(task.Turns) - i)
			last = task.Turns[i-1]
			break
		}
		if !end.ok {
			passed = false
			switch {
			case end.gate == GateEvidence:
				reason = fmt.Sprintf("turn %d: the judge model accepted a run whose output contradicts the task (%s)", i+1, end.v.Detail)
			case !end.v.OK():
				reason = fmt.Sprintf("turn %d: %s rejected after %d repairs (%s)", i+1, end.gate, repairs, end.v.Reason)
			case !r.runnable:
				reason = fmt.Sprintf("turn %d: the judge model rejected the code (%s)", i+1, whyNot)
			default:
				reason = fmt.Sprintf("turn %d: the code still fails after %d iterations", i+1, s.opts.MaxIterations)
			}
			break
		}
		if err := r.close(ctx, turn); err != nil {
			return Result{}, err
		}
	}
	var cats, kinds []string
	// Follow-ups and feedback need a run to ground them: code that cannot
	// be run is answered once and judged, nothing more.
	if passed && r.runnable {
		var err error
		if kinds, err = keptRounds(ctx, last, s.opts.Followups, r.followup); err != nil {
			return Result{}, err
		}
		if cats, err = keptRounds(ctx, last, s.opts.FeedbackRounds, r.feedbackRound); err != nil {
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
	if !r.runnable {
		r.labels[LabelExecutable] = "false"
		r.labels[LabelNotExecutable] = whyNot
	}
	if len(cats) > 0 {
		r.labels["feedback_categories"] = strings.Join(cats, ",")
	}
	if len(kinds) > 0 {
		r.labels[LabelFollowups] = strings.Join(kinds, ",")
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
		Sources:  sources,
		Labels:   r.labels,
	}
	return Result{Dialogue: d, Passed: passed, Reason: reason, Checks: r.checks}, nil
}

// newRequestCheck rejects an answer to a packed dialogue's next request
// whose code is the previous answer's again, give or take comments and
// docstrings: a new task answered with the old code (a merge sort handed
// back, with a docstring, for "now a counting sort") teaches the model to
// ignore what it was asked.
func (r *run) newRequestCheck() checkFn {
	before := r.code
	return func(text, code string) (gates.Verdict, string) {
		if before == "" || !gates.SameLogic(before, code) || gates.ExplainsNoChange(text) {
			return gates.Verdict{}, ""
		}
		return gates.Verdict{Reason: "old_code_for_new_request", Detail: text},
			fmt.Sprintf("Your answer could not be used: its code is the code of your previous answer, but the user made a new request. Answer the new request: say how you solve it, then the complete code in one ```%s block, then a short summary.", r.lang)
	}
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

// check records a gate's verdict.
func (r *run) check(gate string, v gates.Verdict) {
	r.checks = append(r.checks, Check{Gate: gate, Verdict: v})
}

// loopEnd is how a write-run-fix loop ended: accepted, or stopped by a
// gate (v failing, recorded under gate), or out of iterations (v passing).
type loopEnd struct {
	ok   bool
	gate string
	v    gates.Verdict
}

// checkFn is an extra gate on a writer answer: its verdict and, when it
// fails, the repair message.
type checkFn func(text, code string) (gates.Verdict, string)

// loop asks for code, runs it and feeds the result back until the judge
// accepts it or MaxIterations runs were made. A writer answer that fails
// its gates after repairs ends the loop: recorded under writerGate, or
// returned unrecorded when writerGate is "" (a round records it). first is
// an extra gate on the first answer (a revision must change the code).
func (r *run) loop(ctx context.Context, turn Turn, iterPrefix, request, writerGate string, first checkFn) (loopEnd, error) {
	for it := 1; it <= r.s.opts.MaxIterations; it++ {
		var extra checkFn
		if it == 1 {
			extra = first
		}
		text, code, v, err := r.ask(ctx, turn, extra)
		if err != nil {
			return loopEnd{}, err
		}
		if writerGate != "" {
			r.check(writerGate, v)
		}
		if !v.OK() {
			r.outs = append(r.outs, fmt.Sprintf("%s%d=%s", iterPrefix, it, v.Reason))
			return loopEnd{gate: writerGate, v: v}, nil
		}
		r.add(schema.Message{Role: schema.RoleAssistant, Content: text})
		r.code = code
		if !r.runnable {
			// Nothing runs: the judge model reads the code, once; without a
			// run there is nothing new to fix from.
			r.judged = "model"
			ok, stop, end, err := r.loopJudge(ctx, request, code, r.whyNot, false, fmt.Sprintf("%s%d", iterPrefix, it))
			if stop || err != nil {
				return end, err
			}
			outcome := "not_run_rejected"
			if ok {
				outcome = "not_run_pass"
			}
			r.outs = append(r.outs, fmt.Sprintf("%s%d=%s", iterPrefix, it, outcome))
			return loopEnd{ok: ok}, nil
		}
		ex, outcome, err := r.execute(ctx, turn, code)
		if err != nil {
			return loopEnd{}, err
		}
		if outcome == "ok" && strings.TrimSpace(ex.Content) == SilentRun {
			ex, outcome, err = r.demonstrate(ctx, turn, ex, extra)
			if err != nil {
				return loopEnd{}, err
			}
		}
		r.output = ex.Content
		r.add(ex)
		if r.judged == "tests" && turn.Problem != nil {
			if err := r.calibrate(ctx, request, code, outcome, iterPrefix+fmt.Sprint(it)); err != nil {
				return loopEnd{}, err
			}
		}
		if outcome == "ok" { // ran cleanly and there are no tests: the judge model decides
			ok, stop, end, err := r.loopJudge(ctx, request, code, ex.Content, true, fmt.Sprintf("%s%d", iterPrefix, it))
			if stop || err != nil {
				return end, err
			}
			outcome = "rejected"
			if ok {
				outcome = "pass"
				// The judge is a model too: an acceptance the run's own
				// output contradicts is not taken on its word.
				v := gates.Verdict{}
				if why := gates.RunContradicts(turn.Text, ex.Content); why != "" {
					v = gates.Verdict{Reason: "output_contradicts_task", Detail: why + "\noutput: " + gates.Cut(ex.Content, 300)}
				}
				r.check(GateEvidence, v)
				if !v.OK() {
					r.outs = append(r.outs, fmt.Sprintf("%s%d=%s", iterPrefix, it, v.Reason))
					return loopEnd{gate: GateEvidence, v: v}, nil
				}
			} else if it < r.s.opts.MaxIterations {
				// The writer fixes what the judge named, in the judge's
				// words: the run itself showed no error, so without them
				// the next turn would claim a fault nothing in the
				// dialogue shows.
				r.add(schema.Message{Role: schema.RoleUser, Content: JudgedLead + r.reasons[len(r.reasons)-1]})
			}
		}
		r.outs = append(r.outs, fmt.Sprintf("%s%d=%s", iterPrefix, it, outcome))
		if outcome == "pass" {
			return loopEnd{ok: true}, nil
		}
	}
	return loopEnd{}, nil
}

// loopJudge asks the judge model about a loop's code (output: its run's
// output, or why it was not run) and keeps the judge's reason. An
// unreadable answer stops the loop (stop, with end at the judge gate) and
// is recorded as step's outcome.
func (r *run) loopJudge(ctx context.Context, request, code, output string, ran bool, step string) (ok, stop bool, end loopEnd, err error) {
	ok, reason, jv, err := r.judge(ctx, request, code, output, ran)
	if err != nil {
		return false, true, loopEnd{}, err
	}
	if !jv.OK() {
		r.outs = append(r.outs, step+"=judge_"+jv.Reason)
		return false, true, loopEnd{gate: GateJudge, v: jv}, nil
	}
	r.reasons = append(r.reasons, reason)
	return ok, false, loopEnd{}, nil
}

// thanksRe matches an opening that thanks or agrees with the message
// answered: right for a person's feedback, wrong for a program's output.
var thanksRe = regexp.MustCompile(`(?i)^\W*(you'?re (absolutely |completely |quite )?(right|correct)|you are (absolutely |completely |quite )?(right|correct)|thanks?\b|thank you|good (point|catch|idea)|great (point|catch|idea|suggestion)|i agree\b|(that'?s|that is) (right|correct|a good point))`)

// ThanksOutput reports whether a reply opens by thanking or agreeing, which
// is wrong in reply to a program's execution output.
func ThanksOutput(text string) bool { return thanksRe.MatchString(strings.TrimSpace(text)) }

// ask gets a writer answer for the conversation so far that holds code in
// the task's language, does not thank a program's output, and passes
// extra; a failing answer is repaired (the repair is not part of the
// dialogue) up to repairs times. The verdict fails when the last answer
// still fails: the caller drops what it belongs to.
//
// Every answer's prose is also held to what it says, unasked, about empty
// or single-element input (claimVerdict): a false claim is sent back like a failing gate,
// and when the last answer still makes it, the claim's sentences are cut
// and the answer kept (LabelClaimsCut), since the code itself is not at
// fault.
func (r *run) ask(ctx context.Context, turn Turn, extra checkFn) (string, string, gates.Verdict, error) {
	return r.askIn(ctx, turn, slices.Clip(r.conv), extra)
}

// askIn is ask over conv instead of the dialogue so far.
func (r *run) askIn(ctx context.Context, turn Turn, conv []llm.Message, extra checkFn) (string, string, gates.Verdict, error) {
	toOutput := len(r.msgs) > 0 && r.msgs[len(r.msgs)-1].Role == schema.RoleExecution && len(conv) == len(r.conv)
	falseClaim := false
	for try := 0; ; try++ {
		resp, err := r.s.Writer.Chat(ctx, llm.Request{Messages: conv})
		if err != nil {
			return "", "", gates.Verdict{}, fmt.Errorf("simulate: writer: %w", err)
		}
		if resp.Model != "" {
			r.model = resp.Model
		}
		text := strings.TrimSpace(resp.Text)
		code, perr := parse.Code(text, r.lang)
		var v gates.Verdict
		repair := ""
		switch {
		case perr != nil:
			v = gates.Verdict{Reason: "no_code", Detail: text}
			repair = fmt.Sprintf("Your answer could not be used: it has no %s code block (%v). Answer again in this form: a few sentences that explain the approach, then the complete code in one ```%s block, then one or two sentences that sum up what it does.", r.lang, perr, r.lang)
		case toOutput && ThanksOutput(text):
			v = gates.Verdict{Reason: "thanks_to_output", Detail: text}
			repair = fmt.Sprintf("Your answer could not be used: it opens by thanking or agreeing with the last message, but that message is the program's output, not a person. Answer again in this form: start with what the output shows and what it means for the code, then the complete code in one ```%s block, then a short summary.", r.lang)
		case extra != nil:
			v, repair = extra(text, code)
		}
		if v.OK() {
			cv, crepair, claims, err := r.claimVerdict(ctx, turn, text, code)
			if err != nil {
				return "", "", gates.Verdict{}, err
			}
			switch {
			case cv.OK() && falseClaim:
				r.count(LabelClaimsRepaired)
			case !cv.OK() && try >= repairs:
				text = gates.CutClaims(text, claims)
				r.count(LabelClaimsCut)
			case !cv.OK():
				falseClaim = true
				v, repair = cv, crepair
			}
		}
		if v.OK() || try >= repairs {
			if f := gates.Fillers(text); v.OK() && len(f) > 0 {
				// A stock claim of fit says nothing of the code: cut, not
				// asked again (the rest of the answer stands).
				text = gates.CutClaims(text, f)
				r.count(LabelFillerCut)
			}
			return text, code, v, nil
		}
		conv = append(slices.Clip(conv), llm.Assistant(text), llm.User(repair))
	}
}

// demoRepair asks again for an answer whose clean run printed nothing.
const demoRepair = "Your answer could not be used: its code ran without errors but printed nothing, so the run shows nothing of what the code does. Give the whole answer again, and end the code block with a short call on an example input that prints its result."

// demonstrate handles a clean test-less run that printed nothing (silent):
// such an execution turn shows a learner nothing of what the code does, and
// the writer prompt asks for a printed result. The writer is asked once,
// outside the dialogue, for the answer again with a call that prints; when
// that answer passes the same gates and its run shows something (a result
// or an error to fix), it replaces the silent answer and its run is
// returned. Otherwise the silent answer stays, counted in LabelSilent.
func (r *run) demonstrate(ctx context.Context, turn Turn, silent schema.Message, extra checkFn) (schema.Message, string, error) {
	conv := append(slices.Clip(r.conv), llm.User(demoRepair))
	text, code, v, err := r.askIn(ctx, turn, conv, extra)
	if err != nil {
		return schema.Message{}, "", err
	}
	if v.OK() && !gates.SameLogic(r.code, code) {
		ex, outcome, err := r.execute(ctx, turn, code)
		if err != nil {
			return schema.Message{}, "", err
		}
		if strings.TrimSpace(ex.Content) != SilentRun {
			r.msgs[len(r.msgs)-1].Content = text
			r.conv[len(r.conv)-1] = llm.Assistant(text)
			r.code = code
			r.count(LabelDemonstrated)
			return ex, outcome, nil
		}
	}
	r.count(LabelSilent)
	return silent, "ok", nil
}

// count adds one to a counting label.
func (r *run) count(label string) {
	n, _ := strconv.Atoi(r.labels[label])
	r.labels[label] = strconv.Itoa(n + 1)
}

// execute runs code for turn: against the problem's tests through the
// harness (one self-contained run), or as the next cell of the dialogue's
// session (a one-shot run for languages without sessions). outcome is
// "pass" (tests passed), "ok" (ran cleanly, to be judged), "timeout",
// "oom", "wrong_answer", an exception name, or "error".
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
	lang := executors.Language(r.lang)
	at := time.Now().UTC()
	var res executors.Result
	var err error
	if lang.Sessions() {
		if r.sess == nil {
			sess, err := r.s.Exec.Open(ctx, lang, executors.SessionOptions{Limits: executors.Limits{Timeout: o.Timeout}})
			if err != nil {
				return schema.Message{}, "", fmt.Errorf("simulate: open %s session: %w", r.lang, err)
			}
			r.sess = sess
		}
		res, err = r.sess.Exec(ctx, code)
	} else {
		res, err = r.s.Exec.Run(ctx, executors.Request{Language: lang, Code: code, Limits: executors.Limits{Timeout: o.Timeout}})
	}
	if err != nil {
		return schema.Message{}, "", fmt.Errorf("simulate: run cell: %w", err)
	}
	info := r.s.Exec.Info()
	e := schema.Execution{
		Language: r.lang, Code: code, Driver: firstNonEmpty(res.Driver, info.Driver), Image: firstNonEmpty(res.Image, info.Image),
		TimeoutMS: o.Timeout.Milliseconds(), MemoryB: info.Limits.MemoryBytes,
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, TimeLimit: res.TimeLimit, OOM: res.OOM, Exception: res.Exception, ErrorLine: res.ErrorLine,
		Stdout: res.Stdout, Stderr: res.Stderr, Duration: res.Duration, ExecutedAt: at,
	}
	return schema.Message{Role: schema.RoleExecution, Content: RenderResult(res, o.Timeout, o.OutputChars), Exec: &e}, resultOutcome(res), nil
}

// Labels of the gates and of the judge's calibration on simulate dialogues.
const (
	// LabelRejected lists rounds removed by a gate: "fb1=feedback_code fu1=unchanged_revision".
	LabelRejected       = "feedback_rejected"
	LabelRejectedSample = "feedback_rejected_sample"
	// LabelTurnsDropped counts a packed dialogue's last requests taken back
	// because the first of them failed (its reason is in LabelRejected).
	LabelTurnsDropped = "turns_dropped"
	// LabelCalibration lists "<tests>:<judge>" pairs, e.g. "fail:pass" for a
	// program the tests fail and the judge model accepted.
	LabelCalibration = "judge_calibration"
	// LabelFollowups lists the kinds of the follow-up requests kept.
	LabelFollowups = "followups"
	// LabelDemonstrated counts answers whose clean run printed nothing,
	// replaced by the writer's answer again with a call that prints;
	// LabelSilent counts those kept silent (the writer did not add one).
	LabelDemonstrated = "demonstrated"
	LabelSilent       = "silent_runs"
	// LabelClaimsRepaired counts answers sent back for saying, falsely,
	// that the code handles empty or single-element input, and answered
	// without the false claim; LabelClaimsCut counts answers whose false
	// claim was cut out after the repairs.
	LabelClaimsRepaired = "false_claims_repaired"
	LabelClaimsCut      = "false_claims_cut"
	// LabelFillerCut counts writer answers whose stock claims of fit
	// ("which is what the request asks for") were cut (gates.Filler).
	LabelFillerCut = "filler_cut"
	// LabelExecutable is "false" on a dialogue in a language the sandbox
	// cannot run; LabelNotExecutable says why.
	LabelExecutable    = "executable"
	LabelNotExecutable = "not_executable"
)

// closingVariants is the number of phrasings prompts/simulate_closing.tmpl has.
const closingVariants = 8

var defNameRe = regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*)`)
