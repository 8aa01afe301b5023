package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

func TestIdentifierParts(t *testing.T) {
	cases := []struct {
		tok  string
		want []string
	}{
		{"getUserName", []string{"get", "user", "name"}},
		{"parse_json_file", []string{"parse", "json", "file"}},
		{"HTTPServer2", []string{"http", "server"}}, // "2" is too short to count
		{"__init__", nil}, // one part: the word itself suffices
		{"sort", nil},
		{"utf8Decode", []string{"utf", "decode"}},
	}
	for _, c := range cases {
		got := identParts(c.tok, nil)
		var want []uint64
		for _, w := range c.want {
			want = append(want, Fmix64(hashLower(w)))
		}
		if len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("identParts(%q): got %d hashes, want those of %v", c.tok, len(got), c.want)
		}
	}
	// Unigrams, bigrams, identifier parts.
	if got := len(features("reverse a linkedList now", nil)); got != 3+2+2 {
		t.Errorf("features: got %d want 7 (3 words, 2 bigrams, 2 parts)", got)
	}
}

func TestTFIDFVectors(t *testing.T) {
	corpus := []string{
		"Write a function getUserName that returns the user name",
		"get the user name from the database",
		"Delete a file from the disk",
		"Sort a list of integers in Python",
		"Sort the list of numbers in descending order",
		"Write a SQL query to find the second highest salary",
	}
	tf := NewTFIDF(256)
	vecs, err := tf.Embed(context.Background(), corpus)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if len(v) != 256 {
			t.Fatalf("dim: got %d want 256", len(v))
		}
		if n := Dot(v, v); math.Abs(float64(n)-1) > 1e-5 {
			t.Errorf("vector %d norm^2: got %v want 1", i, n)
		}
	}
	if ok, n := tf.Fitted(); !ok || n != len(corpus) {
		t.Errorf("Fitted: got %v,%d want true,%d", ok, n, len(corpus))
	}
	// Each text's nearest other text is its topical partner.
	partner := map[int]int{0: 1, 1: 0, 3: 4, 4: 3}
	for i, j := range partner {
		hits := Nearest(vecs[i], vecs, 2)
		if hits[0].Index != i || hits[1].Index != j {
			t.Errorf("nearest to %q: got %+v, want itself then %q", corpus[i], hits, corpus[j])
		}
	}
	if c := Cosine(vecs[0], vecs[1]); c <= Cosine(vecs[0], vecs[2]) {
		t.Errorf("getUserName~get user name %.3f should beat ~delete file %.3f", c, Cosine(vecs[0], vecs[2]))
	}
	// Deterministic regardless of the number of workers, and sparse == dense.
	tf1 := NewTFIDF(256)
	tf1.workers = 1
	big := make([]string, 0, 3000)
	for i := 0; i < 500; i++ {
		big = append(big, corpus...)
	}
	tf1.Fit(big)
	tf.Fit(big)
	a, b := tf1.Transform(big), tf.Transform(big)
	if !reflect.DeepEqual(a, b) {
		t.Error("vectors differ between 1 worker and GOMAXPROCS workers")
	}
	sp := tf.TransformSparse(corpus[3])
	dense := a[3]
	nz := 0
	for i, v := range dense {
		if v != 0 {
			if sp.Idx[nz] != int32(i) || sp.Val[nz] != v {
				t.Fatalf("sparse entry %d: got (%d,%v) want (%d,%v)", nz, sp.Idx[nz], sp.Val[nz], i, v)
			}
			nz++
		}
	}
	if nz != len(sp.Idx) || nz == 0 {
		t.Errorf("sparse: got %d entries want %d", len(sp.Idx), nz)
	}
	// A cancelled context stops the work.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewTFIDF(0).Embed(ctx, big); err == nil {
		t.Error("Embed with cancelled context: got nil error")
	}
	if v := NewTFIDF(0).Transform([]string{"", "!!"}); Dot(v[0], v[0]) != 0 || len(v[1]) != DefaultDim {
		t.Errorf("empty texts: want zero vectors of DefaultDim")
	}
}

// loadInstructions reads the Code Alpaca instructions from the shared data.
func loadInstructions(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, rel := range []string{"queries/code_alpaca_2k.json", "queries/new_codealpaca.json.gz"} {
		var rows []struct {
			Instruction string `json:"instruction"`
		}
		if err := json.NewDecoder(sharedtest.Open(tb, rel)).Decode(&rows); err != nil {
			tb.Fatalf("%s: %v", rel, err)
		}
		for _, row := range rows {
			out = append(out, row.Instruction)
		}
	}
	return out
}

func TestTFIDFOnCodeAlpaca(t *testing.T) {
	texts := loadInstructions(t)
	if len(texts) != 6552 {
		t.Fatalf("instructions: got %d want 6552", len(texts))
	}
	vecs, err := NewTFIDF(0).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	// Topical neighbours: for queries about a distinctive topic, most of the
	// 5 nearest instructions mention the topic's key word.
	probes := map[string]string{
		"Write a Python function to reverse a string.":                           "reverse",
		"Write a SQL query to select all employees whose salary is above 50000.": "sql",
		"Create a regular expression to validate an email address.":              "email",
		"Implement binary search on a sorted array.":                             "binary search",
		"Write a function to compute the Fibonacci sequence.":                    "fibonacci",
	}
	tf := NewTFIDF(0)
	tf.Fit(texts)
	for q, word := range probes {
		qv := tf.Transform([]string{q})[0]
		hits := Nearest(qv, vecs, 5)
		n := 0
		var got []string
		for _, h := range hits {
			got = append(got, texts[h.Index])
			if strings.Contains(strings.ToLower(texts[h.Index]), word) {
				n++
			}
		}
		if n < 4 {
			t.Errorf("neighbours of %q: %d of 5 mention %q: %q", q, n, word, got)
		}
	}
}

func TestOpenAIEmbedder(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithEmbedDim(12))
	c, err := llm.New(llm.Config{BaseURL: srv.URL, APIKeyEnv: "EMBED_TEST_NO_KEY", EmbedModel: "fake-embed", EmbedBatch: 2,
		BackoffBase: 1e6, BackoffMax: 2e6}, llm.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var e Embedder = NewOpenAI(c)
	srv.FailNext(llmtest.Fault{Kind: llmtest.Truncated})
	texts := []string{"sort a list", "reverse a string", "sql join"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if want := llmtest.Vector(texts[i], 12); fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("vector %d: got %v want %v", i, v, want)
		}
	}
	if got := srv.Calls("/v1/embeddings"); got != 3 {
		t.Errorf("calls: got %d want 3 (2 batches + 1 retry)", got)
	}
}
