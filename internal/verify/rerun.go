package verify

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"github.com/codefeedback/codefeedback/schema"
)

// outcome is what a run showed: "pass" (tests passed or the cell ran
// cleanly), "timeout", an exception name, or "fail" (failed without one).
type outcome string

// sessions keeps one session per language for one dialogue's cells: every
// dialogue starts from fresh sessions (state never crosses dialogues), and
// its cells run in them in order (state crosses cells, as it did when the
// dialogue was made).
type sessions struct {
	ex      executors.Executor
	open    map[executors.Language]executors.Session
	timeout map[executors.Language]time.Duration
	// ran lists the cells run in each session, to replay them in a fresh
	// one when a turn's other candidate block is tried.
	ran map[executors.Language][]string
}

// get returns the dialogue's session for lang, opened with timeout as its
// per-cell limit when it is the first. A later cell with another limit
// runs in the same session: its state matters more than its limit.
func (s *sessions) get(ctx context.Context, lang executors.Language, timeout time.Duration) (executors.Session, error) {
	if sess := s.open[lang]; sess != nil {
		return sess, nil
	}
	sess, err := s.ex.Open(ctx, lang, executors.SessionOptions{Limits: executors.Limits{Timeout: timeout}})
	if err != nil {
		return nil, fmt.Errorf("verify: open %s session: %w", lang, err)
	}
	s.open[lang], s.timeout[lang] = sess, timeout
	return sess, nil
}

// fork opens a fresh session for lang holding the state of the current
// one: its cells replayed in order (their results are not compared again).
func (s *sessions) fork(ctx context.Context, lang executors.Language) (executors.Session, error) {
	sess, err := s.ex.Open(ctx, lang, executors.SessionOptions{Limits: executors.Limits{Timeout: s.timeout[lang]}})
	if err != nil {
		return nil, fmt.Errorf("verify: open %s session: %w", lang, err)
	}
	for _, cell := range s.ran[lang] {
		if _, err := sess.Exec(ctx, cell); err != nil {
			sess.Close()
			return nil, fmt.Errorf("verify: replay a cell: %w", err)
		}
	}
	return sess, nil
}

func (s *sessions) close() {
	for _, sess := range s.open {
		sess.Close()
	}
}

func newSessions(ex executors.Executor) *sessions {
	return &sessions{ex: ex, open: map[executors.Language]executors.Session{},
		timeout: map[executors.Language]time.Duration{}, ran: map[executors.Language][]string{}}
}

// cellOutcome classifies a session cell's result.
func cellOutcome(res executors.Result) outcome {
	switch {
	case res.TimedOut:
		return "timeout"
	case res.OK():
		return "pass"
	case res.Exception != "":
		return outcome(bare(res.Exception))
	case exceptionIn(res.Stderr) != "":
		return outcome(exceptionIn(res.Stderr))
	}
	return "fail"
}

func bare(exc string) string {
	if i := strings.LastIndex(exc, "."); i >= 0 {
		return exc[i+1:]
	}
	return exc
}

// recordedOutcome is the outcome a schema.Execution claims.
func recordedOutcome(e *schema.Execution) outcome {
	switch {
	case e.Passed != nil && *e.Passed:
		return "pass"
	case e.TimedOut, judgeTimer(e):
		return "timeout"
	case e.Passed == nil && e.ExitCode == 0 && !e.OOM:
		return "pass"
	case e.Exception != "":
		return outcome(bare(e.Exception))
	}
	return "fail"
}

// judgeTimer reports a test failure recorded by an earlier harness, which
// wrote timeouts of its per-test timer without TimedOut.
func judgeTimer(e *schema.Execution) bool {
	return e.Passed != nil && !*e.Passed && strings.HasPrefix(e.ErrorLine, "timed out after ") &&
		(e.Exception == "" || strings.HasSuffix(e.Exception, "._CaseTimeout"))
}

// textCellOutcome is the outcome a cell's visible result shows: a timeout
// line, the exception of its traceback, a bare exit status, else success.
func textCellOutcome(text string) outcome {
	switch {
	case runTimeoutRe.MatchString(text):
		return "timeout"
	case shownException(text) != "":
		return outcome(shownException(text))
	case strings.HasPrefix(strings.TrimSpace(text), "[no output; exit status "):
		return "fail"
	}
	return "pass"
}

// rerun re-runs every step of one dialogue in order, from fresh sessions.
func (c *Checker) rerun(ctx context.Context, d *schema.Dialogue, sts []step, tests map[int]*visibleTests, rep *Report) error {
	ss := newSessions(c.Exec)
	defer ss.close()
	for _, st := range sts {
		if err := c.rerunStep(ctx, d, st, tests, ss, rep); err != nil {
			return err
		}
	}
	return nil
}

// Check names of this file's mismatches.
const (
	CheckCode   = "code"   // the visible code is not the code the record ran
	CheckOutput = "output" // same outcome, other printed output
)

func (c *Checker) rerunStep(ctx context.Context, d *schema.Dialogue, st step, tests map[int]*visibleTests, ss *sessions, rep *Report) error {
	o := c.Opts.withDefaults()
	unverifiable := func(why string) { rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, st.turn, why}) }
	if st.why != "" {
		unverifiable(st.why)
		return nil
	}
	if st.codeDiffers {
		rep.Executions++
		rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: st.asst, Check: CheckCode,
			Detail: "the turn shows no code block equal to the code its record ran (the visible code was edited)"})
		return nil
	}
	if !st.lang.Valid() {
		unverifiable(fmt.Sprintf("no %s runner in the sandbox", st.lang))
		return nil
	}
	if st.judged {
		return c.rerunJudged(ctx, d, st, tests, rep)
	}
	timeout := o.Timeout
	if st.rec != nil && st.rec.TimeoutMS > 0 {
		timeout = time.Duration(st.rec.TimeoutMS) * time.Millisecond
	} else if t, _ := textLimits(st.text); t > 0 {
		timeout = t
	}
	sess, err := ss.get(ctx, st.lang, timeout)
	if err != nil {
		return err
	}
	want := textCellOutcome(st.text)
	if st.rec != nil {
		want = recordedOutcome(st.rec)
	}
	cell := func(sess executors.Session, code string) (Report, string, error) {
		if st.rec == nil && st.lang == executors.Python {
			code = magicLineRe.ReplaceAllString(code, "")
		}
		res, err := sess.Exec(ctx, code)
		if err != nil {
			return Report{}, code, fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, st.turn, err)
		}
		var r Report
		c.compare(d, st, want, cellOutcome(res), res, feedbackloop.RenderResult(res, timeout, cellChars), &r)
		return r, code, nil
	}
	r, ran, err := cell(sess, st.code)
	if err != nil {
		return err
	}
	for _, alt := range st.alts {
		if r.Agreed > 0 {
			break
		}
		// Another block of the turn may be the one that ran (a tool call's
		// code sits at the end of the turn): tried in a fresh session
		// holding the same state, adopted only if it shows the turn.
		fork, err := ss.fork(ctx, st.lang)
		if err != nil {
			return err
		}
		r2, ran2, err := cell(fork, alt)
		if err != nil || r2.Agreed == 0 {
			fork.Close()
			if err != nil {
				return err
			}
			continue
		}
		ss.open[st.lang].Close()
		ss.open[st.lang] = fork
		r, ran = r2, ran2
	}
	ss.ran[st.lang] = append(ss.ran[st.lang], ran)
	rep.add(&r)
	return nil
}

// cellChars is the share of a cell's output an execution turn shows
// (feedbackloop's default OutputChars).
const cellChars = 2000

// rerunJudged re-runs a test verdict: the record's judge program (native
// files), else the visible code against the tests the request shows, and
// compares the verdict and the text the judge renders.
func (c *Checker) rerunJudged(ctx context.Context, d *schema.Dialogue, st step, tests map[int]*visibleTests, rep *Report) error {
	unverifiable := func(why string) { rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, st.turn, why}) }
	if e := st.rec; e != nil {
		got, res, text, err := c.rerunProgram(ctx, e, st.lang)
		if errors.Is(err, harness.ErrRebuild) {
			rep.Executions++
			rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: st.turn, Check: CheckRecord,
				Detail: "the record's code and tests do not rebuild the judge program its hash names (edited record)"})
			return nil
		}
		if err != nil {
			return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, st.turn, err)
		}
		c.compare(d, st, recordedOutcome(e), got, res, text, rep)
		return nil
	}
	t := requestTests(d, st.asst)
	if t != nil {
		t = tests[t.turn]
	}
	if (t == nil || len(t.tests) == 0) && (compileFailRe.MatchString(st.text) || loadFailRe.MatchString(st.text)) {
		// No test ran: the verdict is the code's own failure to load, which
		// any test shows alike.
		t = &visibleTests{tests: []string{"pass"}}
	}
	var why string
	switch {
	case t == nil:
		why = whyNoTests
	case t.err != "":
		why = "the tests the request shows do not parse: " + t.err
	case len(t.tests) == 0:
		why = whyNoTests
	default:
		if n, ok := verdictTotal(st.text); ok && n != len(t.tests) {
			why = fmt.Sprintf("the verdict counts %d tests, the request shows %d", n, len(t.tests))
		}
	}
	if why != "" {
		e, whyNot := c.storedRecord(d, st)
		if e == nil {
			unverifiable(why + whyNot)
			return nil
		}
		// The stored record ran the very code the turn shows: its judge
		// program is re-run, and the visible verdict and text must be
		// what it renders.
		got, res, text, err := c.rerunProgram(ctx, e, st.lang)
		if errors.Is(err, harness.ErrRebuild) {
			unverifiable(why + "; the stored record does not rebuild its judge program")
			return nil
		}
		if err != nil {
			return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, st.turn, err)
		}
		c.compare(d, st, recordedOutcome(e), got, res, text, rep)
		return nil
	}
	opts := harness.Options{Timeout: c.Opts.withDefaults().Timeout}
	run, cs := textLimits(st.text)
	if run > 0 {
		opts.Timeout = run
	}
	opts.CaseTimeout = min(5*time.Second, opts.Timeout) // as the stages judge (correct, simulate)
	if cs > 0 {
		opts.CaseTimeout = cs
		if run == 0 && cs < 5*time.Second {
			// A per-test timer under 5s was set from the run's own limit
			// (CaseTimeout = min(5s, Timeout)).
			opts.Timeout = cs
		}
	}
	p := schema.Problem{Query: schema.Query{ID: d.ID}, Tests: t.tests, TestImport: t.imports}
	// A problem the judge cannot build (a check() test without an entry
	// point, a language without a test harness) is not the code's failure.
	var err error
	if st.lang == executors.Python {
		_, err = harness.Build(p, st.code, opts)
	} else {
		_, err = harness.BuildIn(st.lang, p, st.code, opts)
	}
	if err != nil {
		unverifiable("the visible tests cannot be judged: " + err.Error())
		return nil
	}
	// A fenced block loses its code's final newline, which moves the
	// carets under a traceback's last line: correct judged its code with
	// it, simulate without (parse.Code). Both are the visible code.
	// Another block of the turn may be the one that ran (a tool call's
	// code sits at the end of the turn): tried when the first disagrees.
	var first Report
	for k, block := range append([]string{st.code}, st.alts...) {
		var v harness.Verdict
		for _, code := range []string{strings.TrimRight(block, "\n") + "\n", strings.TrimRight(block, "\n")} {
			if v, err = harness.JudgeIn(ctx, c.Exec, st.lang, p, code, opts); err != nil {
				return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, st.turn, err)
			}
			if sameOutput(st.text, v.Feedback) || !strings.Contains(v.Feedback, "^") {
				break
			}
		}
		var r Report
		c.compareText(d, st, strings.TrimRight(v.Feedback, "\n"), v.Result, &r)
		if r.Agreed > 0 {
			rep.add(&r)
			return nil
		}
		if k == 0 {
			first = r
		}
	}
	rep.add(&first)
	return nil
}

// verdictTotal is the number of tests a verdict text counts.
var verdictTotalRe = regexp.MustCompile(`\A(?:Execution timed out after \S+\.\n)?(?:All (\d+) tests? passed\.|\d+ of (\d+) tests? failed)`)

func verdictTotal(text string) (int, bool) {
	m := verdictTotalRe.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1] + m[2])
	return n, err == nil
}

// compare records one re-run against the recorded outcome and, when
// fresh is set, its printed output against the visible text.
func (c *Checker) compare(d *schema.Dialogue, st step, want, got outcome, res executors.Result, fresh string, rep *Report) {
	if want != got {
		endedOtherwise(d, st, want, got, res, rep)
		return
	}
	if fresh == "" {
		rep.Executions++
		rep.Agreed++
		return
	}
	c.compareText(d, st, fresh, res, rep)
}

// endedOtherwise records a re-run that ended otherwise than recorded: a
// mismatch, or unverifiable when the sandbox lacks a module the code
// imports (and the record did not show that very error).
func endedOtherwise(d *schema.Dialogue, st step, want, got outcome, res executors.Result, rep *Report) {
	if missingModule(got, res) && want != "ModuleNotFoundError" && want != "ImportError" {
		rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, st.turn, "needs a module the sandbox lacks: " + strings.TrimSpace(res.ErrorLine)})
		return
	}
	rep.Executions++
	rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: st.turn, Check: CheckRerun,
		Detail: "the re-run ended differently", Recorded: string(want), Rerun: string(got)})
}

func missingModule(got outcome, res executors.Result) bool {
	return got == "ModuleNotFoundError" || strings.Contains(res.Stderr, "No module named")
}

// compareText compares the text a re-run renders with the visible one.
// A verdict's first line (how many tests passed, or why none ran) is the
// verdict; past it, the values and output it shows. A traceback another
// tool printed (IPython's, in Code-Feedback) is compared by what it
// reports, the output before it and the exception line, not by its frames.
func (c *Checker) compareText(d *schema.Dialogue, st step, fresh string, res executors.Result, rep *Report) {
	seen, got := normalize(st.text), normalize(fresh)
	if seen == got {
		rep.Executions++
		rep.Agreed++
		return
	}
	head := func(s string) string { h, _, _ := strings.Cut(s, "\n"); return h }
	if st.judged && head(seen) != head(got) {
		if missingModule(outcome(exceptionIn(fresh)), res) && !strings.Contains(seen, "No module named") {
			rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, st.turn, "needs a module the sandbox lacks: " + lastLine(exceptionLine(fresh))})
			return
		}
		rep.Executions++
		rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: st.turn, Check: CheckRerun,
			Detail: "the re-run's verdict differs", Recorded: clip(head(seen)), Rerun: clip(head(got))})
		return
	}
	if !st.judged && foreignTraceback(seen) && strings.HasPrefix(seen, normalize(res.Stdout)) &&
		exceptionLine(seen) == exceptionLine(got) {
		rep.Executions++
		rep.Agreed++
		return
	}
	if !st.judged {
		if w, g := textCellOutcome(st.text), cellOutcome(res); w != g {
			endedOtherwise(d, st, w, g, res, rep)
			return
		}
	}
	rep.Executions++
	rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: st.turn, Check: CheckOutput,
		Detail: "the re-run printed something else: " + partDiff(seen, got, "the re-run shows")})
}

// foreignTraceback reports a traceback this tool's runner did not print
// (its frames name "<cell-N>"; IPython's name "Cell In[N]").
func foreignTraceback(text string) bool {
	return (strings.Contains(text, "Traceback") || strings.Contains(text, "Cell In[")) && !strings.Contains(text, `"<cell-`)
}

// exceptionLine is the last line of a traceback naming the exception
// ("ZeroDivisionError: division by zero"), or "".
func exceptionLine(text string) string {
	lines := strings.Split(ansiRe.ReplaceAllString(text, ""), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); excMsgRe.MatchString(l) {
			return l
		}
	}
	return ""
}

var excMsgRe = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Iteration|Warning)(?:: .*)?$`)

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// rerunProgram re-runs a self-contained test program: the harness's judge
// re-runs it and its fresh record is classified as the recorded one is,
// with the text the judge renders; any other program is judged by its exit
// status (text "").
func (c *Checker) rerunProgram(ctx context.Context, e *schema.Execution, lang executors.Language) (outcome, executors.Result, string, error) {
	v, err := harness.Rerun(ctx, c.Exec, *e)
	if err == nil {
		fresh := v.Execution()
		text := ""
		if e.Judge != nil {
			text = strings.TrimRight(v.Feedback, "\n")
		}
		return recordedOutcome(&fresh), v.Result, text, nil
	}
	if !errors.Is(err, harness.ErrNotJudgeProgram) || e.Judge != nil {
		return "", executors.Result{}, "", err
	}
	timeout := time.Duration(e.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = c.Opts.withDefaults().Timeout
	}
	res, err := c.Exec.Run(ctx, executors.Request{Language: lang, Code: e.Code,
		Limits: executors.Limits{Timeout: timeout, MemoryBytes: e.MemoryB, CPUTime: timeout, OutputBytes: 256 << 10}})
	if err != nil {
		return "", executors.Result{}, "", err
	}
	switch {
	case res.TimedOut:
		return "timeout", res, "", nil
	case res.OK():
		return "pass", res, "", nil
	case res.Exception != "":
		return outcome(bare(res.Exception)), res, "", nil
	}
	return "fail", res, "", nil
}

// storedRecord is the judged record of st in the native dialogue d was
// exported from (Options.Stored), when that record ran exactly the code
// the turn shows; else nil and why not (to add to the reason the visible
// text alone cannot be re-run).
func (c *Checker) storedRecord(d *schema.Dialogue, st step) (*schema.Execution, string) {
	if c.Opts.Stored == nil {
		return nil, ""
	}
	sd := c.Opts.Stored(d.ID)
	if sd == nil {
		return nil, "; no stored record of the dialogue"
	}
	same := func(e *schema.Execution) bool {
		code := strings.TrimRight(e.Code, "\n")
		for _, b := range append([]string{st.code}, st.alts...) {
			if strings.TrimRight(b, "\n") == code {
				return true
			}
		}
		return false
	}
	// The same turn first (exports keep a dialogue's turns in place),
	// then any judged record of the dialogue that ran this code.
	var judged []*schema.Execution
	if st.turn < len(sd.Messages) {
		if e := sd.Messages[st.turn].Exec; e != nil && e.Judge != nil {
			judged = append(judged, e)
		}
	}
	for i := range sd.Messages {
		if e := sd.Messages[i].Exec; e != nil && e.Judge != nil {
			judged = append(judged, e)
		}
	}
	if len(judged) == 0 {
		return nil, "; the stored dialogue has no judged record"
	}
	for _, e := range judged {
		if same(e) {
			return e, ""
		}
	}
	return nil, "; the stored record ran other code than the turn shows"
}
