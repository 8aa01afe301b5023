package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
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
	case e.TimedOut:
		return "timeout"
	case e.Passed == nil && e.ExitCode == 0 && !e.OOM:
		return "pass"
	case e.Exception != "":
		return outcome(bare(e.Exception))
	}
	return "fail"
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
			res, err = c.Exec.Run(ctx, executors.Request{Language: lang, Code: e.Code,
				Limits: executors.Limits{Timeout: timeout, MemoryBytes: e.MemoryB, CPUTime: timeout, OutputBytes: 256 << 10}})
			if err != nil {
				return fmt.Errorf("verify: re-run %s turn %d: %w", d.ID, i, err)
			}
			got = programOutcome(e.Code, res)
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

// programOutcome classifies a self-contained test program's run: the
// harness's judge (its marker lines) or a plain program (exit status).
func programOutcome(code string, res executors.Result) outcome {
	m := markerRe.FindStringSubmatch(code)
	if m == nil {
		if res.TimedOut {
			return "timeout"
		}
		if res.OK() {
			return "pass"
		}
		if res.Exception != "" {
			return outcome(bare(res.Exception))
		}
		return "fail"
	}
	return judgeOutcome(m[1], res)
}

// judgeOutcome reads the harness judge's marker lines ("<marker> plan|load|
// case|done <json>"): pass when the judge finished, the code loaded and
// every planned case passed; else the first failure's exception, "timeout",
// or "fail".
func judgeOutcome(marker string, res executors.Result) outcome {
	var plan struct {
		Cases []string `json:"cases"`
	}
	var load struct {
		OK        int    `json:"ok"`
		Kind      string `json:"kind"`
		Exception string `json:"exception"`
	}
	type cas struct {
		Kind      string `json:"kind"`
		Exception string `json:"exception"`
	}
	var cases []cas
	sawPlan, sawLoad, done := false, false, false
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), marker+" ")
		if !ok {
			continue
		}
		kind, body, _ := strings.Cut(line, " ")
		switch kind {
		case "plan":
			sawPlan = json.Unmarshal([]byte(body), &plan) == nil
		case "load":
			sawLoad = json.Unmarshal([]byte(body), &load) == nil
		case "case":
			var c cas
			if json.Unmarshal([]byte(body), &c) == nil {
				cases = append(cases, c)
			}
		case "done":
			done = true
		}
	}
	if sawLoad && load.OK == 0 {
		if load.Kind == "timeout" {
			return "timeout"
		}
		if load.Exception != "" {
			return outcome(load.Exception)
		}
		return "fail"
	}
	for _, c := range cases {
		switch {
		case c.Kind == "pass":
		case c.Kind == "timeout":
			return "timeout"
		case c.Exception != "":
			return outcome(c.Exception)
		default:
			return "fail"
		}
	}
	if res.TimedOut {
		return "timeout"
	}
	if done && sawPlan && sawLoad && len(cases) == len(plan.Cases) && len(cases) > 0 {
		return "pass"
	}
	return "fail"
}

// rerunPlain re-runs a plain Code-Feedback dialogue: each assistant turn
// with a python block that is followed by an execution-result turn runs its
// python blocks, in order, as cells of one session; the last cell's outcome
// is compared with the outcome the recorded output shows.
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
		if exc := exceptionIn(next.Content); exc != "" {
			want = outcome(exc)
		}
		c.compare(d, i+1, want, cellOutcome(res), res, rep)
	}
	return nil
}
