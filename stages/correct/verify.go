package correct

import (
	"context"
	"fmt"

	"github.com/codefeedback/codefeedback/schema"
)

// verifyDialogue re-runs every execution turn of a correct-stage dialogue and checks
// that the fresh run shows the same thing: the same pass/fail, timeout and
// exception type as recorded; on the first failing run, the dialogue's
// observed label and a bug kind that matches its bug_kind label; and a
// passing last run. It returns nil when all hold; an error names the first
// mismatch.
func verifyDialogue(ctx context.Context, c *checker, d *schema.Dialogue) error {
	var execs []*schema.Message
	for i := range d.Messages {
		if d.Messages[i].Role == schema.RoleExecution {
			execs = append(execs, &d.Messages[i])
		}
	}
	if len(execs) < 2 {
		return fmt.Errorf("dialogue %s: %d execution turns, want at least 2", d.ID, len(execs))
	}
	for i, m := range execs {
		if m.Exec == nil {
			return fmt.Errorf("dialogue %s: execution turn %d has no record", d.ID, i)
		}
		run, err := c.Rerun(ctx, m.Exec)
		if err != nil {
			return fmt.Errorf("dialogue %s: execution turn %d: %w", d.ID, i, err)
		}
		fresh := run.Verdict.Execution()
		// A program that hangs ends either at the run's deadline or at a
		// test's own limit, whichever the machine's load reaches first: both
		// are "did not finish", so a timeout matches a fresh failing run
		// without an exception, and the other way round.
		unfinished := func(timedOut, passed bool, exc string) bool { return timedOut || (!passed && exc == "") }
		sameEnd := m.Exec.TimedOut == fresh.TimedOut ||
			(m.Exec.Passed != nil && unfinished(m.Exec.TimedOut, *m.Exec.Passed, m.Exec.Exception) && unfinished(fresh.TimedOut, *fresh.Passed, fresh.Exception))
		if rec := m.Exec; rec.Passed == nil || *rec.Passed != *fresh.Passed || !sameEnd || rec.Exception != fresh.Exception {
			return fmt.Errorf("dialogue %s: execution turn %d: re-run shows passed %v, timed out %v, exception %q; recorded passed %v, timed out %v, exception %q",
				d.ID, i, *fresh.Passed, fresh.TimedOut, fresh.Exception, rec.Passed != nil && *rec.Passed, rec.TimedOut, rec.Exception)
		}
		if i == 0 {
			if run.Observed != d.Labels["observed"] || string(run.Kind()) != d.Labels["bug_kind"] {
				return fmt.Errorf("dialogue %s: buggy run observed %s, labelled %s of bug kind %q", d.ID, run.Observed, d.Labels["observed"], d.Labels["bug_kind"])
			}
		}
		if i == len(execs)-1 && !run.Passed() {
			return fmt.Errorf("dialogue %s: the fix does not pass on re-run: %s", d.ID, run.Observed)
		}
	}
	return nil
}
