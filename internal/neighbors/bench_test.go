package neighbors

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline/embed"
)

var (
	prefixes = []string{"", "Please ", "Can you ", "I need to ", "Help me ", "Quickly "}
	suffixes = []string{"", " in Python", " efficiently", " with comments", " and explain it", " using a function", " step by step"}
)

// perturbed returns n texts made from base: copy 0 is base itself, later
// copies drop and swap words, change numbers and add a prefix and suffix,
// as a stand-in for a 156,000-query pool.
func perturbed(base []string, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]string, 0, n)
	for c := 0; len(out) < n; c++ {
		for _, t := range base {
			if len(out) == n {
				break
			}
			if c == 0 {
				out = append(out, t)
				continue
			}
			words := strings.Fields(t)
			var w []string
			for _, x := range words {
				switch r := rng.Float64(); {
				case r < 0.08: // drop
				case r < 0.12:
					if _, err := strconv.Atoi(x); err == nil {
						x = strconv.Itoa(rng.IntN(1000))
					}
					w = append(w, x, x)
				default:
					w = append(w, x)
				}
			}
			if len(w) > 2 {
				i := rng.IntN(len(w) - 1)
				w[i], w[i+1] = w[i+1], w[i]
			}
			out = append(out, prefixes[rng.IntN(len(prefixes))]+strings.Join(w, " ")+suffixes[rng.IntN(len(suffixes))])
		}
	}
	return out
}

func alpacaTexts(b testing.TB) []string {
	qs := loadAlpaca(b)
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	return texts
}

// cpuSeconds is the user+system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

// BenchmarkPack156k packs 156,000 perturbed Code Alpaca queries with
// 384-dimensional TF-IDF vectors through the HNSW path, measuring the
// index's recall@4 on 1,000 queries against exact search over all 156,000.
// It reports the seconds of each phase and the peak RSS of the process.
//
//	go test -run '^$' -bench Pack156k -benchtime 1x -timeout 30m ./stages/pack/
func BenchmarkPack156k(b *testing.B) {
	n := 156_000
	if s := os.Getenv("PACK_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	texts := perturbed(alpacaTexts(b), n, 1)
	for b.Loop() {
		start, cpu0 := time.Now(), cpuSeconds()
		vecs, err := embed.NewTFIDF(384).Embed(context.Background(), texts)
		if err != nil {
			b.Fatal(err)
		}
		embedS := time.Since(start).Seconds()
		cfg := DefaultConfig
		cfg.RecallSample = 1000
		res, err := Pack(context.Background(), vecs, cfg)
		if err != nil {
			b.Fatal(err)
		}
		total := time.Since(start).Seconds()
		b.ReportMetric(embedS, "s-embed")
		b.ReportMetric(res.SearchSeconds, "s-search")
		b.ReportMetric(total, "s-total")
		b.ReportMetric(cpuSeconds()-cpu0, "cpu-s")
		b.ReportMetric(res.Recall, "recall@4")
		b.ReportMetric(res.CosWithin, "cos-within")
		b.ReportMetric(res.CosRandom, "cos-random")
		b.ReportMetric(float64(len(res.Groups)), "groups")
		b.Logf("%d queries: embed %.1fs, neighbours %.1fs (%s), total %.1fs, %d groups, %d leftovers, recall@4 %.4f",
			len(vecs), embedS, res.SearchSeconds, res.Method, total, len(res.Groups), len(res.Leftovers), res.Recall)
	}
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
}

// BenchmarkRecall20k builds the index on a 20,000-query sample of the
// perturbed pool and measures recall@4 of every query against exact search
// on the same sample; ratio is exact time / index time.
//
//	go test -run '^$' -bench Recall20k -benchtime 1x -timeout 30m ./stages/pack/
func BenchmarkRecall20k(b *testing.B) {
	all156 := perturbed(alpacaTexts(b), 156_000, 1)
	rng := rand.New(rand.NewPCG(5, 5))
	perm := rng.Perm(len(all156))[:20_000]
	texts := make([]string, len(perm))
	for i, p := range perm {
		texts[i] = all156[p]
	}
	vecs, err := embed.NewTFIDF(384).Embed(context.Background(), texts)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		start := time.Now()
		h := NewHNSW(DefaultConfig.M, DefaultConfig.EfConstruction, DefaultConfig.EfSearch)
		if err := h.Build(context.Background(), vecs, 1); err != nil {
			b.Fatal(err)
		}
		approx, err := h.KNN(context.Background(), 4)
		if err != nil {
			b.Fatal(err)
		}
		idxS := time.Since(start).Seconds()
		start = time.Now()
		exact, err := ExactKNN(context.Background(), vecs, all(len(vecs)), 4)
		if err != nil {
			b.Fatal(err)
		}
		exactS := time.Since(start).Seconds()
		r := Recall(approx, exact)
		b.ReportMetric(r, "recall@4")
		b.ReportMetric(idxS, "s-index")
		b.ReportMetric(exactS, "s-exact")
		b.ReportMetric(exactS/idxS, "ratio")
		b.Log(fmt.Sprintf("20,000 sample: recall@4 %.4f; index %.1fs, exact %.1fs", r, idxS, exactS))
	}
}
