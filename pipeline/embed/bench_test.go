package embed

import (
	"context"
	"testing"
)

// BenchmarkTFIDF150k embeds the 6,552 Code Alpaca instructions repeated to
// 150,000 texts (fit + transform, all cores) and reports texts/s. The
// target is >= 30,000/s.
func BenchmarkTFIDF150k(b *testing.B) {
	base := loadInstructions(b)
	texts := make([]string, 0, 150_000)
	for len(texts) < 150_000 {
		texts = append(texts, base[:min(len(base), 150_000-len(texts))]...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vecs, err := NewTFIDF(0).Embed(context.Background(), texts)
		if err != nil || len(vecs) != len(texts) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "texts/s")
}
