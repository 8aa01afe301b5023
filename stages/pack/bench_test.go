package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// BenchmarkStage156k runs the pack stage alone through the engine on
// 156,000 queries (Code Alpaca instructions, then copies of them with words
// dropped, doubled and swapped and a prefix and suffix added: near-
// duplicates) at the default settings, and reports the stage's seconds,
// the recall@4 it reports for the run, and the process's peak RSS (engine,
// store and stage together). PACK_BENCH_N changes the size.
//
//	go test -run '^$' -bench Stage156k -benchtime 1x -timeout 60m ./stages/pack/
func BenchmarkStage156k(b *testing.B) {
	n := 156_000
	if s := os.Getenv("PACK_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	var base []string
	for p, err := range schema.ReadProblems(context.Background(), sharedtest.Path(b, "queries/new_codealpaca.json.gz"),
		schema.ImportOptions{Format: schema.FormatAlpaca, AllowDuplicates: true}) {
		if err != nil {
			b.Fatal(err)
		}
		base = append(base, p.Text)
	}
	dir := b.TempDir()
	benchtest.WriteFile(b, filepath.Join(dir, "q.jsonl"), func(w io.Writer) {
		for i, t := range benchtest.Perturbed(base, n, 1) {
			j, _ := json.Marshal(schema.Query{ID: fmt.Sprintf("q%d", i), Text: t})
			w.Write(append(j, '\n'))
		}
	})
	// Outputs resolve against the current directory (the package's, under
	// go test), so the output goes to the temporary directory by full path.
	y := "inputs: [{path: q.jsonl}]\nstages:\n  - {stage: pack, settings: {seed: 1}}\noutputs: [{path: " +
		strconv.Quote(filepath.Join(dir, "out.jsonl")) + ", format: items}]\n"
	for runs := 0; b.Loop(); runs++ {
		// A new run directory each time: nothing cached.
		cfg := pipelinetest.Load(b, dir, "run_dir: "+strconv.Quote(filepath.Join(dir, "run"+strconv.Itoa(runs)))+"\n"+y)
		start := time.Now()
		m := pipelinetest.RunConfig(b, cfg, pipeline.RunOptions{})
		st := m.Stages[0].Stats
		b.ReportMetric(time.Since(start).Seconds(), "s-run")
		b.ReportMetric(st["seconds/search"], "s-search")
		b.ReportMetric(st["recall@4_sample"], "recall@4")
		b.Logf("%d queries: run %.1fs, search %.1fs, recall@4 %.4f on the sample, %v groups of 2, %v of 3, %v leftovers",
			n, time.Since(start).Seconds(), st["seconds/search"], st["recall@4_sample"], st["groups/2"], st["groups/3"], st["leftovers"])
	}
	b.ReportMetric(benchtest.PeakRSSMiB(), "peak-RSS-MiB")
	b.ReportMetric(benchtest.CPUSeconds(b), "cpu-s")
}
