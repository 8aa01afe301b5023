package leetcode

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/internal/neighbors"
	"github.com/codefeedback/codefeedback/pipeline/embed"
)

// BenchmarkRelated measures the chain neighbour search (text cosine plus
// tag Jaccard, exhaustive) on the 1890-problem LeetCodeDataset train file,
// against neighbors.ExactKNN (text cosine only, parallel) on the same vectors as
// the baseline. Report the ratio of the two ns/op.
func BenchmarkRelated(b *testing.B) {
	ps := loadLeetCode(b, "leetcode/LeetCodeDataset-v0.2.0-train.jsonl.gz")
	texts := make([]string, len(ps))
	tags := make([][]string, len(ps))
	for i, p := range ps {
		texts[i], tags[i] = Statement(p), Tags(p)
	}
	vecs, err := embed.NewTFIDF(embed.DefaultDim).Embed(context.Background(), texts)
	if err != nil {
		b.Fatal(err)
	}
	all := make([]int, len(vecs))
	for i := range all {
		all[i] = i
	}
	b.Run("baseline_pack_ExactKNN", func(b *testing.B) {
		for b.Loop() {
			if _, err := neighbors.ExactKNN(context.Background(), vecs, all, DefaultOptions.Neighbors); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Related", func(b *testing.B) {
		for b.Loop() {
			Related(vecs, tags, DefaultOptions.TagWeight, DefaultOptions.Neighbors)
		}
	})
	b.Run("Chains_end_to_end", func(b *testing.B) {
		for b.Loop() {
			if _, err := Chains(context.Background(), embed.NewTFIDF(embed.DefaultDim), ps, DefaultOptions); err != nil {
				b.Fatal(err)
			}
		}
	})
}
