package neighbors

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/schema"
)

// loadAlpaca reads the Code Alpaca instructions (both files), skipping the
// test when the shared data is absent.
func loadAlpaca(t testing.TB) []schema.Query {
	t.Helper()
	var out []schema.Query
	for _, rel := range []string{"queries/code_alpaca_2k.json", "queries/new_codealpaca.json.gz"} {
		path := sharedtest.Path(t, rel)
		for p, err := range schema.ReadProblems(context.Background(), path, schema.ImportOptions{Format: schema.FormatAlpaca, AllowDuplicates: true}) {
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			out = append(out, p.Query)
		}
	}
	return out
}

func tfidf(t testing.TB, texts []string, dim int) [][]float32 {
	t.Helper()
	v, err := embed.NewTFIDF(dim).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomUnit returns n random unit vectors of dimension dim in clusters,
// so neighbours are meaningful.
func randomUnit(n, dim int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	centers := make([][]float32, max(n/20, 1))
	for i := range centers {
		centers[i] = make([]float32, dim)
		for j := range centers[i] {
			centers[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centers[rng.IntN(len(centers))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + 0.8*float32(rng.NormFloat64())
		}
		embed.Normalize(v)
		out[i] = v
	}
	return out
}

func TestExactKNN(t *testing.T) {
	vecs := [][]float32{{1, 0}, {0.8, 0.6}, {0, 1}, {-1, 0}, {0.6, 0.8}}
	got, err := ExactKNN(context.Background(), vecs, []int{0, 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{1, 4}, {4, 1}}
	for i := range want {
		var ids []int32
		for _, n := range got[i] {
			ids = append(ids, n.ID)
		}
		if !slices.Equal(ids, want[i]) {
			t.Errorf("query %d: got %v want %v", i, ids, want[i])
		}
	}
}

func TestHNSWRecallSynthetic(t *testing.T) {
	vecs := randomUnit(2000, 64, 3)
	h := NewHNSW(16, 100, 96)
	if err := h.Build(context.Background(), vecs, 1); err != nil {
		t.Fatal(err)
	}
	approx, err := h.KNN(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := ExactKNN(context.Background(), vecs, all(len(vecs)), 4)
	if err != nil {
		t.Fatal(err)
	}
	if r := Recall(approx, exact); r < 0.95 {
		t.Errorf("recall@4 = %.4f, want >= 0.95", r)
	}
	// The same seed gives the same graph and answers.
	h2 := NewHNSW(16, 100, 96)
	h2.Build(context.Background(), vecs, 1)
	again, _ := h2.KNN(context.Background(), 4)
	for i := range approx {
		if !slices.Equal(approx[i], again[i]) {
			t.Fatalf("node %d: neighbours differ between two builds with one seed", i)
		}
	}
}

func TestRecallCountsTies(t *testing.T) {
	exact := [][]Neighbor{{{ID: 1, Sim: 1}, {ID: 2, Sim: 0.5}}}
	tests := []struct {
		approx []Neighbor
		want   float64
	}{
		{[]Neighbor{{ID: 1, Sim: 1}, {ID: 2, Sim: 0.5}}, 1},
		{[]Neighbor{{ID: 1, Sim: 1}, {ID: 7, Sim: 0.5}}, 1}, // a tie with the k-th is correct
		{[]Neighbor{{ID: 1, Sim: 1}, {ID: 7, Sim: 0.4}}, 0.5},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := Recall([][]Neighbor{tt.approx}, exact); got != tt.want {
			t.Errorf("Recall(%v) = %v, want %v", tt.approx, got, tt.want)
		}
	}
}

func TestGroupInvariants(t *testing.T) {
	vecs := randomUnit(600, 32, 5)
	nbrs, err := ExactKNN(context.Background(), vecs, all(len(vecs)), 4)
	if err != nil {
		t.Fatal(err)
	}
	g := Grouping{Sizes: []int{2, 3}, Floor: 0.3, Seed: 42}
	groups, left := g.Group(nbrs)
	seen := map[int]bool{}
	sizes := map[int]int{}
	for _, grp := range groups {
		sizes[len(grp)]++
		for k, m := range grp {
			if seen[m] {
				t.Fatalf("query %d used twice", m)
			}
			seen[m] = true
			if k == 0 {
				continue
			}
			ok := false
			for _, n := range nbrs[grp[0]] {
				ok = ok || (int(n.ID) == m && n.Sim >= 0.3)
			}
			if !ok {
				t.Errorf("group %v: %d is not a neighbour of the seed above the floor", grp, m)
			}
		}
	}
	for _, l := range left {
		if seen[l] {
			t.Fatalf("leftover %d is in a group", l)
		}
		seen[l] = true
	}
	if len(seen) != len(vecs) {
		t.Errorf("groups and leftovers cover %d of %d queries", len(seen), len(vecs))
	}
	if sizes[2] == 0 || sizes[3] == 0 || len(sizes) != 2 {
		t.Errorf("group sizes %v, want both 2 and 3 only", sizes)
	}
	again, _ := g.Group(nbrs)
	if fmt.Sprint(again) != fmt.Sprint(groups) {
		t.Error("same seed gave different groups")
	}
	g.Seed = 43
	if other, _ := g.Group(nbrs); fmt.Sprint(other) == fmt.Sprint(groups) {
		t.Error("another seed gave the same groups")
	}
	// A floor above every similarity packs nothing.
	g.Floor = 1.01
	if groups, left := g.Group(nbrs); len(groups) != 0 || len(left) != len(vecs) {
		t.Errorf("floor 1.01: %d groups, %d leftovers", len(groups), len(left))
	}
}

// TestCodeAlpacaPacking packs the Code Alpaca instructions with TF-IDF and
// checks that packed groups are far more similar than random groups. With
// -v it prints 20 groups.
func TestCodeAlpacaPacking(t *testing.T) {
	qs := loadAlpaca(t)
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	vecs := tfidf(t, texts, embed.DefaultDim)
	cfg := DefaultConfig
	cfg.RecallSample = 1500 // exact search for these measures the index
	if len(vecs) <= cfg.ExactMax {
		t.Fatalf("%d queries: the index path needs more than exact_max %d", len(vecs), cfg.ExactMax)
	}
	res, err := Pack(context.Background(), vecs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d queries: %d groups, %d leftovers; mean cosine within groups %.3f vs random groups %.3f; hnsw recall@4 %.4f on %d queries",
		len(qs), len(res.Groups), len(res.Leftovers), res.CosWithin, res.CosRandom, res.Recall, cfg.RecallSample)
	if res.Method != "hnsw" || res.Recall < 0.95 {
		t.Errorf("hnsw recall@4 = %.4f (method %s), want >= 0.95", res.Recall, res.Method)
	}
	if res.CosWithin < 0.4 || res.CosWithin < 3*res.CosRandom {
		t.Errorf("cosine within %.3f vs random %.3f: packed groups are not clearly related", res.CosWithin, res.CosRandom)
	}
	for _, g := range res.Groups[:20] {
		var b strings.Builder
		for _, i := range g {
			fmt.Fprintf(&b, "\n    - %s", firstLine(texts[i], 110))
		}
		t.Logf("group (cos %.2f):%s", MeanCohesion(vecs, [][]int{g}), b.String())
	}
}

func firstLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// TestBuildKNN checks the neighbour lists collected while building against
// exact search, on clustered vectors with near-duplicates (each vector
// also appears slightly perturbed, some in the same insertion batch), and
// that they and the graph are the same on one core and on several.
func TestBuildKNN(t *testing.T) {
	base := randomUnit(1800, 48, 9)
	rng := rand.New(rand.NewPCG(9, 9))
	vecs := append([][]float32(nil), base...)
	for i, v := range base {
		w := make([]float32, len(v))
		for j := range w {
			w[j] = v[j] + 0.05*float32(rng.NormFloat64())
		}
		embed.Normalize(w)
		if i%2 == 0 {
			vecs = append(vecs, w) // far from its original in insertion order
		} else {
			vecs = append(vecs[:len(vecs):len(vecs)], w)
			vecs[len(vecs)-1], vecs[len(vecs)-2] = vecs[len(vecs)-2], vecs[len(vecs)-1]
		}
	}
	build := func(procs int) (*HNSW, [][]Neighbor) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		h := NewHNSW(0, 0, 0)
		got, err := h.BuildKNN(context.Background(), FromDense(vecs), 1, 4)
		if err != nil {
			t.Fatal(err)
		}
		return h, got
	}
	h1, one := build(1)
	h4, four := build(4)
	exact, err := ExactKNN(context.Background(), vecs, all(len(vecs)), 4)
	if err != nil {
		t.Fatal(err)
	}
	if r := Recall(four, exact); r < 0.95 {
		t.Errorf("recall@4 = %.4f, want >= 0.95", r)
	}
	for i := range one {
		if !slices.Equal(one[i], four[i]) {
			t.Fatalf("node %d: neighbours on 1 core %v, on 4 %v", i, one[i], four[i])
		}
		if fmt.Sprint(h1.links[i]) != fmt.Sprint(h4.links[i]) {
			t.Fatalf("node %d: links on 1 core %v, on 4 %v", i, h1.links[i], h4.links[i])
		}
	}
	if _, err := NewHNSW(0, 0, 0).BuildKNN(context.Background(), FromDense(vecs), 1, 0); err == nil {
		t.Error("k = 0: no error")
	}
}

// TestVectorsSparseMatchesDense checks that the sparse form gives the dense
// form's products.
func TestVectorsSparseMatchesDense(t *testing.T) {
	texts := []string{"reverse a list in python", "sort a dict by value", "reverse the words of a sentence", "parse json from a file"}
	dense := tfidf(t, texts, 384)
	v := FromDense(dense)
	if !v.Sparse() || v.Len() != len(texts) || v.Bytes() >= int64(len(texts)*384*4) {
		t.Fatalf("sparse %v, len %d, %d bytes", v.Sparse(), v.Len(), v.Bytes())
	}
	buf := v.buffer()
	for i := range dense {
		for j := range dense {
			want := Dot(dense[i], dense[j])
			q := v.load(int32(i), buf)
			got, got2 := v.simDense(q, int32(j)), v.Dot(i, j)
			v.unload(int32(i), buf)
			if d := want - got; d > 1e-5 || d < -1e-5 || want-got2 > 1e-5 || got2-want > 1e-5 {
				t.Errorf("(%d,%d): dense %v, sparse %v and %v", i, j, want, got, got2)
			}
		}
	}
	if slices.ContainsFunc(buf, func(x float32) bool { return x != 0 }) {
		t.Error("unload left entries in the buffer")
	}
	if FromDense(randomUnit(10, 16, 1)).Sparse() {
		t.Error("dense vectors held sparse")
	}
}

// TestSearchSparse searches an index of sparse vectors with outside
// queries: each text's own vector finds itself first.
func TestSearchSparse(t *testing.T) {
	texts := alpacaTexts(t)[:6000]
	dense := tfidf(t, texts, 384)
	h := NewHNSW(0, 0, 0)
	if err := h.Build(context.Background(), dense, 1); err != nil {
		t.Fatal(err)
	}
	if !h.v.Sparse() {
		t.Fatal("TF-IDF vectors not held sparse")
	}
	miss := 0
	for i := 0; i < len(dense); i += 97 {
		got := h.Search(dense[i], 1, -1)
		if len(got) != 1 || got[0].Sim < 0.9999 {
			miss++
		}
	}
	if miss > 1 {
		t.Errorf("%d of %d queries did not find their own vector", miss, len(dense)/97+1)
	}
}
