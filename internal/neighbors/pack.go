// Package pack groups related single-turn queries into multi-turn
// dialogues, as Code-Feedback does: every query is embedded, its nearest
// neighbours are found (exact search for small sets, an HNSW index for
// large ones), and a seed query is packed with one or two of its unused
// neighbours. The packed dialogues are optionally answered turn by turn by
// a writer model with each turn's code run in the sandbox.
package neighbors

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Config is the search and grouping part of the pack stage's settings.
type Config struct {
	// K is the number of nearest neighbours considered per seed.
	K int `yaml:"k" json:"k"`
	// Sizes are the dialogue sizes drawn from, each equally likely.
	Sizes []int `yaml:"sizes" json:"sizes"`
	// Floor is the least seed-neighbour cosine similarity in a dialogue.
	Floor float64 `yaml:"floor" json:"floor"`
	// Seed fixes seed order, size draws and the index's levels.
	Seed uint64 `yaml:"seed" json:"seed"`
	// ExactMax is the largest set searched exactly; above it an HNSW index
	// is used.
	ExactMax int `yaml:"exact_max" json:"exact_max"`
	// M and EfConstruction tune the HNSW index; the neighbour lists come
	// from building it (HNSW.BuildKNN), so EfSearch only sizes searches of
	// the finished index (HNSW.Search, HNSW.KNN).
	M              int `yaml:"m" json:"m"`
	EfConstruction int `yaml:"ef_construction" json:"ef_construction"`
	EfSearch       int `yaml:"ef_search" json:"ef_search"`
	// RecallSample queries are also searched exactly when the index is
	// used, to report the index's recall@K in the stats (0 = skip).
	RecallSample int `yaml:"recall_sample" json:"recall_sample"`
}

// DefaultConfig are the defaults of the pack stage.
var DefaultConfig = Config{K: 4, Sizes: []int{2, 3}, Floor: 0.25, Seed: 1, ExactMax: 5000,
	M: 12, EfConstruction: 64, EfSearch: 48, RecallSample: 200}

func (c Config) Validate() error {
	if c.K < 1 || c.K > 64 {
		return fmt.Errorf("pack: k %d: want 1..64", c.K)
	}
	if len(c.Sizes) == 0 {
		return errors.New("pack: sizes is empty")
	}
	for _, s := range c.Sizes {
		if s < 2 || s > c.K+1 {
			return fmt.Errorf("pack: size %d: want 2..k+1 (%d)", s, c.K+1)
		}
	}
	if c.Floor < -1 || c.Floor > 1 {
		return fmt.Errorf("pack: floor %v: want -1..1", c.Floor)
	}
	if c.M < 2 || c.EfConstruction < 1 || c.EfSearch < 1 {
		return errors.New("pack: m must be >= 2, ef_construction and ef_search >= 1")
	}
	return nil
}

// Result is the outcome of packing.
type Result struct {
	Groups    [][]int // indexes into the input, seed first
	Leftovers []int   // indexes in no group, in input order
	// Neighbors are each query's K nearest neighbours.
	Neighbors [][]Neighbor
	// Method is "exact" or "hnsw"; Recall is the index's measured recall@K
	// on RecallSample queries (-1 when not measured).
	Method string
	Recall float64
	// CosWithin and CosRandom are the mean pairwise cosine similarity
	// within packed groups and within random groups of the same sizes.
	CosWithin, CosRandom float64
	// Seconds spent finding neighbours (index and kNN lists), and then
	// measuring recall by exact search of the sample.
	SearchSeconds, RecallSeconds float64
}

// Pack finds neighbours of unit vectors vecs and groups them.
func Pack(ctx context.Context, vecs [][]float32, c Config) (Result, error) {
	return PackVectors(ctx, FromDense(vecs), c)
}

// PackVectors is Pack on a vector set.
func PackVectors(ctx context.Context, vecs *Vectors, c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Recall: -1}
	start := time.Now()
	var err error
	if vecs.Len() <= c.ExactMax {
		res.Method = "exact"
		res.Neighbors, err = ExactKNNVectors(ctx, vecs, all(vecs.Len()), c.K)
	} else {
		res.Method = "hnsw"
		h := NewHNSW(c.M, c.EfConstruction, c.EfSearch)
		res.Neighbors, err = h.BuildKNN(ctx, vecs, c.Seed, c.K)
		res.SearchSeconds = time.Since(start).Seconds()
		if err == nil && c.RecallSample > 0 {
			start = time.Now()
			res.Recall, err = sampleRecall(ctx, vecs, res.Neighbors, c)
			res.RecallSeconds = time.Since(start).Seconds()
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("pack: nearest neighbours: %w", err)
	}
	if res.Method == "exact" {
		res.SearchSeconds = time.Since(start).Seconds()
	}
	g := Grouping{Sizes: c.Sizes, Floor: float32(c.Floor), Seed: c.Seed}
	res.Groups, res.Leftovers = g.Group(res.Neighbors)
	res.CosWithin = vecs.MeanCohesion(res.Groups)
	res.CosRandom = vecs.MeanCohesion(RandomGroups(vecs.Len(), res.Groups, c.Seed))
	return res, nil
}

// sampleRecall compares the index's neighbours of an evenly spaced sample
// of queries with exact search.
func sampleRecall(ctx context.Context, vecs *Vectors, approx [][]Neighbor, c Config) (float64, error) {
	n := min(c.RecallSample, vecs.Len())
	sample := make([]int, n)
	for i := range sample {
		sample[i] = i * vecs.Len() / n
	}
	exact, err := ExactKNNVectors(ctx, vecs, sample, c.K)
	if err != nil {
		return 0, err
	}
	got := make([][]Neighbor, n)
	for i, q := range sample {
		got[i] = approx[q]
	}
	return Recall(got, exact), nil
}
