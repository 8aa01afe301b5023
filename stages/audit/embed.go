package audit

import (
	"context"
	"fmt"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"
)

// DefaultEmbedThreshold is the cosine similarity at or above which the
// embedding check flags a dialogue. 0.6 with the default TF-IDF embedder
// finds 34 of 40 lightly reworded benchmark statements and flags 15 of 2,017
// unrelated Code Alpaca questions (see TestEmbeddingParaphrase).
const DefaultEmbedThreshold = 0.6

// embedIndex holds the unit vectors of every benchmark task's statement.
type embedIndex struct {
	e         embed.Embedder
	threshold float32
	vecs      [][][]float32 // per benchmark, per task
}

// EnableEmbedding turns on the paraphrase check (measure 3): every task's
// statement (Problem.Text) and every dialogue's first user turn are
// embedded with e, and a dialogue is flagged against a task when their
// cosine similarity is at least threshold (DefaultEmbedThreshold if <= 0).
// The tasks are embedded now, in one call, so an unfitted embed.TFIDF learns
// its IDF from the benchmarks. Call it before Run; it is not safe to call
// concurrently with Run. The cost is one dot product per dialogue and task
// (1,138 x 384 for HumanEval+MBPP with the default TF-IDF).
func (a *Auditor) EnableEmbedding(ctx context.Context, e embed.Embedder, threshold float64) error {
	if threshold <= 0 {
		threshold = DefaultEmbedThreshold
	}
	var texts []string
	var counts []int
	for _, x := range a.indexes {
		counts = append(counts, len(x.texts))
		texts = append(texts, x.texts...)
	}
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("audit: embed benchmark tasks: %w", err)
	}
	if len(vs) != len(texts) {
		return fmt.Errorf("audit: embedder returned %d vectors for %d tasks", len(vs), len(texts))
	}
	ix := &embedIndex{e: e, threshold: float32(threshold)}
	for _, n := range counts {
		ix.vecs = append(ix.vecs, vs[:n])
		vs = vs[n:]
	}
	a.emb = ix
	a.opts.EmbedThreshold = threshold
	return nil
}

// firstUserTurn is the text the paraphrase check embeds: the question.
func firstUserTurn(d *schema.Dialogue) string {
	for _, m := range d.Messages {
		if m.Role == schema.RoleUser {
			return m.Content
		}
	}
	return ""
}

// check embeds the dialogue's first user turn and adds a finding for every
// task at or above the threshold.
func (ix *embedIndex) check(ctx context.Context, d *schema.Dialogue, id string, r *Result, indexes []*Index) error {
	q := firstUserTurn(d)
	if q == "" {
		return nil
	}
	vs, err := ix.e.Embed(ctx, []string{q})
	if err != nil {
		return err
	}
	if len(vs) != 1 {
		return fmt.Errorf("embedder returned %d vectors for 1 text", len(vs))
	}
	v := vs[0]
	for bi, tasks := range ix.vecs {
		for t, tv := range tasks {
			if c := embed.Dot(v, tv); c >= ix.threshold {
				r.Findings = append(r.Findings, schema.Finding{
					DialogueID: id, Benchmark: indexes[bi].name, TaskID: indexes[bi].tasks[t].id, Method: MethodEmbedding,
					Score: float64(c), Evidence: fmt.Sprintf("cosine %.3f between the first user turn and the task statement", c),
				})
			}
		}
	}
	return nil
}
