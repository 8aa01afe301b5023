package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"golang.org/x/sync/errgroup"
)

// concatenated is the naive program a plain harness runs: the reference,
// the set-up and the tests in one script (HumanEval: plus check(entry)).
// It is the baseline the judge's overhead is measured against.
func concatenated(j harness.Job) string {
	p := j.Problem
	var b strings.Builder
	b.WriteString(j.Code + "\n" + p.Setup + "\n" + p.TestImport + "\n")
	for _, t := range p.Tests {
		b.WriteString(t + "\n")
	}
	if p.EntryPoint != "" {
		b.WriteString("check(" + p.EntryPoint + ")\n")
	}
	return b.String()
}

// benchSet judges every reference solution of one benchmark per iteration
// through bwrap ("judge"), next to running the concatenated programs
// ("baseline") with the same parallelism, and reports seconds per set and
// milliseconds per sample.
func benchSet(b *testing.B, name string) {
	var set benchmarkSet
	for _, s := range benchmarkSets {
		if s.name == name {
			set = s
		}
	}
	jobs := loadSet(b, set)
	ex := sandbox(b)
	ctx := context.Background()
	const parallel = 2 // the bwrap pool size used here (2 cores)
	report := func(b *testing.B, d time.Duration) {
		per := d / time.Duration(b.N)
		b.ReportMetric(per.Seconds(), "s/set")
		b.ReportMetric(float64(per.Microseconds())/1000/float64(len(jobs)), "ms/sample")
	}
	b.Run("baseline", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(parallel)
			for _, j := range jobs {
				g.Go(func() error {
					_, err := ex.Run(gctx, executors.Request{Language: executors.Python, Code: concatenated(j),
						Limits: executors.Limits{Timeout: 10 * time.Second}})
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
	b.Run("judge", func(b *testing.B) {
		start := time.Now()
		for range b.N {
			if _, err := harness.JudgeMany(ctx, ex, jobs, harness.Options{}, parallel); err != nil {
				b.Fatal(err)
			}
		}
		report(b, time.Since(start))
	})
}

func BenchmarkHumanEval(b *testing.B) { benchSet(b, "humaneval") }
func BenchmarkMBPP(b *testing.B)      { benchSet(b, "mbpp") }
