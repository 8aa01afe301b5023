package embed

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// dimStage is a whole-set test stage with a version.
type dimStage struct {
	pipeline.AllFunc
	version any
}

func (d dimStage) Version() any { return d.version }

func init() {
	// embed-svc-dim embeds all its queries at once and records the vector
	// dimension and count, and whether TF-IDF did it, in its stats.
	pipeline.Register("embed-svc-dim", struct{}{}, func(_ struct{}, svc *pipeline.Services) (dimStage, error) {
		return dimStage{
			version: Identity(svc.Embedder),
			AllFunc: func(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
				e, err := ForStage(svc)
				if err != nil {
					return err
				}
				var items []pipeline.Item
				var texts []string
				for it, err := range in {
					if err != nil {
						return err
					}
					q, err := pipeline.As[schema.Query](it, pipeline.KindQuery)
					if err != nil {
						return err
					}
					items, texts = append(items, it), append(texts, q.Text)
				}
				vecs, err := e.Embed(ctx, texts)
				if err != nil {
					return err
				}
				svc.Stats.Set("dim", float64(len(vecs[0])))
				svc.Stats.Set("vectors", float64(len(vecs)))
				if _, ok := e.(*TFIDF); ok {
					svc.Stats.Set("tfidf", 1)
				}
				for _, it := range items {
					if err := emit(it); err != nil {
						return err
					}
				}
				return nil
			},
		}, nil
	})
}

func runEmbedPipeline(t *testing.T, section string) (*pipeline.Manifest, error) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, `{"id":"q%d","text":"sort a list of %d numbers"}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.yaml")
	y := "inputs: [{path: q.jsonl}]\nstages: [{stage: embed-svc-dim, name: pack}]\n" + section + "\n"
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
}

func TestEmbedderSectionKinds(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t, llmtest.WithEmbedDim(24))
	tests := []struct {
		name, section string
		dim           float64
		tfidf         bool
		calls         int
	}{
		{"absent: tf-idf default", "", DefaultDim, true, 0},
		{"tfidf dim", "embedder: {kind: tfidf, dim: 64}", 64, true, 0},
		{"kind defaults to tfidf", "embedder: {dim: 128}", 128, true, 0},
		{"openai-compatible", "embedder: {kind: openai, base_url: " + srv.URL + ", model: fake-embed, batch: 4}", 24, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Calls("/v1/embeddings")
			m, err := runEmbedPipeline(t, tt.section)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			st := m.Stages[0].Stats
			if st["dim"] != tt.dim || st["vectors"] != 6 || (st["tfidf"] == 1) != tt.tfidf {
				t.Errorf("stats %v, want dim %v, 6 vectors, tfidf %v", st, tt.dim, tt.tfidf)
			}
			if got := srv.Calls("/v1/embeddings") - before; got != tt.calls {
				t.Errorf("embedding calls = %d, want %d (6 texts, batch 4)", got, tt.calls)
			}
		})
	}
}

func TestServiceOpenAIAccountsPerStage(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	cache := llmtest.NewMemCache()
	s, err := NewService(Config{Kind: KindOpenAI, BaseURL: srv.URL, Model: "fake-embed"}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Identity(); got != "openai/fake-embed" {
		t.Errorf("Identity = %q, want openai/fake-embed", got)
	}
	for _, stage := range []string{"pack", "audit", "pack"} {
		e, err := ForStage(&pipeline.Services{Name: stage, Embedder: s})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Embed(context.Background(), []string{"a " + stage, "b"}); err != nil {
			t.Fatal(err)
		}
	}
	snap := s.Snapshot()
	if p, a := snap.Stages["pack"], snap.Stages["audit"]; p.Requests != 1 || p.CachedRequests != 2 || a.Requests != 1 || a.CachedRequests != 1 {
		t.Errorf("usage pack %+v audit %+v; want pack 1 paid + 2 cached texts, audit 1 paid + 1 cached", p, a)
	}
}

func TestServiceTFIDFFreshPerStage(t *testing.T) {
	s, err := NewService(Config{Dim: 32}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.For("pack")
	b, _ := s.For("pack")
	if a == b {
		t.Error("For returned one TF-IDF twice; its fitted IDF would leak between stages")
	}
	if _, err := a.Embed(context.Background(), []string{"reverse a string", "sort a list"}); err != nil {
		t.Fatal(err)
	}
	if fitted, _ := b.(*TFIDF).Fitted(); fitted {
		t.Error("second embedder is fitted by the first one's texts")
	}
	if got := Identity(s); got != "tfidf/32" {
		t.Errorf("Identity = %q, want tfidf/32", got)
	}
	if got := Identity(nil); got != fmt.Sprintf("tfidf/%d", DefaultDim) {
		t.Errorf("Identity(nil) = %q", got)
	}
}

func TestEmbedderSectionErrors(t *testing.T) {
	llmtest.ClearEnv(t)
	tests := []struct{ section, want string }{
		{"embedder: {kind: bert}", `unknown kind "bert"`},
		{"embedder: {kind: tfidf, model: x}", "kind tfidf takes only dim; model apply to kind openai"},
		{"embedder: {dim: 3}", "dim 3: want 16.."},
		{"embedder: {kind: openai, base_url: 'http://127.0.0.1:1/v1'}", "needs `model:`"},
		{"embedder: {kind: openai, model: m, dim: 64, base_url: 'http://127.0.0.1:1/v1'}", "dim applies to kind tfidf only"},
		{"embedder: {kind: openai, model: m, base_url: 'ftp://x'}", "want http(s)://"},
		{"embedder: {knd: openai}", `did you mean "kind"`},
	}
	for _, tt := range tests {
		t.Run(tt.section, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(`{"id":"a","text":"x"}`+"\n"), 0o644)
			file := filepath.Join(dir, "p.yaml")
			os.WriteFile(file, []byte("inputs: [{path: q.jsonl}]\nstages: [{stage: embed-svc-dim}]\n"+tt.section+"\n"), 0o644)
			_, err := pipeline.Load(file, filepath.Join(dir, "run"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEmbedderOpenAIWithoutKeyFailsRun(t *testing.T) {
	llmtest.ClearEnv(t)
	_, err := runEmbedPipeline(t, "embedder: {kind: openai, model: text-embedding-3-small}")
	if err == nil || !strings.Contains(err.Error(), "$OPENAI_API_KEY") || !strings.Contains(err.Error(), "kind: tfidf") {
		t.Errorf("run error = %v, want one naming $OPENAI_API_KEY and kind: tfidf", err)
	}
}
