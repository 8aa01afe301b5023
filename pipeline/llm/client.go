package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
)

// ErrRetriesExhausted wraps the last error of a request that failed
// transiently on every attempt. The item failed; the run can go on.
var ErrRetriesExhausted = errors.New("llm: retries exhausted")

// TransientError is a request that failed transiently (429, 5xx, timeout,
// reset or refused connection, truncated or empty answer) on every attempt
// the client made. It says so to whoever retries (the pipeline engine
// retries the item: pipeline.RetryPolicy): Transient reports true and
// RetryAfter the server's last Retry-After hint. errors.Is(err,
// ErrRetriesExhausted) holds.
type TransientError struct {
	Attempts int
	After    time.Duration // the server's last Retry-After hint, 0 if none
	Err      error         // the last attempt's error
}

func (e *TransientError) Error() string {
	return fmt.Sprintf("%v after %d attempts: %v", ErrRetriesExhausted, e.Attempts, e.Err)
}

func (e *TransientError) Unwrap() []error { return []error{ErrRetriesExhausted, e.Err} }

// Transient reports true: the same request may succeed later.
func (e *TransientError) Transient() bool { return true }

// RetryAfter is the server's hint of when to try again (0 = none).
func (e *TransientError) RetryAfter() time.Duration { return e.After }

// Roles of chat messages: the names a dialogue's turns carry too, defined
// once in schema.
const (
	RoleSystem    = schema.RoleSystem
	RoleUser      = schema.RoleUser
	RoleAssistant = schema.RoleAssistant
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// System, User and Assistant build messages.
func System(s string) Message    { return Message{Role: RoleSystem, Content: s} }
func User(s string) Message      { return Message{Role: RoleUser, Content: s} }
func Assistant(s string) Message { return Message{Role: RoleAssistant, Content: s} }

// Request is one chat completion request. Params set here override the
// Client's Config.Params for this request.
type Request struct {
	Messages []Message
	Params
}

// Response is the answer to a Request.
type Response struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Model is the model that answered, as the endpoint reported it.
	Model            string `json:"model,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// Cost in dollars of this call (0 when Cached).
	Cost float64 `json:"-"`
	// Cached is true when the answer came from the cache and cost nothing.
	Cached bool `json:"-"`
	// Attempts is the number of HTTP attempts made (0 when Cached).
	Attempts int `json:"-"`
	// Batch is true when a provider batch answered (Cost is then the batch
	// price) and BatchSaved what the live price would have added.
	Batch      bool    `json:"-"`
	BatchSaved float64 `json:"-"`
}

// Chatter is what LLM-backed stages depend on. *Client implements it; stage
// tests may use a Client against llmtest.Server.
type Chatter interface {
	// Chat sends req and returns the model's answer. Errors wrap
	// ErrBudgetExceeded (stop the run), ErrRetriesExhausted (transient
	// failures on every attempt: fail the item), or a permanent error (bad
	// request, auth); ctx errors are returned as they are.
	Chat(ctx context.Context, req Request) (Response, error)
}

// Options are the run-level services a Client uses; all are optional.
type Options struct {
	// Cache stores successful answers (bucket "llm"); nil disables caching.
	Cache store.Cache
	// Accountant receives usage and enforces the budget; nil accounts nothing.
	Accountant *Accountant
	// Logger gets retries, breaker changes and failures (default slog.Default()).
	Logger *slog.Logger
	// HTTPClient overrides the HTTP client (default: a transport keeping
	// Concurrency idle connections per host).
	HTTPClient *http.Client
}

// CacheBucket is the store bucket holding cached model answers.
const CacheBucket = "llm"

// Client is an OpenAI-compatible client for one stage. It is safe for
// concurrent use; at most Config.Concurrency requests are in flight.
type Client struct {
	cfg   Config
	key   string
	oa    *openai.Client
	sem   chan struct{}
	reqs  *bucket
	toks  *bucket
	brk   *breaker
	cache store.Cache
	acct  *Accountant
	log   *slog.Logger
	batch *batcher // nil unless Config.Batch
}

var _ Chatter = (*Client)(nil)

// New builds a Client. It reads the API key from $cfg.APIKeyEnv now.
func New(cfg Config, opts Options) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(cfg.Concurrency, 16)
		tr.MaxIdleConns = max(tr.MaxIdleConns, 2*tr.MaxIdleConnsPerHost)
		hc = &http.Client{Transport: tr}
	}
	key := cfg.apiKey()
	oc := openai.DefaultConfig(key)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = hintingDoer{c: hc}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Client{
		cfg:   cfg,
		key:   key,
		oa:    openai.NewClientWithConfig(oc),
		sem:   make(chan struct{}, cfg.Concurrency),
		reqs:  newBucket(cfg.RequestsPerMinute),
		toks:  newBucket(cfg.TokensPerMinute),
		brk:   newBreaker(cfg.BreakerThreshold, cfg.BreakerCooldown),
		cache: opts.Cache,
		acct:  opts.Accountant,
		log:   log.With("stage", cfg.Stage),
	}
	if cfg.Batch {
		b, err := newBatcher(c)
		if err != nil {
			return nil, err
		}
		c.batch = b
	}
	return c, nil
}

// KeyParams implements pipeline.ModelService for a client used as a run's
// model service (tests): its own parameters, whatever the stage or endpoint.
func (c *Client) KeyParams(stage, endpoint string) (any, error) { return c.cfg.Params, nil }

// Config returns the effective configuration (defaults applied). It holds
// the key's variable name, never the key.
func (c *Client) Config() Config { return c.cfg }

// cachedAnswer is what the cache holds for a chat request.
type cachedAnswer struct {
	Text             string `json:"text"`
	FinishReason     string `json:"finish_reason,omitempty"`
	Model            string `json:"model,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}

// ChatKey is the cache key of a request under the given effective params:
// everything that determines the answer (model, messages, temperature,
// seed, max tokens, JSON mode), nothing that does not (stream, endpoint
// URL, key).
func ChatKey(p Params, msgs []Message) string {
	return store.Key("llm.chat/v1", p, msgs)
}

// Chat implements Chatter.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	p := c.cfg.Params.merge(req.Params)
	if p.Model == "" {
		return Response{}, fmt.Errorf("llm %s: no model configured", c.cfg.Stage)
	}
	if len(req.Messages) == 0 {
		return Response{}, fmt.Errorf("llm %s: request has no messages", c.cfg.Stage)
	}
	key := ChatKey(p, req.Messages)
	if c.cache != nil {
		a, ok, err := store.GetJSON[cachedAnswer](ctx, c.cache, CacheBucket, key)
		if err != nil {
			return Response{}, fmt.Errorf("llm %s: cache get: %w", c.cfg.Stage, err)
		}
		if ok {
			saved := c.acct.Prices().Cost(p.Model, a.PromptTokens, a.CompletionTokens)
			c.acct.record(c.cfg.Stage, Usage{CachedRequests: 1, SavedCost: saved})
			return Response{Text: a.Text, FinishReason: a.FinishReason, Model: a.Model,
				PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens, Cached: true}, nil
		}
	}

	oreq := c.chatRequest(p, req.Messages)
	if c.batch != nil {
		if err := c.acct.check(); err != nil {
			return Response{}, err
		}
		resp, err := c.batch.chat(ctx, key, oreq)
		switch {
		case err == nil:
			live := c.acct.Prices().Cost(p.Model, resp.PromptTokens, resp.CompletionTokens)
			resp.Cost = live * c.cfg.BatchDiscount
			resp.Batch, resp.BatchSaved = true, live-resp.Cost
			c.acct.record(c.cfg.Stage, Usage{Requests: 1, BatchRequests: 1, PromptTokens: int64(resp.PromptTokens),
				CompletionTokens: int64(resp.CompletionTokens), Cost: resp.Cost, BatchSavedCost: live - resp.Cost})
			c.put(ctx, key, resp)
			return resp, nil
		case ctx.Err() != nil:
			return Response{}, ctx.Err()
		}
		// Expired, failed lines, or an unusable batch API: ask live.
		c.log.Warn("llm batch gave no answer; sending the request live", "err", c.redact(err))
	}
	est := estimateTokens(req.Messages) + p.MaxTokens
	var resp Response
	attempts, err := c.do(ctx, est, func(actx context.Context) (int, error) {
		var err error
		if c.cfg.Stream {
			resp, err = c.chatStream(actx, oreq)
		} else {
			resp, err = c.chatOnce(actx, oreq)
		}
		return resp.PromptTokens + resp.CompletionTokens, err
	})
	if err != nil {
		c.acct.record(c.cfg.Stage, Usage{Failures: 1, Retries: int64(max(attempts-1, 0))})
		return Response{Attempts: attempts}, c.redact(fmt.Errorf("llm %s: chat %s: %w", c.cfg.Stage, p.Model, err))
	}
	resp.Attempts = attempts
	resp.Cost = c.acct.Prices().Cost(p.Model, resp.PromptTokens, resp.CompletionTokens)
	c.acct.record(c.cfg.Stage, Usage{Requests: 1, Retries: int64(attempts - 1),
		PromptTokens: int64(resp.PromptTokens), CompletionTokens: int64(resp.CompletionTokens), Cost: resp.Cost})
	c.put(ctx, key, resp)
	return resp, nil
}

// put stores a paid answer in the request cache.
func (c *Client) put(ctx context.Context, key string, resp Response) {
	if c.cache == nil {
		return
	}
	a := cachedAnswer{Text: resp.Text, FinishReason: resp.FinishReason, Model: resp.Model,
		PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens}
	if err := store.PutJSON(ctx, c.cache, CacheBucket, key, a); err != nil {
		// The answer is good and paid for; a cache failure must not lose it.
		c.log.Warn("llm cache put failed", "err", c.redact(err))
	}
}

func (c *Client) chatRequest(p Params, msgs []Message) openai.ChatCompletionRequest {
	// max_completion_tokens, not the deprecated max_tokens, which reasoning
	// models (o1, o3, gpt-5) refuse; other servers read it the same way.
	r := openai.ChatCompletionRequest{Model: p.Model, MaxCompletionTokens: p.MaxTokens}
	r.Messages = make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		r.Messages[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	if p.Temperature != nil {
		r.Temperature = float32(*p.Temperature)
		if r.Temperature == 0 {
			r.Temperature = math.SmallestNonzeroFloat32 // omitempty would drop 0
		}
	}
	if p.Seed != nil {
		s := *p.Seed
		r.Seed = &s
	}
	if p.JSONMode {
		r.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return r
}

func (c *Client) chatOnce(ctx context.Context, r openai.ChatCompletionRequest) (Response, error) {
	out, err := c.oa.CreateChatCompletion(ctx, r)
	if err != nil {
		return Response{}, err
	}
	if len(out.Choices) == 0 {
		return Response{}, ErrEmptyResponse
	}
	resp := Response{Text: out.Choices[0].Message.Content, FinishReason: string(out.Choices[0].FinishReason),
		Model: out.Model, PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	fillUsage(&resp, r)
	return resp, nil
}

func (c *Client) chatStream(ctx context.Context, r openai.ChatCompletionRequest) (Response, error) {
	r.Stream = true
	r.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := c.oa.CreateChatCompletionStream(ctx, r)
	if err != nil {
		return Response{}, err
	}
	defer st.Close()
	var b strings.Builder
	var resp Response
	sawChoice := false
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, err
		}
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if chunk.Usage != nil {
			resp.PromptTokens, resp.CompletionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			sawChoice = true
			b.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				resp.FinishReason = string(ch.FinishReason)
			}
		}
	}
	if !sawChoice {
		return Response{}, ErrEmptyResponse
	}
	resp.Text = b.String()
	fillUsage(&resp, r)
	return resp, nil
}

// fillUsage estimates token counts (bytes/4) when the endpoint reported none,
// so rate limits and budgets still see the call.
func fillUsage(resp *Response, r openai.ChatCompletionRequest) {
	if resp.PromptTokens == 0 && resp.CompletionTokens == 0 {
		for _, m := range r.Messages {
			resp.PromptTokens += (len(m.Content)+3)/4 + 4
		}
		resp.CompletionTokens = (len(resp.Text) + 3) / 4
	}
}

func estimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += (len(m.Content)+3)/4 + 4
	}
	return n
}

// do runs attempt under the concurrency bound, the budget, the circuit
// breaker and the rate limits, retrying transient failures. attempt gets a
// context bounded by Config.Timeout and returns the tokens the call used.
// It returns the number of attempts made.
func (c *Client) do(ctx context.Context, estTokens int, attempt func(context.Context) (int, error)) (int, error) {
	if err := c.acct.check(); err != nil {
		return 0, err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-c.sem }()

	var last error
	var lastHint time.Duration
	n := 0
	for n < c.cfg.MaxAttempts {
		if err := c.acct.check(); err != nil {
			return n, err
		}
		probe, err := c.brk.acquire(ctx)
		if err != nil {
			return n, err
		}
		if err := c.reqs.wait(ctx, 1); err != nil {
			c.brk.release(probe, unknown)
			return n, err
		}
		if err := c.toks.wait(ctx, float64(estTokens)); err != nil {
			c.brk.release(probe, unknown)
			return n, err
		}
		n++
		h := &hint{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, hintKey{}, h), c.cfg.Timeout)
		used, err := attempt(actx)
		cancel()
		if err == nil {
			c.brk.release(probe, endpointUp)
			if c.toks != nil {
				c.toks.adjust(float64(estTokens - used))
			}
			return n, nil
		}
		v := classify(ctx, err)
		c.brk.release(probe, v.breaker)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if !v.retry {
			return n, err
		}
		last, lastHint = err, 0
		if h.has {
			lastHint = h.retryAfter
		}
		if n == c.cfg.MaxAttempts {
			break
		}
		wait := backoff(n-1, c.cfg.BackoffBase, c.cfg.BackoffMax)
		if h.has && h.retryAfter > wait {
			wait = min(h.retryAfter, c.cfg.MaxRetryAfter)
		}
		c.log.Warn("llm attempt failed, retrying", "attempt", n, "status", v.status,
			"wait", wait.Round(time.Millisecond), "err", c.redact(err))
		if err := sleepOrWake(ctx, wait, nil); err != nil {
			return n, err
		}
	}
	return n, &TransientError{Attempts: n, After: lastHint, Err: last}
}

// Embed returns one embedding per text, in order, from /v1/embeddings with
// Config.EmbedModel, Config.EmbedBatch texts per call. Each text's vector is
// cached separately, so only texts never embedded before are paid for.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	model := c.cfg.EmbedModel
	if model == "" {
		return nil, fmt.Errorf("llm %s: no embedding model configured", c.cfg.Stage)
	}
	out := make([][]float32, len(texts))
	keys := make([]string, len(texts))
	var miss []int
	for i, t := range texts {
		keys[i] = store.Key("llm.embed/v1", model, t)
		if c.cache != nil {
			vec, ok, err := store.GetJSON[[]float32](ctx, c.cache, CacheBucket, keys[i])
			if err != nil {
				return nil, fmt.Errorf("llm %s: cache get: %w", c.cfg.Stage, err)
			}
			if ok {
				out[i] = vec
				c.acct.record(c.cfg.Stage, Usage{CachedRequests: 1})
				continue
			}
		}
		miss = append(miss, i)
	}
	for start := 0; start < len(miss); start += c.cfg.EmbedBatch {
		idx := miss[start:min(start+c.cfg.EmbedBatch, len(miss))]
		batch := make([]string, len(idx))
		est := 0
		for j, i := range idx {
			batch[j] = texts[i]
			est += (len(texts[i]) + 3) / 4
		}
		var vecs [][]float32
		var tokens int
		attempts, err := c.do(ctx, est, func(actx context.Context) (int, error) {
			var err error
			vecs, tokens, err = c.embedOnce(actx, model, batch)
			return tokens, err
		})
		if err != nil {
			c.acct.record(c.cfg.Stage, Usage{Failures: 1, Retries: int64(max(attempts-1, 0))})
			return nil, c.redact(fmt.Errorf("llm %s: embed %s: %w", c.cfg.Stage, model, err))
		}
		cost := c.acct.Prices().Cost(model, tokens, 0)
		c.acct.record(c.cfg.Stage, Usage{Requests: 1, Retries: int64(attempts - 1), PromptTokens: int64(tokens), Cost: cost})
		for j, i := range idx {
			out[i] = vecs[j]
			if c.cache != nil {
				if err := store.PutJSON(ctx, c.cache, CacheBucket, keys[i], vecs[j]); err != nil {
					c.log.Warn("llm cache put failed", "err", c.redact(err))
				}
			}
		}
	}
	return out, nil
}

func (c *Client) embedOnce(ctx context.Context, model string, batch []string) ([][]float32, int, error) {
	resp, err := c.oa.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: batch, Model: openai.EmbeddingModel(model)})
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Data) != len(batch) {
		return nil, 0, fmt.Errorf("%w: %d embeddings for %d inputs", ErrEmptyResponse, len(resp.Data), len(batch))
	}
	vecs := make([][]float32, len(batch))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(batch) || vecs[d.Index] != nil {
			return nil, 0, fmt.Errorf("llm: embedding response has bad index %d", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, resp.Usage.PromptTokens, nil
}

// Models lists the model names the endpoint serves (/v1/models), sorted.
// It makes one attempt, bounded by Config.Timeout.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	list, err := c.oa.ListModels(actx)
	if err != nil {
		return nil, c.redact(fmt.Errorf("llm %s: list models: %w", c.cfg.Stage, err))
	}
	names := make([]string, len(list.Models))
	for i, m := range list.Models {
		names[i] = m.ID
	}
	sort.Strings(names)
	return names, nil
}

// redactedError replaces an error whose text contains the API key. It keeps
// the sentinels callers test with errors.Is, but not the original chain,
// whose text would leak the key.
type redactedError struct {
	msg   string
	kinds []error
	after time.Duration // a TransientError's hint
}

// Transient keeps a redacted TransientError's verdict.
func (e *redactedError) Transient() bool { return slices.Contains(e.kinds, ErrRetriesExhausted) }

// RetryAfter keeps a redacted TransientError's hint.
func (e *redactedError) RetryAfter() time.Duration { return e.after }

func (e *redactedError) Error() string   { return e.msg }
func (e *redactedError) Unwrap() []error { return e.kinds }

// redact returns err unchanged unless its text contains the API key.
func (c *Client) redact(err error) error {
	if err == nil || len(c.key) < 4 || !strings.Contains(err.Error(), c.key) {
		return err
	}
	re := &redactedError{msg: strings.ReplaceAll(err.Error(), c.key, "[REDACTED]")}
	var te *TransientError
	if errors.As(err, &te) {
		re.after = te.After
	}
	for _, s := range []error{ErrBudgetExceeded, ErrRetriesExhausted, ErrEmptyResponse, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			re.kinds = append(re.kinds, s)
		}
	}
	return re
}
