package correct

import (
	"context"
	"fmt"

	"github.com/codefeedback/codefeedback/schema"
)

// Verify re-runs every execution turn of a correct-stage dialogue and checks
// that the fresh run shows the same thing: the same outcome (exception type,
// wrong answer, timeout or pass) as recorded, a bug kind that matches the
// dialogue's bug_kind label on the first failing run, and a passing last run.
// It returns nil when all hold; an error names the first mismatch.
func Verify(ctx context.Context, c *Checker, d *schema.Dialogue) error {
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
			return err
		}
		recorded := observe(executionResult(m.Exec))
		if run.Observed != recorded {
			return fmt.Errorf("dialogue %s: execution turn %d: re-run observed %s, recorded %s", d.ID, i, run.Observed, recorded)
		}
		if i == 0 && string(KindOf(run.Observed)) != d.Labels["bug_kind"] {
			return fmt.Errorf("dialogue %s: buggy run observed %s, which is not bug kind %q", d.ID, run.Observed, d.Labels["bug_kind"])
		}
		if i == len(execs)-1 && !run.Passed() {
			return fmt.Errorf("dialogue %s: the fix does not pass on re-run: %s", d.ID, run.Observed)
		}
	}
	return nil
}
