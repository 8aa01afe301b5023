package evaluate

import (
	"time"

	"github.com/codefeedback/codefeedback/executors/harness"
)

// Skipped is a benchmark record that could not become a task; the rest of
// the benchmark is evaluated without it and the report names it.
type Skipped struct {
	Benchmark string `json:"benchmark"`
	TaskID    string `json:"task_id"`
	Reason    string `json:"reason"`
}

// caseLimits are the harness options for t: with Options.CaseTimeout set,
// each case gets that long, and the whole run enough for every case plus
// loading (a run bounded by the default 10 s would cut a slow reference
// short however long its cases may take). For EvalPlus inputs it raises
// the reference's limit per input; the candidate's limits stay EvalPlus's
// (4 x the reference's time, at least 4 s).
func (e *Evaluator) caseLimits(t Task) (harness.Options, harness.PlusOptions) {
	jo, po := e.opts.Judge, e.opts.Plus
	ct := e.opts.CaseTimeout
	if ct <= 0 {
		return jo, po
	}
	jo.CaseTimeout = ct
	whole := ct * time.Duration(len(t.Problem.Tests)+2)
	jo.Timeout = max(jo.Timeout, whole, 10*time.Second)
	if t.Plus != nil {
		po = po.Resolved()
		po.RefTimeout = max(po.RefTimeout, ct)
		po.Timeout = max(po.Timeout, 4*whole)
	}
	return jo, po
}

// NoteLoad records, for each benchmark of the report, the records skipped
// while loading it, and marks a benchmark that could not be loaded at all
// with its error (it then has no samples; the others are unaffected).
func (r *Report) NoteLoad(skipped []Skipped, failed map[string]error) {
	for i := range r.Benchmarks {
		b := &r.Benchmarks[i]
		for _, s := range skipped {
			if s.Benchmark == b.Name {
				b.Skipped = append(b.Skipped, s)
			}
		}
		if err := failed[b.Name]; err != nil {
			b.Error = err.Error()
		}
	}
}
