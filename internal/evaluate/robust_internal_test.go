package evaluate

import (
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/schema"
)

// TestCaseLimits: --case-timeout sets each case's limit and grows the whole
// run's limit with the number of cases; unset, the harness's own defaults
// stay. EvalPlus inputs keep the harness's limits for the candidate and
// raise only the reference's limit and the whole run's.
func TestCaseLimits(t *testing.T) {
	three := Task{Problem: schema.Problem{Tests: []string{"a", "b", "c"}}}
	plus := three
	plus.Plus = &harness.PlusTests{}
	for _, tc := range []struct {
		name        string
		ct          time.Duration
		task        Task
		wantCase    time.Duration
		wantWhole   time.Duration
		wantRef     time.Duration
		wantPlusAll time.Duration
	}{
		{"unset", 0, three, 0, 0, 0, 0},
		{"short", 2 * time.Second, three, 2 * time.Second, 10 * time.Second, 0, 0},
		{"slow reference", 20 * time.Second, three, 20 * time.Second, 100 * time.Second, 0, 0},
		{"plus short", 2 * time.Second, plus, 2 * time.Second, 10 * time.Second, 60 * time.Second, 300 * time.Second},
		{"plus", 90 * time.Second, plus, 90 * time.Second, 450 * time.Second, 90 * time.Second, 1800 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Evaluator{opts: Options{CaseTimeout: tc.ct}}
			jo, po := e.caseLimits(tc.task)
			if jo.CaseTimeout != tc.wantCase || jo.Timeout != tc.wantWhole || po.RefTimeout != tc.wantRef || po.Timeout != tc.wantPlusAll {
				t.Errorf("case %s whole %s ref %s plus %s; want %s %s %s %s", jo.CaseTimeout, jo.Timeout, po.RefTimeout, po.Timeout,
					tc.wantCase, tc.wantWhole, tc.wantRef, tc.wantPlusAll)
			}
		})
	}
}
