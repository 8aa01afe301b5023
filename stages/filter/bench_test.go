package filter

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// BenchmarkFilterThroughput runs the filter stage through the engine
// against a fake model answering every call after 200 ms, with 32 items in
// flight and at most 32 model calls in flight. Two rubric calls per query
// make the ideal 32 / 0.2 s / 2 = 80 queries/s; the benchmark reports the
// achieved rate and its ratio to that ideal.
//
//	go test -run '^$' -bench FilterThroughput -benchtime 1x ./stages/filter/
func BenchmarkFilterThroughput(b *testing.B) {
	const n, latency, conc = 800, 200 * time.Millisecond, 32
	srv := llmtest.New(b, llmtest.WithLatency(latency), llmtest.WithoutRecording())
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: "Score: 4\nReason: fine"} })
	for _, k := range []string{"OPENAI_BASE_URL", "CODEFEEDBACK_LLM_BASE_URL", "CODEFEEDBACK_LLM_MODEL"} {
		b.Setenv(k, "")
	}
	var rate float64
	for i := range b.N {
		dir := b.TempDir()
		qs := make([]schema.Query, n)
		for j := range qs {
			qs[j] = schema.Query{ID: fmt.Sprintf("q%d-%d", i, j), Text: fmt.Sprintf("task %d of run %d", j, i)}
		}
		pipelinetest.WriteJSONL(b, filepath.Join(dir, "q.jsonl"), qs...)
		cfg := pipelinetest.Load(b, dir, fmt.Sprintf(`
run_dir: %q
inputs: [{path: q.jsonl}]
model: {base_url: %s, model: fake, concurrency: %d}
stages:
  - {stage: filter, concurrency: %d}
`, filepath.Join(dir, "run"), srv.URL, conc, conc))
		start := time.Now()
		m := pipelinetest.RunConfig(b, cfg, pipeline.RunOptions{})
		rate = float64(n) / time.Since(start).Seconds()
		if got := m.Stages[0].Stats["kept"]; got != n {
			b.Fatalf("kept %v of %d", got, n)
		}
	}
	ideal := float64(conc) / latency.Seconds() / 2
	b.ReportMetric(rate, "queries/s")
	b.ReportMetric(rate/ideal, "ratio-to-ideal")
}
