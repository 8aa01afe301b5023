package neighbors

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchtest"
	"github.com/codefeedback/codefeedback/pipeline/embed"
)

func alpacaTexts(b testing.TB) []string {
	qs := loadAlpaca(b)
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	return texts
}

// BenchmarkPack156k packs 156,000 perturbed Code Alpaca queries (near-
// duplicates of 22,000 instructions) with 384-dimensional TF-IDF vectors
// through the HNSW path at the default settings, embedding chunk by chunk
// into a sparse set as the pack stage does, and measures the kNN lists'
// recall@4 on 1,000 queries against exact search over all 156,000. The
// baseline is that exact search extrapolated to every query (x-exact is
// its time over the index's). With PACK_BENCH_OLD=1 it also runs the
// previous path (a search per node, ef_search wide, after building) on the
// same index settings and reports its recall and time ratio.
//
//	go test -run '^$' -bench Pack156k -benchtime 1x -timeout 30m ./internal/neighbors/
func BenchmarkPack156k(b *testing.B) {
	n := 156_000
	if s := os.Getenv("PACK_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	texts := benchtest.Perturbed(alpacaTexts(b), n, 1)
	for b.Loop() {
		start, cpu0 := time.Now(), benchtest.CPUSeconds(b)
		tf := embed.NewTFIDF(384)
		tf.Fit(texts)
		vecs := NewVectors(384)
		for lo := 0; lo < len(texts); lo += 8192 {
			vecs.Append(tf.Transform(texts[lo:min(lo+8192, len(texts))]))
		}
		embedS := time.Since(start).Seconds()
		cfg := DefaultConfig
		cfg.RecallSample = 1000
		res, err := PackVectors(context.Background(), vecs, cfg)
		if err != nil {
			b.Fatal(err)
		}
		total := time.Since(start).Seconds()
		exactAll := res.RecallSeconds * float64(n) / float64(cfg.RecallSample)
		b.ReportMetric(embedS, "s-embed")
		b.ReportMetric(res.SearchSeconds, "s-search")
		b.ReportMetric(total, "s-total")
		b.ReportMetric(benchtest.CPUSeconds(b)-cpu0, "cpu-s")
		b.ReportMetric((benchtest.CPUSeconds(b)-cpu0)/total, "cores-used")
		b.ReportMetric(res.Recall, "recall@4")
		b.ReportMetric(exactAll/res.SearchSeconds, "x-exact")
		b.ReportMetric(float64(vecs.Bytes())/(1<<20), "MiB-vectors")
		b.ReportMetric(res.CosWithin, "cos-within")
		b.ReportMetric(res.CosRandom, "cos-random")
		b.ReportMetric(float64(len(res.Groups)), "groups")
		b.Logf("%d queries: embed %.1fs, neighbours %.1fs (%s), total %.1fs, %d groups, %d leftovers, recall@4 %.4f; exact search extrapolated %.0fs",
			vecs.Len(), embedS, res.SearchSeconds, res.Method, total, len(res.Groups), len(res.Leftovers), res.Recall, exactAll)
		if os.Getenv("PACK_BENCH_OLD") == "1" {
			start := time.Now()
			h := NewHNSW(cfg.M, cfg.EfConstruction, cfg.EfSearch)
			if _, err := h.build(context.Background(), vecs, cfg.Seed, 0); err != nil {
				b.Fatal(err)
			}
			old, err := h.KNN(context.Background(), cfg.K)
			if err != nil {
				b.Fatal(err)
			}
			oldS := time.Since(start).Seconds()
			r, err := sampleRecall(context.Background(), vecs, old, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r, "recall@4-search-per-node")
			b.ReportMetric(oldS/res.SearchSeconds, "x-search-per-node")
			b.Logf("search per node (ef_search %d): %.1fs, recall@4 %.4f", cfg.EfSearch, oldS, r)
		}
	}
	b.ReportMetric(benchtest.PeakRSSMiB(), "peak-RSS-MiB")
}

// BenchmarkRecall20k builds the index on a 20,000-query sample of the
// perturbed pool and measures recall@4 of every query against exact search
// on the same sample, for the kNN lists pack uses and for a search per node
// of the finished graph (ef_search wide); x-exact is exact time / index
// time.
//
//	go test -run '^$' -bench Recall20k -benchtime 1x -timeout 30m ./internal/neighbors/
func BenchmarkRecall20k(b *testing.B) {
	all156 := benchtest.Perturbed(alpacaTexts(b), 156_000, 1)
	rng := rand.New(rand.NewPCG(5, 5))
	perm := rng.Perm(len(all156))[:20_000]
	texts := make([]string, len(perm))
	for i, p := range perm {
		texts[i] = all156[p]
	}
	dense, err := embed.NewTFIDF(384).Embed(context.Background(), texts)
	if err != nil {
		b.Fatal(err)
	}
	vecs := FromDense(dense)
	for b.Loop() {
		start := time.Now()
		h := NewHNSW(DefaultConfig.M, DefaultConfig.EfConstruction, DefaultConfig.EfSearch)
		approx, err := h.BuildKNN(context.Background(), vecs, 1, 4)
		if err != nil {
			b.Fatal(err)
		}
		idxS := time.Since(start).Seconds()
		start = time.Now()
		searched, err := h.KNN(context.Background(), 4)
		if err != nil {
			b.Fatal(err)
		}
		searchS := time.Since(start).Seconds()
		start = time.Now()
		exact, err := ExactKNNVectors(context.Background(), vecs, all(vecs.Len()), 4)
		if err != nil {
			b.Fatal(err)
		}
		exactS := time.Since(start).Seconds()
		r, rs := Recall(approx, exact), Recall(searched, exact)
		b.ReportMetric(r, "recall@4")
		b.ReportMetric(rs, "recall@4-search-per-node")
		b.ReportMetric(idxS, "s-index")
		b.ReportMetric(exactS, "s-exact")
		b.ReportMetric(exactS/idxS, "x-exact")
		b.Logf("20,000 sample: recall@4 %.4f (a search per node after building: %.4f, %.1fs more); index %.1fs, exact %.1fs",
			r, rs, searchS, idxS, exactS)
	}
}
