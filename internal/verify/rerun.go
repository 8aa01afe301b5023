package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// outcome is what a run showed: "pass" (tests passed or the cell ran
// cleanly), "timeout", an exception name, or "fail" (failed without one).
type outcome string

// sessions keeps one session per language for a dialogue's cells.
type sessions struct {
	ex    executors.Executor
	lim   executors.Limits
	open  map[executors.Language]executors.Session
	limit map[executors.Language]time.Duration
}

func (s *sessions) get(ctx context.Context, lang executors.Language, timeout time.Duration) (executors.Session, error) {
	if sess := s.open[lang]; sess != nil && s.limit[lang] == timeout {
		return sess, nil
	} else if sess != nil {
		// A different per-cell limit needs a session opened with it; the
		// state moves on only within one session, as in the original run.
		sess.Close()
	}
	sess, err := s.ex.Open(ctx, lang, executors.SessionOptions{Limits: executors.Limits{Timeout: timeout}})
	if err != nil {
		return nil, fmt.Errorf("verify: open %s session: %w", lang, err)
	}
	s.open[lang], s.limit[lang] = sess, timeout
	return sess, nil
}

func (s *sessions) close() {
	for _, sess := range s.open {
		sess.Close()
	}
}

func newSessions(ex executors.Executor) *sessions {
	return &sessions{ex: ex, open: map[executors.Language]executors.Session{}, limit: map[executors.Language]time.Duration{}}
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

// rerunRecords re-runs every execution record of d in order.
func (c *Checker) rerunRecords(ctx context.Context, d *schema.Dialogue, rep *Report) error {
	o := c.Opts.withDefaults()
	ss := newSessions(c.Exec)
	defer ss.close()
	for i, m := range d.Messages {
		e := m.Exec
		if e == nil || !isExecution(m) {
			continue
		}
		lang := executors.Language(e.Language)
		if lang == "" {
			lang = executors.Python
		}
		if !lang.Valid() {
			rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, i, fmt.Sprintf("no %s runner in the sandbox", e.Language)})
			continue
		}
		timeout := time.Duration(e.TimeoutMS) * time.Millisecond
		if timeout <= 0 {
			timeout = o.Timeout
		}
		var got outcome
		var res executors.Result
		if e.Passed != nil { // a self-contained test program
			var err error
			got, res, err = c.rerunProgram(ctx, e, lang, timeout)
			if errors.Is(err, harness.ErrRebuild) {
				rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: i, Check: CheckRecord,
					Detail: "the record's code and tests do not rebuild the judge program its hash names (edited record)"})
				continue
			}
			if err != nil {
				return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, i, err)
			}
		} else {
			sess, err := ss.get(ctx, lang, timeout)
			if err != nil {
				return err
			}
			if res, err = sess.Exec(ctx, e.Code); err != nil {
				return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, i, err)
			}
			got = cellOutcome(res)
		}
		c.compare(d, i, recordedOutcome(e), got, res, rep)
	}
	return nil
}

// compare records the agreement or mismatch of one re-run.
func (c *Checker) compare(d *schema.Dialogue, turn int, want, got outcome, res executors.Result, rep *Report) {
	rep.Executions++
	if want == got {
		rep.Agreed++
		return
	}
	missing := got == "ModuleNotFoundError" || strings.Contains(res.Stderr, "No module named")
	if missing && want != "ModuleNotFoundError" && want != "ImportError" {
		rep.Executions--
		rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, turn, "needs a module the sandbox lacks: " + strings.TrimSpace(res.ErrorLine)})
		return
	}
	rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: turn, Check: CheckRerun,
		Detail: "the re-run ended differently", Recorded: string(want), Rerun: string(got)})
}

// rerunProgram re-runs a self-contained test program: the harness's judge
// re-runs it and its fresh record is classified as the recorded one is; any
// other program is judged by its exit status.
func (c *Checker) rerunProgram(ctx context.Context, e *schema.Execution, lang executors.Language, timeout time.Duration) (outcome, executors.Result, error) {
	v, err := harness.Rerun(ctx, c.Exec, *e)
	if err == nil {
		fresh := v.Execution()
		return recordedOutcome(&fresh), v.Result, nil
	}
	if !errors.Is(err, harness.ErrNotJudgeProgram) || e.Judge != nil {
		return "", executors.Result{}, err
	}
	res, err := c.Exec.Run(ctx, executors.Request{Language: lang, Code: e.Code,
		Limits: executors.Limits{Timeout: timeout, MemoryBytes: e.MemoryB, CPUTime: timeout, OutputBytes: 256 << 10}})
	if err != nil {
		return "", executors.Result{}, err
	}
	switch {
	case res.TimedOut:
		return "timeout", res, nil
	case res.OK():
		return "pass", res, nil
	case res.Exception != "":
		return outcome(bare(res.Exception)), res, nil
	}
	return "fail", res, nil
}

// rerunPlain re-runs a plain Code-Feedback dialogue: each assistant turn
// with a python block that is followed by an execution-result turn runs its
// python blocks, in order, as cells of one session; the last cell's outcome
// is compared with the outcome the recorded output shows. A result that is
// a test verdict (this tool's Code-Feedback export of a judged run) came
// from tests the file does not carry: the turn is counted unverifiable with
// that reason, never compared with a run without the tests. A compile or
// load failure the judge reported is what the code does on its own, so it
// is re-run and compared.
func (c *Checker) rerunPlain(ctx context.Context, d *schema.Dialogue, rep *Report) error {
	o := c.Opts.withDefaults()
	ss := newSessions(c.Exec)
	defer ss.close()
	for i := 0; i+1 < len(d.Messages); i++ {
		m, next := d.Messages[i], d.Messages[i+1]
		if m.Role != schema.RoleAssistant || !isExecution(next) {
			continue
		}
		var cells []string
		for _, b := range parse.CodeBlocks(m.Content) {
			if b.Lang == "python" && !b.Unclosed && strings.TrimSpace(b.Code) != "" {
				cells = append(cells, magicLineRe.ReplaceAllString(b.Code, ""))
			}
		}
		text := resultText(next)
		if testsVerdictRe.MatchString(text) || setupFailRe.MatchString(text) {
			rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, i + 1, "the result is a verdict of tests the file does not carry (export the native layout to re-run them)"})
			continue
		}
		if len(cells) == 0 {
			rep.Unverifiable = append(rep.Unverifiable, Unverifiable{d.ID, i + 1, "the execution result follows a turn without python code (the code was run through a tool call the file does not hold)"})
			continue
		}
		sess, err := ss.get(ctx, executors.Python, o.Timeout)
		if err != nil {
			return err
		}
		var res executors.Result
		for _, cell := range cells {
			if res, err = sess.Exec(ctx, cell); err != nil {
				return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, i, err)
			}
		}
		want := outcome("pass")
		if exc := shownException(text); exc != "" {
			want = outcome(exc)
		} else if loadFailRe.MatchString(text) {
			want = "fail"
		}
		c.compare(d, i+1, want, cellOutcome(res), res, rep)
	}
	return nil
}
