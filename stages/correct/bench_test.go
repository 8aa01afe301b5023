package correct

import (
	"context"
	"testing"
	"time"
)

// BenchmarkMutationPath measures the mutation path per problem on the first
// 20 MBPP problems (one worker) against a baseline of one reference-solution
// test run per problem in the same sandbox, and reports the ratio.
func BenchmarkMutationPath(b *testing.B) {
	ps := loadMBPP(b, 20)
	ex := sandbox(b)
	ctx := context.Background()
	c := &checker{Exec: ex}
	g := &mutationGenerator{Exec: ex, Checker: c, Opts: mutationOptions{Seed: 1}}
	var base, full time.Duration
	dialogues := 0
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for j := range ps {
			if _, err := c.Check(ctx, &ps[j], normalizeNewlines(ps[j].Solution), false); err != nil {
				b.Fatal(err)
			}
		}
		base += time.Since(t0)
		t0 = time.Now()
		for j := range ps {
			o, err := g.Generate(ctx, &ps[j])
			if err != nil {
				b.Fatal(err)
			}
			dialogues += len(o.Dialogues)
		}
		full += time.Since(t0)
	}
	n := float64(b.N * len(ps))
	b.ReportMetric(base.Seconds()*1000/n, "ms/reference-run")
	b.ReportMetric(full.Seconds()*1000/n, "ms/problem")
	b.ReportMetric(float64(full)/float64(base), "x-baseline")
	b.ReportMetric(float64(dialogues)/n, "dialogues/problem")
}
