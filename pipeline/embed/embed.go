// Package embed turns texts (code questions, instructions) into vectors for
// near-duplicate and topic search. Two Embedders exist: TFIDF, built in,
// needing no model and no network, and OpenAI, which calls an
// OpenAI-compatible /v1/embeddings endpoint through llm.Client. The
// engine uses TFIDF when no embedding endpoint is configured.
//
// Vectors are L2-normalised, so the cosine similarity of two vectors is
// their dot product.
package embed

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/codefeedback/codefeedback/pipeline/llm"
)

// Embedder maps texts to vectors of one dimension, one per text, in order.
// Implementations are safe for concurrent use unless stated otherwise.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// OpenAI embeds with an OpenAI-compatible endpoint (batched, retried,
// cached and accounted by the llm.Client; see llm.Client.Embed).
type OpenAI struct{ c *llm.Client }

// NewOpenAI returns an Embedder over c, which must have an EmbedModel (or Model).
func NewOpenAI(c *llm.Client) *OpenAI { return &OpenAI{c: c} }

// Embed implements Embedder. Vectors are L2-normalised here, since not every
// server returns unit vectors.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := o.c.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	for _, v := range vecs {
		Normalize(v)
	}
	return vecs, nil
}

// Dot returns the dot product of a and b (which must have equal length).
func Dot(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// Cosine returns the cosine similarity of a and b, 0 when either is zero.
func Cosine(a, b []float32) float32 {
	na, nb := Dot(a, a), Dot(b, b)
	if na == 0 || nb == 0 {
		return 0
	}
	return Dot(a, b) / float32(math.Sqrt(float64(na))*math.Sqrt(float64(nb)))
}

// Normalize scales v to unit L2 norm in place (a zero vector stays zero).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// Hit is one search result.
type Hit struct {
	Index int     // position in the corpus
	Score float32 // cosine similarity (dot product of unit vectors)
}

// Nearest returns the k corpus vectors most similar to query, best first
// (ties by lower index). Vectors are assumed unit length.
func Nearest(query []float32, corpus [][]float32, k int) []Hit {
	hits := make([]Hit, 0, len(corpus))
	for i, v := range corpus {
		hits = append(hits, Hit{Index: i, Score: Dot(query, v)})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if k < len(hits) {
		hits = hits[:k]
	}
	return hits
}
