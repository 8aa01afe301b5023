package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
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
	f, err := os.Create(filepath.Join(dir, "q.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 11))
	pre := []string{"", "Please ", "Can you ", "I need to ", "Help me "}
	suf := []string{"", " in Python", " efficiently", " with comments", " step by step"}
	for i := range n {
		t := base[i%len(base)]
		if i >= len(base) {
			w := strings.Fields(t)
			var o []string
			for _, x := range w {
				switch r := rng.Float64(); {
				case r < 0.08:
				case r < 0.12:
					o = append(o, x, x)
				default:
					o = append(o, x)
				}
			}
			if len(o) > 2 {
				k := rng.IntN(len(o) - 1)
				o[k], o[k+1] = o[k+1], o[k]
			}
			t = pre[rng.IntN(len(pre))] + strings.Join(o, " ") + suf[rng.IntN(len(suf))]
		}
		j, _ := json.Marshal(schema.Query{ID: fmt.Sprintf("q%d", i), Text: t})
		f.Write(append(j, '\n'))
	}
	f.Close()
	// Outputs resolve against the current directory (the package's, under
	// go test), so the output goes to the temporary directory by full path.
	y := "inputs: [{path: q.jsonl}]\nstages:\n  - {stage: pack, settings: {seed: 1}}\noutputs: [{path: " +
		strconv.Quote(filepath.Join(dir, "out.jsonl")) + ", format: items}]\n"
	os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(y), 0o644)
	for b.Loop() {
		cfg, err := pipeline.Load(filepath.Join(dir, "p.yaml"), filepath.Join(dir, "run"+strconv.Itoa(rng.IntN(1e9))))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		st := m.Stages[0].Stats
		b.ReportMetric(time.Since(start).Seconds(), "s-run")
		b.ReportMetric(st["seconds/search"], "s-search")
		b.ReportMetric(st["recall@4_sample"], "recall@4")
		b.Logf("%d queries: run %.1fs, search %.1fs, recall@4 %.4f on the sample, %v groups of 2, %v of 3, %v leftovers",
			n, time.Since(start).Seconds(), st["seconds/search"], st["recall@4_sample"], st["groups/2"], st["groups/3"], st["leftovers"])
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9, "cpu-s")
}
