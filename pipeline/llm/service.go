package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/pipeline"
)

// DefaultBaseURL is the endpoint used when base_url is not set.
const DefaultBaseURL = "https://api.openai.com/v1"

// ErrNoModel is returned (wrapped, with a hint on how to configure one) by
// ForStage when the run has no usable model. Stages that can do without a
// model check it with errors.Is and report that they skip their model part.
var ErrNoModel = errors.New("no model configured")

// NoModelHint says how to make a model available; stages may print it when
// they skip work for lack of a model.
const NoModelHint = "add a top-level `model:` section to the pipeline file (model: NAME, and base_url: for a " +
	"local OpenAI-compatible server such as vLLM or Ollama) and, for a hosted API, export the key in " +
	"$" + DefaultAPIKeyEnv + " (or the variable api_key_env names)"

// ModelsConfig is the pipeline file's top-level `model:` section:
//
//	model:
//	  base_url: http://127.0.0.1:8000/v1   # default https://api.openai.com/v1
//	  api_key_env: OPENAI_API_KEY          # the variable holding the key (never the key)
//	  model: qwen2.5-coder-7b
//	  temperature: 0.2
//	  concurrency: 16
//	  endpoints:                           # optional named endpoints; unset keys inherit the above
//	    rater:  {model: gpt-4o-mini, temperature: 0}
//	    writer: {base_url: http://10.0.0.5:8000/v1, model: qwen2.5-coder-32b}
//	  stages:                              # optional: stage name -> endpoint
//	    filter: rater
//	  prices:                              # dollars per million tokens; "prefix*" keys allowed
//	    gpt-4o-mini: {input_per_m: 0.15, output_per_m: 0.60}
//
// Every key of Config is accepted at the top level and in each endpoint.
type ModelsConfig struct {
	Config `yaml:",inline"`
	// Endpoints are named variants of Config. A key set in an endpoint
	// overrides the top-level one; booleans (json_mode, stream) can only be
	// switched on there, not off.
	Endpoints map[string]Config `yaml:"endpoints" json:"endpoints,omitempty"`
	// Stages routes a stage (by instance name) to an endpoint when the stage
	// asks for the default one.
	Stages map[string]string `yaml:"stages" json:"stages,omitempty"`
	// Prices is the price table for cost accounting.
	Prices Prices `yaml:"prices" json:"prices,omitempty"`
}

// Models is the run's model service (Services.Model): it hands each stage a
// Client for an endpoint, all sharing the run's cache and one Accountant, so
// usage and cost are kept per stage for the whole run. Safe for concurrent
// use.
type Models struct {
	cfg    ModelsConfig
	opts   Options
	getenv func(string) string
	acct   *Accountant
	// oneAttempt makes every client try a request once: in a pipeline run
	// the engine retries (pipeline.RetryPolicy).
	oneAttempt bool

	mu      sync.Mutex
	clients map[[2]string]*Client
}

// NewModels returns the model service for cfg. opts.Accountant, when nil, is
// replaced by a fresh one using cfg.Prices; opts.Cache is the run store.
// Settings are checked now; clients are built on first use.
func NewModels(cfg ModelsConfig, opts Options) (*Models, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if opts.Accountant == nil {
		opts.Accountant = NewAccountant(cfg.Prices, 0)
	}
	return &Models{cfg: cfg, opts: opts, getenv: os.Getenv, acct: opts.Accountant, clients: map[[2]string]*Client{}}, nil
}

// check validates every endpoint and the routing table.
func (c ModelsConfig) check() error {
	var errs []error
	if err := c.Config.withDefaults().validate(); err != nil {
		errs = append(errs, err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Endpoints)) {
		if name == "" {
			errs = append(errs, errors.New("llm: endpoint with an empty name"))
			continue
		}
		ep, err := c.endpoint(name)
		if err == nil {
			err = ep.withDefaults().validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %s: %w", name, err))
		}
	}
	for _, stage := range slices.Sorted(maps.Keys(c.Stages)) {
		if ep := c.Stages[stage]; ep != "" {
			if _, ok := c.Endpoints[ep]; !ok {
				errs = append(errs, fmt.Errorf("stages: %s routes to unknown endpoint %q%s", stage, ep, known(c.Endpoints)))
			}
		}
	}
	for m, p := range c.Prices {
		if p.InputPerM < 0 || p.OutputPerM < 0 {
			errs = append(errs, fmt.Errorf("prices: %s: negative price", m))
		}
	}
	return errors.Join(errs...)
}

// endpoint returns the effective Config of a named endpoint ("" = the
// top-level one): the endpoint's keys over the top-level keys.
func (c ModelsConfig) endpoint(name string) (Config, error) {
	if name == "" {
		return c.Config, nil
	}
	ep, ok := c.Endpoints[name]
	if !ok {
		return Config{}, fmt.Errorf("llm: unknown endpoint %q%s", name, known(c.Endpoints))
	}
	// Overlay through JSON: every Config field is omitempty, so only the
	// keys the endpoint sets replace the inherited ones.
	base, err := json.Marshal(c.Config)
	if err != nil {
		return Config{}, fmt.Errorf("llm: endpoint %s: %w", name, err)
	}
	over, err := json.Marshal(ep)
	if err != nil {
		return Config{}, fmt.Errorf("llm: endpoint %s: %w", name, err)
	}
	var out Config
	if err := json.Unmarshal(base, &out); err != nil {
		return Config{}, fmt.Errorf("llm: endpoint %s: %w", name, err)
	}
	if err := json.Unmarshal(over, &out); err != nil {
		return Config{}, fmt.Errorf("llm: endpoint %s: %w", name, err)
	}
	out.JSONMode = c.JSONMode || ep.JSONMode
	out.Stream = c.Stream || ep.Stream
	return out, nil
}

// resolve returns the effective Config a stage gets for endpoint: routing,
// inheritance, the environment overlay (Config.WithEnv) and defaults.
func (m *Models) resolve(stage, endpoint string) (Config, string, error) {
	if endpoint == "" {
		endpoint = m.cfg.Stages[stage]
	}
	cfg, err := m.cfg.endpoint(endpoint)
	if err != nil {
		return Config{}, "", err
	}
	cfg.Stage = stage
	return cfg.WithEnv(m.getenv).withDefaults(), endpoint, nil
}

// usable reports whether cfg can reach a model: the hosted default endpoint
// needs a key; any other base URL is taken to be a server the user runs.
func (m *Models) usable(cfg Config) bool {
	return strings.TrimRight(cfg.BaseURL, "/") != DefaultBaseURL || m.getenv(cfg.APIKeyEnv) != ""
}

// Usable reports whether the stage can get a model for endpoint, and if not
// why (a sentence naming the variable to set).
func (m *Models) Usable(stage, endpoint string) (bool, string) {
	cfg, _, err := m.resolve(stage, endpoint)
	if err != nil {
		return false, err.Error()
	}
	if !m.usable(cfg) {
		return false, fmt.Sprintf("$%s is not set and base_url is the hosted default %s", cfg.APIKeyEnv, DefaultBaseURL)
	}
	return true, ""
}

// For returns the client of stage for endpoint ("" = the stage's route in
// `stages:`, else the top-level settings). Clients are made once per (stage,
// endpoint) and account under the stage's name. It fails with ErrNoModel
// when that endpoint is the hosted default without a key.
func (m *Models) For(stage, endpoint string) (*Client, error) {
	cfg, ep, err := m.resolve(stage, endpoint)
	if err != nil {
		return nil, err
	}
	if !m.usable(cfg) {
		return nil, fmt.Errorf("%w for stage %s: $%s is not set; %s", ErrNoModel, stage, cfg.APIKeyEnv, NoModelHint)
	}
	if cfg.Model == "" {
		where := "the `model:` section"
		if ep != "" {
			where = "endpoint " + ep + " (or the `model:` section)"
		}
		return nil, fmt.Errorf("llm: stage %s: no model name: set `model: NAME` in %s", stage, where)
	}
	k := [2]string{stage, ep}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clients[k]; c != nil {
		return c, nil
	}
	if m.oneAttempt {
		cfg.MaxAttempts = 1
	}
	c, err := New(cfg, m.opts)
	if err != nil {
		return nil, fmt.Errorf("llm: stage %s: %w", stage, err)
	}
	m.clients[k] = c
	return c, nil
}

// Params returns the effective model parameters stage gets for endpoint.
// Stages put them in their Stage.Version, so that switching model or
// temperature invalidates their cached outputs.
func (m *Models) Params(stage, endpoint string) (Params, error) {
	cfg, _, err := m.resolve(stage, endpoint)
	if err != nil {
		return Params{}, err
	}
	return cfg.Params, nil
}

// KeyParams implements pipeline.ModelService: Params, for a stage's key.
func (m *Models) KeyParams(stage, endpoint string) (any, error) { return m.Params(stage, endpoint) }

// BatchSize implements pipeline.BatchSizer: the stage's default endpoint's
// batch_size when it is in batch mode, else 0.
func (m *Models) BatchSize(stage string) int {
	cfg, _, err := m.resolve(stage, "")
	if err != nil || !cfg.Batch {
		return 0
	}
	return cfg.BatchSize
}

// EstimateCost implements pipeline.Pricer for --dry-run: the tokens priced
// with the run's price table for the model of stage's default endpoint,
// live and at that endpoint's batch discount, and whether it batches.
func (m *Models) EstimateCost(stage string, promptTokens, completionTokens int64) (live, batch float64, batched bool) {
	cfg, _, err := m.resolve(stage, "")
	if err != nil {
		return 0, 0, false
	}
	live = m.acct.Prices().Cost(cfg.Model, int(promptTokens), int(completionTokens))
	return live, live * cfg.BatchDiscount, cfg.Batch
}

// Accountant returns the run's shared accountant.
func (m *Models) Accountant() *Accountant { return m.acct }

// Snapshot returns the run's model usage so far, per stage and in total.
func (m *Models) Snapshot() Snapshot { return m.acct.Snapshot() }

// ServiceReport is the value the engine writes into the manifest for this
// service (the usage snapshot).
func (m *Models) ServiceReport() any { return m.Snapshot() }

// Chat implements Chatter with the top-level settings, accounted under the
// stage name "model", for callers that type-assert Services.Model to a
// Chatter; stages should prefer ForStage, which accounts per stage.
func (m *Models) Chat(ctx context.Context, req Request) (Response, error) {
	c, err := m.For("model", "")
	if err != nil {
		return Response{}, err
	}
	return c.Chat(ctx, req)
}

// ForStage is how a stage gets its model: the Chatter for endpoint ("" =
// default) from svc.Model, accounted under svc.Name. Every answered call is
// also reported to svc.Stats.AddUsage, so the manifest's per-stage usage
// and the run's --max-cost budget see it. svc.Model may also be a plain
// Chatter (tests), which is returned as it is. Without a usable model the
// error wraps ErrNoModel and says how to configure one.
func ForStage(svc *pipeline.Services, endpoint string) (Chatter, error) {
	switch v := svc.Model.(type) {
	case nil:
		return nil, fmt.Errorf("%w for stage %s: %s", ErrNoModel, svc.Name, NoModelHint)
	case *Models:
		c, err := v.For(svc.Name, endpoint)
		if err != nil {
			return nil, err
		}
		if svc.Stats == nil {
			return c, nil
		}
		return statsChatter{c: c, stats: svc.Stats}, nil
	case Chatter:
		return v, nil
	default:
		return nil, fmt.Errorf("llm: Services.Model is a %T, not a model service", svc.Model)
	}
}

// StageChat is ForStage when a stage is built, for a stage that passes its
// items through without a model: the Chatter and its cache key for the
// stage's Version, or, when no model serves the stage (ErrNoModel), a nil
// Chatter and the key "none", so that a pass-through is not served once a
// model is configured. A model that is configured but cannot serve the
// stage is an error.
func StageChat(svc *pipeline.Services, endpoint string) (Chatter, any, error) {
	c, err := ForStage(svc, endpoint)
	if errors.Is(err, ErrNoModel) {
		return nil, "none", nil
	}
	if err != nil {
		return nil, nil, err
	}
	key, err := svc.ModelKey(endpoint)
	if err != nil {
		return nil, nil, err
	}
	return c, key, nil
}

// statsChatter reports each paid call's usage to the stage's Stats.
type statsChatter struct {
	c     Chatter
	stats *pipeline.Stats
}

func (s statsChatter) Chat(ctx context.Context, req Request) (Response, error) {
	r, err := s.c.Chat(ctx, req)
	if err == nil && !r.Cached {
		u := pipeline.Usage{Requests: 1, PromptTokens: int64(r.PromptTokens),
			CompletionTokens: int64(r.CompletionTokens), CostUSD: r.Cost}
		if r.Batch {
			u.BatchRequests, u.BatchSavedUSD = 1, r.BatchSaved
		}
		s.stats.AddUsage(u)
	}
	return r, err
}

// buildModels is the `model:` service builder. At validate time (no cache)
// it only checks settings. At run time it returns a nil service, with a
// warning, when no endpoint can reach a model (the hosted default without
// a key), so a pipeline runs without a key and its model stages say they
// are skipped. Its clients log through the run's logger, refuse calls once
// the run's --max-cost is spent, and in a pipeline make one attempt per
// request: retries are the engine's.
func buildModels(env pipeline.ServiceEnv) (any, error) {
	var cfg ModelsConfig
	if err := env.Decode(&cfg); err != nil {
		return nil, err
	}
	if env.EngineRetries {
		if err := cfg.checkNoRetries(); err != nil {
			return nil, err
		}
	}
	m, err := NewModels(cfg, Options{Cache: env.Cache, Logger: env.Logger, Accountant: NewAccountant(cfg.Prices, env.MaxCost)})
	if err != nil {
		return nil, err
	}
	m.oneAttempt = env.EngineRetries
	if env.Cache == nil {
		return nil, nil
	}
	if !m.anyUsable() {
		top, _, _ := m.resolve("", "")
		log := env.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn("model: no API key, model stages will be skipped",
			"key_env", top.APIKeyEnv, "base_url", top.BaseURL, "enable", NoModelHint)
		return nil, nil
	}
	return m, nil
}

// checkNoRetries rejects client retry settings in a pipeline file, where
// the engine's `retries:` is the one retry policy.
func (c ModelsConfig) checkNoRetries() error {
	var errs []error
	for _, name := range append([]string{""}, slices.Sorted(maps.Keys(c.Endpoints))...) {
		ep := c.Config
		where := "model"
		if name != "" {
			ep, where = c.Endpoints[name], "endpoint "+name
		}
		if ep.MaxAttempts > 1 || ep.BackoffBase != 0 || ep.BackoffMax != 0 || ep.MaxRetryAfter != 0 {
			errs = append(errs, fmt.Errorf("%s: max_attempts, backoff_base, backoff_max and max_retry_after are not used in a pipeline: "+
				"the engine retries failed items (set `retries:` under `defaults:` or on the stage)", where))
		}
	}
	return errors.Join(errs...)
}

// anyUsable reports whether the top-level settings or any named endpoint
// can reach a model.
func (m *Models) anyUsable() bool {
	for _, ep := range append([]string{""}, slices.Sorted(maps.Keys(m.cfg.Endpoints))...) {
		if cfg, _, err := m.resolve("", ep); err == nil && m.usable(cfg) {
			return true
		}
	}
	return false
}

func init() { pipeline.RegisterService("model", buildModels) }

func known[V any](m map[string]V) string {
	if len(m) == 0 {
		return " (no endpoints are defined)"
	}
	return " (known: " + strings.Join(slices.Sorted(maps.Keys(m)), ", ") + ")"
}
