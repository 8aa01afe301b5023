package simulate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

func init() { pipeline.Register("simulate", DefaultOptions, newStage) }

// newStage builds the "simulate" stage: query and problem items become
// one-turn tasks, dialogue items (packed groups) multi-turn tasks; other
// kinds pass through.
func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.WithDefaults()
	pv, err := feedbackloop.PromptVersion(o.Prompts)
	if err != nil {
		return nil, err
	}
	version := map[string]any{"prompts": pv, "loop": "v19-judge-reason-in-dialogue-run-evidence", "judge": harness.Version()}
	if svc.Model != nil {
		for role, ep := range map[string]string{"writer": o.Writer, "judge": o.Judge, "feedback": o.Feedback} {
			p, err := svc.ModelKey(ep)
			if err != nil {
				return nil, fmt.Errorf("simulate: %s endpoint: %w", role, err)
			}
			version[role] = p
		}
	}
	return &stage{o: o, svc: svc, version: version, samples: &gates.Samples{}}, nil
}

// stage is the "simulate" stage.
type stage struct {
	o       Options
	svc     *pipeline.Services
	version map[string]any

	mu     sync.Mutex
	sim    *feedbackloop.Simulator
	simErr error
	warned sync.Once
	// untrusted is logged once when the judge fails its calibration.
	untrusted sync.Once
	// samples are rejected rounds and judge mistakes, for Check's error.
	samples *gates.Samples
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// UsesExecutor implements pipeline.ExecutorUser: every item runs code.
func (st *stage) UsesExecutor() bool { return true }

// UsesModel implements pipeline.ModelUser.
func (st *stage) UsesModel() bool { return st.svc.Model != nil }

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	svc := st.svc
	d, ok := pipeline.OwnDialogue(out, "simulate")
	if !ok || svc.Stats == nil {
		return
	}
	ObserveDialogue(svc.Stats, d)
	if rs := d.Labels[feedbackloop.LabelRejected]; rs != "" {
		round, reason, _ := strings.Cut(strings.Fields(rs)[0], "=")
		gate := FeedbackGate
		if strings.HasPrefix(round, "fu") {
			gate = feedbackloop.GateFollowup
		}
		st.samples.Add(gate, d.ID+" ("+reason+"): "+d.Labels[feedbackloop.LabelRejectedSample])
	}
	for _, c := range strings.Fields(d.Labels[feedbackloop.LabelCalibration]) {
		if c == "fail:pass" {
			st.samples.Add(CalibrationGate, d.ID+": the judge accepted code that fails its tests")
		}
	}
}

// Gates implements pipeline.Gated: each gate (rounds, judge, writer,
// closing answers) trips the stage when it rejects clearly more than
// max_rejected of its checks.
func (st *stage) Gates() []pipeline.GateRule {
	return []pipeline.GateRule{{MaxShare: st.o.MaxRejected, Setting: "max_rejected"}}
}

// Check implements pipeline.Checker: the judge's calibration against the
// tests. A judge that fails its calibration does not fail the stage: from
// the decision on, model-judged dialogues are quarantined and only
// test-judged ones shipped (see Each); Check says so loudly, and fails only
// when model-judged dialogues were shipped before the calibration could
// decide.
func (st *stage) Check() error {
	svc := st.svc
	if svc.Stats == nil {
		return nil
	}
	vals, _ := svc.Stats.Snapshot()
	if n := vals["calibration/verdicts"]; n > 0 {
		svc.Stats.Set("calibration/agreement", vals["calibration/agree"]/n)
	}
	if untrusted(vals, st.o) {
		svc.Stats.Set("calibration/judge_untrusted", 1)
		if svc.Logger != nil {
			svc.Logger.Warn("simulate: the judge model FAILED its calibration against the tests; only test-judged dialogues were shipped",
				"agreement", vals["calibration/agree"]/vals["calibration/verdicts"], "min_agreement", st.o.MinAgreement,
				"verdicts", vals["calibration/verdicts"], "model_judged_quarantined", vals["calibration/withheld"],
				"model_judged_shipped_before_decision", vals["calibration/shipped_undecided"])
		}
	}
	return CheckGates(vals, st.o, st.samples)
}

// untrusted reports whether the judge model failed its calibration: at
// least CalibrationMin verdicts compared and agreement under MinAgreement.
func untrusted(vals map[string]float64, o Options) bool {
	n := vals["calibration/verdicts"]
	return n > 0 && n >= float64(o.CalibrationMin) && vals["calibration/agree"]/n < o.MinAgreement
}

// simulator builds the simulator on first use: the sandbox opens lazily and
// the models are only needed once an item arrives. A transient failure (the
// sandbox did not start) is retried by the next item; a settings error
// sticks.
func (st *stage) simulator(ctx context.Context) (*feedbackloop.Simulator, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sim != nil || st.simErr != nil {
		return st.sim, st.simErr
	}
	s, err := buildSimulator(ctx, st.o, st.svc)
	switch {
	case err == nil:
		st.sim = s
	case pipeline.IsTransient(err):
		return nil, err
	default:
		st.simErr = pipeline.Permanent(err)
	}
	return st.sim, st.simErr
}

// Each implements pipeline.EachStage.
func (st *stage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	o, svc := st.o, st.svc
	var task feedbackloop.Task
	s, err := st.simulator(ctx)
	if errors.Is(err, llm.ErrNoModel) {
		// Without a model there is nothing to simulate: the item is
		// dropped (a question with no answer is not training data), and
		// the run says so once instead of failing every item.
		st.warned.Do(func() {
			if svc.Logger != nil {
				svc.Logger.Warn("simulate: skipped, no model configured; to run it " + llm.NoModelHint)
			}
		})
		pipeline.ItemStats(ctx, svc.Stats).Add("skipped/no_model", 1)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch in.Kind {
	case pipeline.KindQuery, pipeline.KindProblem:
		// A query is a problem without tests.
		var p schema.Problem
		if in.Kind == pipeline.KindQuery {
			p.Query, err = pipeline.As[schema.Query](in, in.Kind)
		} else {
			p, err = pipeline.As[schema.Problem](in, in.Kind)
		}
		if err == nil {
			task, err = s.TaskFromProblem(p)
		}
		if err != nil {
			return nil, pipeline.Permanent(err)
		}
	case pipeline.KindDialogue:
		d, err := pipeline.As[schema.Dialogue](in, in.Kind)
		if err != nil {
			return nil, pipeline.Permanent(err)
		}
		if d.Stage == "simulate" { // our own output fed back: nothing to do
			return []pipeline.Item{in}, nil
		}
		if task, err = feedbackloop.TaskFromDialogue(d); err != nil {
			return nil, pipeline.Permanent(err)
		}
	default:
		return []pipeline.Item{in}, nil
	}
	res, err := s.Run(ctx, task)
	if err != nil {
		return nil, err // the engine knows a model error's class
	}
	// Gate and calibration figures go with the item (kept or dropped), so a
	// cached re-run counts the same; a rejected answer's text goes to the
	// quarantine.
	stats := pipeline.ItemStats(ctx, svc.Stats)
	for _, c := range res.Checks {
		gates.Record(stats, c.Gate, c.Verdict)
	}
	recordGates(stats, res.Dialogue)
	lang := res.Dialogue.Labels["language"]
	stats.Add("language/"+lang, 1)
	if res.Dialogue.Labels[feedbackloop.LabelExecutable] == "false" {
		stats.Add("not_executable/"+lang, 1)
	}
	var out []pipeline.Item
	if o.KeepInputs {
		out = append(out, in)
	}
	if res.Passed && res.Dialogue.Labels["judge"] == "model" && svc.Stats != nil {
		// The judge model's verdicts are trusted only while it agrees with
		// the tests; the stage's calibration so far (items before this one,
		// in input order, cached ones included) decides.
		vals, _ := svc.Stats.Snapshot()
		switch {
		case untrusted(vals, o):
			n := vals["calibration/verdicts"]
			detail := fmt.Sprintf("the judge model agrees with the tests on %.0f%% of %.0f calibration verdicts (min_agreement %.0f%%): model-judged dialogue %s not shipped",
				100*vals["calibration/agree"]/n, n, 100*o.MinAgreement, res.Dialogue.ID)
			stats.Reject(CalibrationGate, "judge_untrusted", detail)
			stats.Add("calibration/withheld", 1)
			st.untrusted.Do(func() {
				if svc.Logger != nil {
					svc.Logger.Warn("simulate: the judge model failed its calibration; from now on only test-judged dialogues are shipped and model-judged ones quarantined (raise calibrate or fix the judge model; min_agreement sets the bar)", "detail", detail)
				}
			})
			return out, nil
		case vals["calibration/verdicts"] < float64(o.CalibrationMin):
			stats.Add("calibration/shipped_undecided", 1)
		}
	}
	if !res.Passed && o.Failed == feedbackloop.FailedDrop {
		// Recorded with the item so a cached re-run counts them too:
		// Observe never sees a dropped dialogue.
		stats.Add("dialogues/dropped", 1)
		observeOutcomes(stats, res.Dialogue)
		if svc.Logger != nil {
			svc.Logger.Debug("simulate: dialogue dropped", "task", task.ID, "reason", res.Reason)
		}
		return out, nil
	}
	it, err := pipeline.DialogueItem(res.Dialogue)
	if err != nil {
		return nil, err
	}
	return append(out, it), nil
}

// buildSimulator gets the sandbox and the three models from the services.
func buildSimulator(ctx context.Context, o Options, svc *pipeline.Services) (*feedbackloop.Simulator, error) {
	writer, err := llm.ForStage(svc, o.Writer)
	if err != nil {
		return nil, fmt.Errorf("simulate: writer model: %w", err)
	}
	judge, err := llm.ForStage(svc, o.Judge)
	if err != nil {
		return nil, fmt.Errorf("simulate: judge model: %w", err)
	}
	var feedback llm.Chatter
	if o.FeedbackRounds > 0 || o.Followups > 0 { // the feedback model also plays the user who follows up
		if feedback, err = llm.ForStage(svc, o.Feedback); err != nil {
			return nil, fmt.Errorf("simulate: feedback model: %w", err)
		}
	}
	if svc.Executor == nil {
		return nil, errors.New("simulate: needs a sandbox; add a top-level `executor:` (e.g. bwrap://) to the pipeline file")
	}
	ex, err := svc.Executor(ctx)
	if err != nil {
		return nil, pipeline.Transient(fmt.Errorf("simulate: open sandbox: %w", err))
	}
	return feedbackloop.New(o, writer, judge, feedback, ex)
}

// ObserveDialogue adds a simulate dialogue's statistics to stats: status,
// turn count, per-iteration outcomes and feedback categories.
func ObserveDialogue(stats *pipeline.Stats, d schema.Dialogue) {
	stats.Add("dialogues/"+d.Labels["final_status"], 1)
	stats.Add(fmt.Sprintf("turns/%d", len(d.Messages)), 1)
	observeOutcomes(stats, d)
	for _, l := range []string{feedbackloop.LabelDemonstrated, feedbackloop.LabelSilent} {
		if n, err := strconv.Atoi(d.Labels[l]); err == nil {
			stats.Add("silent/"+l, float64(n))
		}
	}
	for _, l := range []string{feedbackloop.LabelClaimsRepaired, feedbackloop.LabelClaimsCut} {
		if n, err := strconv.Atoi(d.Labels[l]); err == nil {
			stats.Add("claims/"+l, float64(n))
		}
	}
	for _, m := range d.Messages {
		if m.Feedback != nil {
			stats.Add("feedback/category/"+m.Feedback.Category, 1)
			if m.Feedback.Oracle {
				stats.Add("feedback/oracle", 1)
			} else {
				stats.Add("feedback/non_oracle", 1)
			}
		}
	}
}

// observeOutcomes counts the "outcomes" label as "outcome/<iteration>/<kind>",
// where the iteration is "1", "2", ... of the first turn, "t2.1" for the
// second turn of a packed dialogue, and "fb1.1" for a feedback round.
func observeOutcomes(stats *pipeline.Stats, d schema.Dialogue) {
	for _, o := range strings.Fields(d.Labels["outcomes"]) {
		it, kind, ok := strings.Cut(o, "=")
		if !ok {
			continue
		}
		stats.Add("outcome/"+it+"/"+kind, 1)
	}
}

// Gate names in the stage's statistics.
const (
	FeedbackGate    = "feedback_round"
	CalibrationGate = "judge_calibration"
)

// recordGates counts a dialogue's judge calibrations and its follow-ups
// (the gates' verdicts come from Result.Checks).
func recordGates(stats gates.Adder, d schema.Dialogue) {
	if stats == nil {
		return
	}
	if k := d.Labels[feedbackloop.LabelFollowups]; k != "" {
		for _, kind := range strings.Split(k, ",") {
			stats.Add("followup/kind/"+kind, 1)
		}
	}
	for _, c := range strings.Fields(d.Labels[feedbackloop.LabelCalibration]) {
		tests, judge, _ := strings.Cut(c, ":")
		stats.Add("calibration/verdicts", 1)
		switch {
		case tests == judge:
			stats.Add("calibration/agree", 1)
		case judge == "pass":
			stats.Add("calibration/false_accept", 1) // the judge passed code the tests fail
		default:
			stats.Add("calibration/false_reject", 1)
		}
		if tests == "fail" {
			stats.Add("calibration/tests_fail", 1)
		}
	}
}

// CheckGates: a judge model that fails its calibration (agreement with the tests under o.MinAgreement on at
// least o.CalibrationMin verdicts) fails it only when model-judged
// dialogues were shipped before the calibration decided; otherwise they
// were quarantined and the test-judged ones shipped.
func CheckGates(vals map[string]float64, o Options, samples *gates.Samples) error {
	var errs []error
	if untrusted(vals, o) && vals["calibration/shipped_undecided"] > 0 {
		n := vals["calibration/verdicts"]
		errs = append(errs, fmt.Errorf("simulate: the judge model agrees with the tests on %.0f%% of %.0f calibration verdicts (min_agreement %.0f%%): it accepted %.0f of %.0f programs that fail their tests and rejected %.0f that pass; %.0f model-judged dialogues were quarantined, but %.0f were shipped before calibration_min (%d) verdicts were in; put tested problems first in the input or lower calibration_min%s",
			100*vals["calibration/agree"]/n, n, 100*o.MinAgreement, vals["calibration/false_accept"], vals["calibration/tests_fail"], vals["calibration/false_reject"],
			vals["calibration/withheld"], vals["calibration/shipped_undecided"], o.CalibrationMin, samples.For(CalibrationGate)))
	}
	return errors.Join(errs...)
}

// What an estimate assumes of the model: an answer's size, an execution
// turn's, a judge's verdict's, and how often a first answer needs a fix (a
// third of the time, fixed on the next try).
const (
	estAnswerBytes   = 600
	estExecBytes     = 300
	estVerdictTokens = 40
	estFeedbackBytes = 300
	estClosingBytes  = 400
	estFixRate       = 0.3
)

// Estimate implements pipeline.Estimator. Per request of a task (a query,
// a problem, each user turn of a packed dialogue): the writer answers, a
// fix follows estFixRate of the time, the judge model sees every run of an
// untested task and Calibrate of a tested one's, and the writer replies to
// the accepted run (closing: model); then each follow-up and feedback round
// asks the feedback model and the writer again. Every dialogue is assumed
// to pass (none dropped), so the stages after this one see the most they
// may get. Prompts grow with the conversation.
func (st *stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	o := st.o
	get := func(name string) (string, error) {
		if t, ok := o.Prompts[name]; ok {
			return t, nil
		}
		t, err := prompts.Get(name)
		return t.Text, err
	}
	writerT := pipeline.TemplateBytes(get, "simulate_writer", "simulate_task")
	judgeT := pipeline.TemplateBytes(get, "judge_request")
	feedbackT := pipeline.TemplateBytes(get, "feedback_request")
	followupT := pipeline.TemplateBytes(get, "followup_request")
	summaryT := pipeline.TemplateBytes(get, "simulate_summary")
	closings := 0.0 // the writer's prose reply to each accepted run
	if o.Closing == feedbackloop.ClosingModel {
		closings = 1
	}
	var t pipeline.Tally
	var out []pipeline.Shape
	fixes := 0.0 // fix turns owed, carried over so that the total is right
	for _, sh := range in {
		turns := 1
		switch {
		case sh.Kind == pipeline.KindQuery || sh.Kind == pipeline.KindProblem:
		case sh.Kind == pipeline.KindDialogue && sh.UserTurns > 0 && sh.CodeTurns == 0:
			turns = sh.UserTurns
		default:
			out = append(out, sh)
			continue
		}
		if o.KeepInputs {
			out = append(out, sh)
		}
		if st.svc.Model == nil {
			continue // without a model a task is dropped
		}
		runs := min(1+estFixRate, float64(o.MaxIterations))
		judged := runs // every run of an untested task goes to the judge
		if sh.Tested {
			judged = runs * o.Calibrate
		}
		conv, per := 0, sh.Bytes/turns
		d := pipeline.Shape{Kind: pipeline.KindDialogue, UserTurns: turns}
		for range turns {
			conv += per
			t.Add(runs, writerT+conv, estAnswerBytes/4)
			t.Add(judged, judgeT+per+estAnswerBytes, estVerdictTokens)
			conv += int(runs * (estAnswerBytes + estExecBytes))
			d.CodeTurns++
			if fixes += runs - 1; fixes >= 1 {
				d.CodeTurns++
				fixes--
			}
		}
		closing := func() {
			t.Add(closings, writerT+summaryT+conv, estClosingBytes/4)
			conv += int(closings * estClosingBytes)
		}
		for range turns {
			closing()
		}
		// follow-ups and feedback rounds: the user's turn, the writer's
		// revision (judged like the first answer), the reply to its run
		for _, r := range []struct {
			n    int
			tmpl int
		}{{o.Followups, followupT}, {o.FeedbackRounds, feedbackT}} {
			for range r.n {
				t.Add(1, r.tmpl+per+estAnswerBytes, estFeedbackBytes/4)
				conv += estFeedbackBytes
				t.Add(runs, writerT+conv, estAnswerBytes/4)
				if sh.Tested {
					t.Add(runs*o.Calibrate, judgeT+per+estAnswerBytes, estVerdictTokens)
				} else {
					t.Add(runs, judgeT+per+estAnswerBytes, estVerdictTokens)
				}
				conv += estAnswerBytes + estExecBytes
				d.CodeTurns++
				closing()
			}
		}
		d.Bytes = conv
		d.ExplainedTurns = d.CodeTurns // the writer is asked to explain its code before it
		out = append(out, d)
	}
	return t.Usage(), out
}
