package correct

import (
	"context"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
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
	if r.Code != mutateScript && r.Limits.Timeout <= 2*time.Second {
		t.hang += time.Since(start)
		t.hangs++
	} else {
		t.rest += time.Since(start)
	}
	return res, err
}

// BenchmarkSampleCorrect runs the correct stage's mutation path on the 34
// sample problems of `make run` (data/problems.jsonl) as the stage does
// (four problems at a time), with runs expected to hang stopped at the
// old fixed 2 s and at the stage's defaults (loop_timeout, loop_factor),
// alternating in one process; x-old is
// the old path's time over the new one's. Both must keep the same number
// of dialogues of each kind.
//
//	go test -run '^$' -bench SampleCorrect -benchtime 1x ./stages/correct/
func BenchmarkSampleCorrect(b *testing.B) {
	ps, err := schema.LoadProblems("../../data/problems.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	base := sandbox(b)
	pass := func(factor float64, top time.Duration) (time.Duration, map[string]int, *hangTimer) {
		ex := &hangTimer{Executor: base}
		g := &Generator{Exec: ex, Checker: &Checker{Exec: ex, LoopFactor: factor, LoopTimeout: top}, Opts: Options{Seed: 1}}
		kinds := map[string]int{}
		var mu sync.Mutex
		start := time.Now()
		var eg errgroup.Group
		eg.SetLimit(4)
		for i := range ps {
			eg.Go(func() error {
				out, err := g.Generate(context.Background(), &ps[i])
				mu.Lock()
				defer mu.Unlock()
				for _, d := range out.Dialogues {
					kinds[d.Labels["bug_kind"]]++
				}
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), kinds, ex
	}
	var oldT, newT time.Duration
	for b.Loop() {
		o, ok, oh := pass(0, 2*time.Second)
		n, nk, nh := pass(DefaultStageOptions.LoopFactor, DefaultStageOptions.LoopTimeout)
		oldT, newT = oldT+o, newT+n
		b.Logf("old 2 s loop limit: %.1fs (%d runs expected to hang: %.1fs of sandbox time, other runs %.1fs), dialogues %v",
			o.Seconds(), oh.hangs, oh.hang.Seconds(), oh.rest.Seconds(), ok)
		b.Logf("default loop limit: %.1fs (%d runs expected to hang: %.1fs of sandbox time, other runs %.1fs), dialogues %v",
			n.Seconds(), nh.hangs, nh.hang.Seconds(), nh.rest.Seconds(), nk)
		for k, c := range ok {
			if nk[k] < c {
				b.Errorf("%s dialogues: %d with the old loop limit, %d with the default one", k, c, nk[k])
			}
		}
	}
	b.ReportMetric(newT.Seconds()/float64(b.N), "s")
	b.ReportMetric(oldT.Seconds()/float64(b.N), "s-fixed-loop-limit")
	b.ReportMetric(float64(oldT)/float64(newT), "x-old")
}
