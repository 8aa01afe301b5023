package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchtest"
)

// benchItems reads a size from the environment so `make bench` stays modest
// while the figures in the notes can be reproduced at full scale.
func benchItems(env string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
		return v
	}
	return def
}

const instantPipeline = `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
defaults: {concurrency: 8}
stages:
  - {stage: t-suffix, name: a, settings: {prompt: "-a"}}
  - {stage: t-suffix, name: b, settings: {prompt: "-b"}}
  - {stage: t-suffix, name: c, settings: {prompt: "-c"}}
`

// BenchmarkThreeStagesInstant: items/s through three instant stages,
// including the store writes (target >= 5,000/s). The baseline in the same
// benchmark streams the same items through the same three stage functions
// with plain file I/O and no engine (no store, no concurrency), so the ratio
// shows the engine's cost on a machine whose speed varies.
func BenchmarkThreeStagesInstant(b *testing.B) {
	n := benchItems("CODEFEEDBACK_BENCH_ITEMS", 20000)
	var total, base, cpu, baseCPU time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, file := setup(b, n, instantPipeline)
		cfg := mustLoad(b, file)
		start, cpu0 := time.Now(), benchtest.CPU(b)
		src := filepath.Join(dir, "q.jsonl")
		for j, st := range cfg.Stages {
			stage, err := st.reg.build(st.opts.Interface(), &Services{Name: "baseline", Stats: NewStats()})
			if err != nil {
				b.Fatal(err)
			}
			format := "native"
			if j > 0 {
				format = "items"
			}
			f, _ := lookupFormat(format)
			dst := filepath.Join(dir, fmt.Sprintf("base-%d.jsonl", j))
			w, err := newJSONLOut(dst, true)
			if err != nil {
				b.Fatal(err)
			}
			for it, err := range f(context.Background(), src) {
				if err != nil {
					b.Fatal(err)
				}
				outs, err := stage.each.Each(context.Background(), it)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					if err := w.Write(o); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			src = dst
		}
		base += time.Since(start)
		baseCPU += benchtest.CPU(b) - cpu0
		b.StartTimer()
		start, cpu0 = time.Now(), benchtest.CPU(b)
		if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		cpu += benchtest.CPU(b) - cpu0
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
	b.ReportMetric(float64(n*b.N)/base.Seconds(), "baseline-items/s")
	b.ReportMetric(total.Seconds()/base.Seconds(), "x-baseline-time")
	// CPU time (all goroutines, GC included) depends much less on the other
	// load of a shared machine than wall time.
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-us/item")
	b.ReportMetric(cpu.Seconds()/baseCPU.Seconds(), "x-baseline-cpu")
}

// BenchmarkRerunUnchanged: a re-run with nothing changed (target < 10 s for
// 100,000 items, zero stage calls), both through the completion markers and
// through the per-item store lookups (markers removed).
func BenchmarkRerunUnchanged(b *testing.B) {
	n := benchItems("CODEFEEDBACK_BENCH_RERUN_ITEMS", 100000)
	dir, file := setup(b, n, instantPipeline)
	cfg := mustLoad(b, file)
	mustRun(b, file, RunOptions{})
	resetCalls()
	b.ResetTimer()
	var unchanged, lookups time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
			b.Fatal(err)
		}
		unchanged += time.Since(start)
		b.StopTimer()
		for _, s := range []string{"a", "b", "c"} {
			os.Remove(filepath.Join(dir, "run", "stages", s, "done.json"))
		}
		b.StartTimer()
		start = time.Now()
		if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
			b.Fatal(err)
		}
		lookups += time.Since(start)
	}
	calls := callCount("a") + callCount("b") + callCount("c")
	if calls != 0 {
		b.Fatalf("re-run made %d stage calls, want 0", calls)
	}
	b.ReportMetric(unchanged.Seconds()/float64(b.N), "s/rerun-markers")
	b.ReportMetric(lookups.Seconds()/float64(b.N), "s/rerun-lookups")
	b.ReportMetric(float64(calls), "stage-calls")
}

// BenchmarkSlowStage: a 200 ms stage at concurrency 32 against the ideal
// 160 items/s.
func BenchmarkSlowStage(b *testing.B) {
	n := benchItems("CODEFEEDBACK_BENCH_SLOW_ITEMS", 640)
	y := onQueries(`
  - {stage: t-suffix, name: slow, concurrency: 32, settings: {sleep: 200ms}}
`)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_, file := setup(b, n, y)
		cfg := mustLoad(b, file)
		b.StartTimer()
		start := time.Now()
		if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	rate := float64(n*b.N) / total.Seconds()
	b.ReportMetric(rate, "items/s")
	b.ReportMetric(rate/160, "ratio-to-ideal")
}

// BenchmarkPeakMemory: peak live Go heap (runtime/metrics /gc/heap/live,
// the heap marked live by the last GC, so garbage awaiting collection does
// not count) of a per-item stage over n and 10n items; a streaming engine
// keeps the ratio near 1. It also reports the peak RSS of each run (VmHWM,
// reset before the run), which includes the pages of the store's memory map
// the kernel keeps resident, and the store file's size.
func BenchmarkPeakMemory(b *testing.B) {
	small := benchItems("CODEFEEDBACK_BENCH_MEM_ITEMS", 20000)
	peak := func(n int) (heap uint64, rss, store int64) {
		dir, file := setup(b, n, onQueries(`
  - {stage: t-suffix, name: a, concurrency: 8}
`))
		cfg := mustLoad(b, file)
		runtime.GC()
		resetPeakRSS()
		var max atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			for {
				metrics.Read(sample)
				if v := sample[0].Value.Uint64(); v > max.Load() {
					max.Store(v)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
			b.Fatal(err)
		}
		close(stop)
		<-done
		st, _ := os.Stat(filepath.Join(dir, "run", "store.db"))
		return max.Load(), peakRSS(), st.Size()
	}
	for i := 0; i < b.N; i++ {
		p1, r1, s1 := peak(small)
		p10, r10, s10 := peak(10 * small)
		b.ReportMetric(float64(p1)/(1<<20), fmt.Sprintf("MiB-live-heap-%d", small))
		b.ReportMetric(float64(p10)/(1<<20), fmt.Sprintf("MiB-live-heap-%d", 10*small))
		b.ReportMetric(float64(p10)/float64(p1), "ratio")
		if r1 > 0 {
			b.ReportMetric(float64(r1)/(1<<20), fmt.Sprintf("MiB-peak-rss-%d", small))
			b.ReportMetric(float64(r10)/(1<<20), fmt.Sprintf("MiB-peak-rss-%d", 10*small))
		}
		b.ReportMetric(float64(s1)/(1<<20), fmt.Sprintf("MiB-store-%d", small))
		b.ReportMetric(float64(s10)/(1<<20), fmt.Sprintf("MiB-store-%d", 10*small))
	}
}

// resetPeakRSS resets the kernel's peak RSS record of this process (Linux:
// writing 5 to clear_refs), so VmHWM measures from now on; peakRSS reads it,
// or 0 where unavailable.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
