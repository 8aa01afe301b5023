package embed

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

// Kinds of embedder the `embedder:` section can name.
const (
	KindTFIDF  = "tfidf"
	KindOpenAI = "openai"
)

// Config is the pipeline file's top-level `embedder:` section. Without the
// section, stages use TF-IDF with DefaultDim (see ForStage).
//
//	embedder:
//	  kind: tfidf        # default; no model, no network
//	  dim: 384
//
//	embedder:
//	  kind: openai       # any OpenAI-compatible /v1/embeddings
//	  base_url: http://127.0.0.1:8000/v1
//	  model: text-embedding-3-small
//	  api_key_env: OPENAI_API_KEY
//	  batch: 128
//	  prices: {text-embedding-3-small: {input_per_m: 0.02}}
type Config struct {
	Kind string `yaml:"kind" json:"kind"`
	// Dim is the TF-IDF dimension (default DefaultDim). OpenAI-compatible
	// models have their own dimension; setting dim for them is an error.
	Dim int `yaml:"dim" json:"dim,omitempty"`
	// The remaining keys apply to kind openai; see llm.Config.
	BaseURL           string        `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv         string        `yaml:"api_key_env" json:"api_key_env,omitempty"`
	Model             string        `yaml:"model" json:"model,omitempty"`
	Batch             int           `yaml:"batch" json:"batch,omitempty"`
	Concurrency       int           `yaml:"concurrency" json:"concurrency,omitempty"`
	Timeout           time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	RequestsPerMinute float64       `yaml:"requests_per_minute" json:"requests_per_minute,omitempty"`
	Prices            llm.Prices    `yaml:"prices" json:"prices,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.Kind == "" {
		c.Kind = KindTFIDF
	}
	if c.Kind == KindTFIDF && c.Dim <= 0 {
		c.Dim = DefaultDim
	}
	return c
}

func (c Config) check() error {
	switch c.Kind {
	case KindTFIDF:
		var set []string
		for k, v := range map[string]bool{"base_url": c.BaseURL != "", "api_key_env": c.APIKeyEnv != "",
			"model": c.Model != "", "batch": c.Batch != 0, "concurrency": c.Concurrency != 0,
			"timeout": c.Timeout != 0, "requests_per_minute": c.RequestsPerMinute != 0, "prices": len(c.Prices) > 0} {
			if v {
				set = append(set, k)
			}
		}
		if len(set) > 0 {
			return fmt.Errorf("embed: kind tfidf takes only dim; %s apply to kind openai", strings.Join(slices.Sorted(slices.Values(set)), ", "))
		}
		if c.Dim < 16 || c.Dim > 1<<20 {
			return fmt.Errorf("embed: dim %d: want 16..%d", c.Dim, 1<<20)
		}
	case KindOpenAI:
		if c.Dim != 0 {
			return errors.New("embed: dim applies to kind tfidf only; an OpenAI-compatible model has its own dimension")
		}
		if c.Model == "" {
			return errors.New("embed: kind openai needs `model:` (the embedding model name)")
		}
		if _, err := llm.New(c.llmConfig(""), llm.Options{}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("embed: unknown kind %q (known: %s, %s)", c.Kind, KindTFIDF, KindOpenAI)
	}
	return nil
}

// llmConfig is the client configuration for stage, with the environment
// overlay of llm.Config.WithEnv (OPENAI_BASE_URL, CODEFEEDBACK_LLM_BASE_URL,
// ...) applied as for chat models.
func (c Config) llmConfig(stage string) llm.Config {
	return llm.Config{Stage: stage, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, EmbedModel: c.Model,
		EmbedBatch: c.Batch, Concurrency: c.Concurrency, Timeout: c.Timeout, RequestsPerMinute: c.RequestsPerMinute}.WithEnv(os.Getenv)
}

// Service is the run's embedding service (Services.Embedder). Use ForStage
// to get an Embedder from it. Safe for concurrent use.
type Service struct {
	cfg   Config
	cache store.Cache
	acct  *llm.Accountant

	mu      sync.Mutex
	clients map[string]*OpenAI
}

// NewService checks cfg and returns the service; cache (the run store, may
// be nil) caches OpenAI-compatible embeddings.
func NewService(cfg Config, cache store.Cache) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, cache: cache, acct: llm.NewAccountant(cfg.Prices, 0), clients: map[string]*OpenAI{}}, nil
}

// For returns the embedder for stage. TF-IDF embedders are fresh per call,
// since a TFIDF fits its IDF on the first texts it embeds and stages must
// not share that state; OpenAI-compatible embedders are made once per stage
// and account under its name.
func (s *Service) For(stage string) (Embedder, error) {
	if s.cfg.Kind == KindTFIDF {
		return NewTFIDF(s.cfg.Dim), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.clients[stage]; e != nil {
		return e, nil
	}
	c, err := llm.New(s.cfg.llmConfig(stage), llm.Options{Cache: s.cache, Accountant: s.acct})
	if err != nil {
		return nil, fmt.Errorf("embed: stage %s: %w", stage, err)
	}
	e := NewOpenAI(c)
	s.clients[stage] = e
	return e, nil
}

// Identity names the embedder (kind and dimension or model), for a stage's
// Version: switching embedders must invalidate cached stage outputs.
func (s *Service) Identity() string {
	if s.cfg.Kind == KindTFIDF {
		return fmt.Sprintf("%s/%d", KindTFIDF, s.cfg.Dim)
	}
	return KindOpenAI + "/" + s.cfg.Model
}

// Snapshot returns the embedding calls' usage per stage (zero for TF-IDF).
func (s *Service) Snapshot() llm.Snapshot { return s.acct.Snapshot() }

// ServiceReport is the value the engine writes into the manifest for this
// service.
func (s *Service) ServiceReport() any {
	return struct {
		Embedder string       `json:"embedder"`
		Usage    llm.Snapshot `json:"usage"`
	}{s.Identity(), s.Snapshot()}
}

// ForStage is how a stage gets its embedder: from svc.Embedder, or a fresh
// TF-IDF embedder of DefaultDim when the pipeline has no `embedder:`
// section. svc.Embedder may also be an Embedder that names itself (tests).
func ForStage(svc *pipeline.Services) (Embedder, error) {
	switch v := svc.Embedder.(type) {
	case nil:
		return NewTFIDF(DefaultDim), nil
	case *Service:
		return v.For(svc.Name)
	case Embedder:
		return v, nil
	default:
		return nil, fmt.Errorf("embed: Services.Embedder is a %T, not an embedder", svc.Embedder)
	}
}

// Identity names the embedder ForStage returns for the service v
// (svc.Embedder), for a stage's Version.
func Identity(v pipeline.EmbedService) string {
	if v == nil {
		return fmt.Sprintf("%s/%d", KindTFIDF, DefaultDim)
	}
	return v.Identity()
}

// build is the `embedder:` service builder. An openai embedder at the
// hosted default endpoint without a key is an error at run time: the user
// asked for it explicitly, and silently falling back to TF-IDF would change
// the results.
func build(env pipeline.ServiceEnv) (any, error) {
	decode, cache := env.Decode, env.Cache
	var cfg Config
	if err := decode(&cfg); err != nil {
		return nil, err
	}
	s, err := NewService(cfg, cache)
	if err != nil {
		return nil, err
	}
	if cache == nil {
		return nil, nil
	}
	if s.cfg.Kind == KindOpenAI {
		lc := s.cfg.llmConfig("")
		env := lc.APIKeyEnv
		if env == "" {
			env = llm.DefaultAPIKeyEnv
		}
		base := strings.TrimRight(lc.BaseURL, "/")
		if (base == "" || base == llm.DefaultBaseURL) && os.Getenv(env) == "" {
			return nil, fmt.Errorf("embed: kind openai at %s needs the API key in $%s; set it, point base_url at a local server, or use kind: tfidf",
				llm.DefaultBaseURL, env)
		}
	}
	return s, nil
}

func init() { pipeline.RegisterService("embedder", build) }
