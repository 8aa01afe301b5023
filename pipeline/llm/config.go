// Package llm is the one way LLM-backed stages talk to a model: an
// OpenAI-compatible chat and embeddings client (OpenAI, Azure OpenAI, vLLM,
// Ollama, llama.cpp's server, TGI, ...) built on go-openai, adding what
// go-openai leaves out: bounded concurrency, a client-side rate limiter,
// retries with exponential backoff and full jitter that honour Retry-After,
// a circuit breaker that pauses every worker while the endpoint is down,
// token and cost accounting with a budget, and a request-level cache in the
// engine's content-addressed store.
//
// Stages depend on the small Chatter interface; the engine builds one Client
// per stage from a Config and shares one Accountant across the run.
//
// The API key is read from the environment variable Config.APIKeyEnv names
// and is kept only inside the HTTP layer: it never appears in Config, logs,
// cache entries, snapshots or returned errors (error text that echoes it,
// as some providers' 401 messages do, is redacted).
package llm

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultAPIKeyEnv is the variable the key is read from when Config.APIKeyEnv
// is empty.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// Params are the model parameters of a chat request. They are part of the
// cache key. Zero values mean "the server's default", except where noted.
type Params struct {
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// Temperature, when set, is sent even when 0 (go-openai drops a zero
	// float, so 0 is sent as the smallest positive float32, which servers
	// treat as greedy decoding).
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	Seed        *int     `json:"seed,omitempty" yaml:"seed,omitempty"`
	// JSONMode asks for response_format {"type": "json_object"}.
	JSONMode bool `json:"json_mode,omitempty" yaml:"json_mode,omitempty"`
}

// merge returns p with the fields set in o overriding it.
func (p Params) merge(o Params) Params {
	if o.Model != "" {
		p.Model = o.Model
	}
	if o.Temperature != nil {
		p.Temperature = o.Temperature
	}
	if o.MaxTokens != 0 {
		p.MaxTokens = o.MaxTokens
	}
	if o.Seed != nil {
		p.Seed = o.Seed
	}
	p.JSONMode = p.JSONMode || o.JSONMode
	return p
}

// Config configures one Client (typically one stage). The zero value of
// every limit field takes the default documented on it.
type Config struct {
	// Stage names the stage in accounting and logs.
	Stage string `json:"stage,omitempty" yaml:"stage,omitempty"`
	// BaseURL of the OpenAI-compatible API, including /v1 (default
	// https://api.openai.com/v1).
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key (default
	// OPENAI_API_KEY). An unset variable means no Authorization header,
	// which local servers accept.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	// Params are the default model parameters; a Request may override them.
	Params `yaml:",inline"`
	// EmbedModel is the model for Embed (default: Params.Model).
	EmbedModel string `json:"embed_model,omitempty" yaml:"embed_model,omitempty"`
	// EmbedBatch is the number of inputs per /v1/embeddings call (default 128).
	EmbedBatch int `json:"embed_batch,omitempty" yaml:"embed_batch,omitempty"`
	// Stream uses SSE streaming for chat calls; the result is the same.
	Stream bool `json:"stream,omitempty" yaml:"stream,omitempty"`
	// Timeout bounds one HTTP attempt (default 2m).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Concurrency bounds requests in flight (default 8).
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	// RequestsPerMinute and TokensPerMinute limit the request rate (0 = no
	// limit). Tokens are estimated before a call (prompt bytes/4 + MaxTokens)
	// and corrected with the reported usage afterwards.
	RequestsPerMinute float64 `json:"requests_per_minute,omitempty" yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   float64 `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute,omitempty"`
	// MaxAttempts is the number of tries per request, first included
	// (default 6; 1 disables retries).
	MaxAttempts int `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter: wait = rand[0, min(BackoffMax, BackoffBase*2^n)) (defaults
	// 500ms and 30s). A longer Retry-After from the server wins, up to
	// MaxRetryAfter (default 2m).
	BackoffBase   time.Duration `json:"backoff_base,omitempty" yaml:"backoff_base,omitempty"`
	BackoffMax    time.Duration `json:"backoff_max,omitempty" yaml:"backoff_max,omitempty"`
	MaxRetryAfter time.Duration `json:"max_retry_after,omitempty" yaml:"max_retry_after,omitempty"`
	// BreakerThreshold consecutive endpoint failures (5xx, timeouts, refused
	// or reset connections) open the circuit for BreakerCooldown, during
	// which every worker waits; then one probe request decides (defaults 5
	// and 10s).
	BreakerThreshold int           `json:"breaker_threshold,omitempty" yaml:"breaker_threshold,omitempty"`
	BreakerCooldown  time.Duration `json:"breaker_cooldown,omitempty" yaml:"breaker_cooldown,omitempty"`
	// Batch sends chat requests through the provider's batch API (see
	// batch.go): cheaper, slower, same answers and cache. Give the stage a
	// high concurrency so many requests wait together.
	Batch bool `json:"batch,omitempty" yaml:"batch,omitempty"`
	// BatchDir, with Batch, hands batches to an offline runner (vLLM's
	// run_batch) through this directory instead of the /v1/batches API.
	BatchDir string `json:"batch_dir,omitempty" yaml:"batch_dir,omitempty"`
	// BatchWindow is the quiet time after the last new request before the
	// pending ones are submitted (default 2s); BatchSize caps a batch
	// (default 50000, OpenAI's limit); BatchPoll is the polling interval
	// (default 30s); BatchDiscount prices a batch answer as a share of the
	// live price (default 0.5).
	BatchWindow   time.Duration `json:"batch_window,omitempty" yaml:"batch_window,omitempty"`
	BatchSize     int           `json:"batch_size,omitempty" yaml:"batch_size,omitempty"`
	BatchPoll     time.Duration `json:"batch_poll,omitempty" yaml:"batch_poll,omitempty"`
	BatchDiscount float64       `json:"batch_discount,omitempty" yaml:"batch_discount,omitempty"`
}

func (c Config) withDefaults() Config {
	c.BaseURL = cmp.Or(c.BaseURL, "https://api.openai.com/v1")
	c.APIKeyEnv = cmp.Or(c.APIKeyEnv, DefaultAPIKeyEnv)
	c.EmbedModel = cmp.Or(c.EmbedModel, c.Model)
	setDefault(&c.EmbedBatch, 128)
	setDefault(&c.Timeout, 2*time.Minute)
	setDefault(&c.Concurrency, 8)
	setDefault(&c.MaxAttempts, 6)
	setDefault(&c.BackoffBase, 500*time.Millisecond)
	setDefault(&c.BackoffMax, 30*time.Second)
	setDefault(&c.MaxRetryAfter, 2*time.Minute)
	setDefault(&c.BreakerThreshold, 5)
	setDefault(&c.BreakerCooldown, 10*time.Second)
	setDefault(&c.BatchWindow, 2*time.Second)
	setDefault(&c.BatchSize, 50000)
	setDefault(&c.BatchPoll, 30*time.Second)
	setDefault(&c.BatchDiscount, 0.5)
	return c
}

// setDefault sets *v to d when it is unset (zero or below).
func setDefault[T int | int64 | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

func (c Config) validate() error {
	u, err := url.Parse(c.BaseURL)
	if err == nil && u.User != nil {
		// Credentials in the URL would end up in error messages and logs.
		return fmt.Errorf("llm: base URL must not carry credentials; put the key in $%s", c.APIKeyEnv)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("llm: base URL %q: want http(s)://host[:port]/path", c.BaseURL)
	}
	return nil
}

// apiKey reads the key from the environment.
func (c Config) apiKey() string { return os.Getenv(c.APIKeyEnv) }

// WithEnv overlays settings from the environment (getenv is os.Getenv in
// production) onto c, so one pipeline file can be pointed at another
// endpoint or model without editing it. Precedence, lowest first: c itself,
// OPENAI_BASE_URL, CODEFEEDBACK_LLM_{BASE_URL,MODEL,API_KEY_ENV}, then the
// stage's own CODEFEEDBACK_<STAGE>_{BASE_URL,MODEL,API_KEY_ENV} (stage name
// upper-cased, '-' as '_'). Only variable names are read for the key, never
// the key itself.
func (c Config) WithEnv(getenv func(string) string) Config {
	set := func(dst *string, name string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	set(&c.BaseURL, "OPENAI_BASE_URL")
	prefixes := []string{"CODEFEEDBACK_LLM_"}
	if c.Stage != "" {
		prefixes = append(prefixes, "CODEFEEDBACK_"+strings.ToUpper(strings.ReplaceAll(c.Stage, "-", "_"))+"_")
	}
	for _, p := range prefixes {
		set(&c.BaseURL, p+"BASE_URL")
		set(&c.Model, p+"MODEL")
		set(&c.APIKeyEnv, p+"API_KEY_ENV")
	}
	return c
}
