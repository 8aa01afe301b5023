package correct

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/schema"
)

// hangTimer sums the sandbox time of runs by whether they were expected to
// hang (run at the loop limit) or not.
type hangTimer struct {
	executors.Executor
	mu         sync.Mutex
	hang, rest time.Duration
	hangs      int
}

func (t *hangTimer) Run(ctx context.Context, r executors.Request) (executors.Result, error) {
	start := time.Now()
	res, err := t.Executor.Run(ctx, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Code != mutate.Script() && r.Limits.Timeout <= 2*time.Second && !strings.Contains(r.Code, "_cf_batch(") {
		t.hang += time.Since(start)
		t.hangs++
	} else {
		t.rest += time.Since(start)
	}
	return res, err
}

// BenchmarkSampleCorrect runs the correct stage's mutation path on the 34
// sample problems of `make run` (data/problems.jsonl) as the stage does
// (four problems at a time), once judging each candidate in a run of its
// own (the path before harness.JudgeBatch) and once with the stage's
// default batch, alternating in one process; x-per-candidate is the first
// one's time over the second's. Both must give the same dialogues.
//
//	go test -run '^$' -bench SampleCorrect -benchtime 1x ./stages/correct/
func BenchmarkSampleCorrect(b *testing.B) {
	ps, err := schema.LoadProblems("../../data/problems.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	base := sandbox(b)
	pass := func(noBatch bool) (time.Duration, []string, *hangTimer) {
		ex := &hangTimer{Executor: base}
		g := &mutationGenerator{Exec: ex, Checker: &checker{Exec: ex, LoopFactor: DefaultOptions.LoopFactor, LoopTimeout: DefaultOptions.LoopTimeout},
			Opts: mutationOptions{Seed: 1}, NoBatch: noBatch}
		texts := make([]string, len(ps))
		start := time.Now()
		var eg errgroup.Group
		eg.SetLimit(4)
		for i := range ps {
			eg.Go(func() error {
				out, err := g.Generate(context.Background(), &ps[i])
				for _, d := range out.Dialogues {
					texts[i] += d.ID + "\n"
					for _, m := range d.Messages {
						texts[i] += m.Content + "\n"
					}
				}
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), texts, ex
	}
	var oldT, newT time.Duration
	for b.Loop() {
		o, ot, oh := pass(true)
		n, nt, nh := pass(false)
		oldT, newT = oldT+o, newT+n
		b.Logf("a run per candidate: %.1fs (%d runs expected to hang: %.1fs of sandbox time, other runs %.1fs)",
			o.Seconds(), oh.hangs, oh.hang.Seconds(), oh.rest.Seconds())
		b.Logf("batch (default):     %.1fs (%d runs expected to hang: %.1fs of sandbox time, other runs %.1fs)",
			n.Seconds(), nh.hangs, nh.hang.Seconds(), nh.rest.Seconds())
		for i := range ps {
			if ot[i] != nt[i] {
				b.Errorf("%s: the batch gives other dialogues:\n%s\nthan a run per candidate:\n%s", ps[i].ID, nt[i], ot[i])
			}
		}
	}
	b.ReportMetric(newT.Seconds()/float64(b.N), "s")
	b.ReportMetric(oldT.Seconds()/float64(b.N), "s-run-per-candidate")
	b.ReportMetric(float64(oldT)/float64(newT), "x-per-candidate")
}
