package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

const testKey = "sk-test-0123456789abcdef"

// newClient returns a client for srv with fast retries; edit tweaks the config.
func newClient(t *testing.T, srv *llmtest.Server, opts llm.Options, edit func(*llm.Config)) *llm.Client {
	t.Helper()
	t.Setenv("LLMTEST_KEY", testKey)
	cfg := llm.Config{
		Stage: "test", BaseURL: srv.URL, APIKeyEnv: "LLMTEST_KEY",
		Params:      llm.Params{Model: "fake-chat"},
		Timeout:     5 * time.Second,
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		Concurrency: 4,
	}
	if edit != nil {
		edit(&cfg)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := llm.New(cfg, opts)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

func ask(s string) llm.Request { return llm.Request{Messages: []llm.Message{llm.User(s)}} }

func ptr[T any](v T) *T { return &v }

func TestChatWireProtocol(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.WithKey(testKey))
			long := strings.Repeat("héllo wörld ", 20) // several SSE chunks, multi-byte runes
			srv.Script(func(c llmtest.Call) llmtest.Reply {
				return llmtest.Reply{Text: long + c.LastUser(), PromptTokens: 11, CompletionTokens: 22, FinishReason: "length"}
			})
			c := newClient(t, srv, llm.Options{}, func(c *llm.Config) {
				c.Stream = stream
				c.Temperature = ptr(0.0)
				c.Seed = ptr(7)
				c.MaxTokens = 99
			})
			resp, err := c.Chat(context.Background(), llm.Request{
				Messages: []llm.Message{llm.System("be brief"), llm.User("q1")},
				Params:   llm.Params{JSONMode: true},
			})
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Text != long+"q1" {
				t.Errorf("text: got %q want %q", resp.Text, long+"q1")
			}
			if resp.PromptTokens != 11 || resp.CompletionTokens != 22 || resp.FinishReason != "length" || resp.Attempts != 1 {
				t.Errorf("got tokens %d/%d finish %q attempts %d, want 11/22 length 1",
					resp.PromptTokens, resp.CompletionTokens, resp.FinishReason, resp.Attempts)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Authorization != "Bearer "+testKey {
				t.Errorf("Authorization: got %q", r.Authorization)
			}
			// The answer's bound goes as max_completion_tokens: reasoning
			// models reject the deprecated max_tokens.
			var wire map[string]json.RawMessage
			if err := json.Unmarshal(r.Body, &wire); err != nil {
				t.Fatalf("request body: %v: %s", err, r.Body)
			}
			if got := string(wire["max_completion_tokens"]); got != "99" {
				t.Errorf("max_completion_tokens: got %q, want 99 in %s", got, r.Body)
			}
			if _, ok := wire["max_tokens"]; ok {
				t.Errorf("the request sends the deprecated max_tokens: %s", r.Body)
			}
			if r.Chat.Stream != stream || r.Chat.Model != "fake-chat" ||
				r.Chat.Seed == nil || *r.Chat.Seed != 7 || r.Chat.ResponseFormat == nil || r.Chat.ResponseFormat.Type != "json_object" {
				t.Errorf("request params wrong: %s", r.Body)
			}
			// Temperature 0 must be on the wire (greedy), not dropped.
			if !bytes.Contains(r.Body, []byte(`"temperature":`)) || r.Chat.Temperature > 1e-6 {
				t.Errorf("temperature 0 not sent as ~0: %s", r.Body)
			}
			if len(r.Chat.Messages) != 2 || r.Chat.Messages[0].Role != "system" || r.Chat.Messages[1].Content != "q1" {
				t.Errorf("messages: got %+v", r.Chat.Messages)
			}
		})
	}
}

func TestCacheNeverPaysTwice(t *testing.T) {
	srv := llmtest.New(t)
	cache := llmtest.NewMemCache()
	acct := llm.NewAccountant(llm.Prices{"fake-*": {InputPerM: 1e6, OutputPerM: 2e6}}, 0)
	c := newClient(t, srv, llm.Options{Cache: cache, Accountant: acct}, nil)
	ctx := context.Background()
	first, err := c.Chat(ctx, ask("same"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Chat(ctx, ask("same"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || !second.Cached || second.Text != first.Text || second.Cost != 0 {
		t.Errorf("got first cached=%v second cached=%v text %q vs %q cost %v", first.Cached, second.Cached, first.Text, second.Text, second.Cost)
	}
	// Any parameter change is a different request.
	for _, p := range []llm.Params{{Temperature: ptr(0.5)}, {Seed: ptr(1)}, {MaxTokens: 5}, {JSONMode: true}, {Model: "fake-2"}} {
		r := ask("same")
		r.Params = p
		if resp, err := c.Chat(ctx, r); err != nil || resp.Cached {
			t.Errorf("params %+v: got cached=%v err=%v, want a fresh call", p, resp.Cached, err)
		}
	}
	if got := srv.Calls("/v1/chat/completions"); got != 6 {
		t.Errorf("server calls: got %d want 6", got)
	}
	// Streaming does not change the answer, so it shares the cache entry.
	cs := newClient(t, srv, llm.Options{Cache: cache, Accountant: acct}, func(c *llm.Config) { c.Stream = true })
	if resp, err := cs.Chat(ctx, ask("same")); err != nil || !resp.Cached {
		t.Errorf("stream client: got cached=%v err=%v, want cache hit", resp.Cached, err)
	}
	snap := acct.Snapshot()
	if snap.Total.CachedRequests != 2 || snap.Total.Requests != 6 {
		t.Errorf("snapshot: got %+v, want 6 paid 2 cached", snap.Total)
	}
	if want := first.Cost * 2; math.Abs(snap.Total.SavedCost-want) > 1e-9 || first.Cost <= 0 {
		t.Errorf("saved cost: got %v want %v (first cost %v)", snap.Total.SavedCost, want, first.Cost)
	}
}

func TestFailuresAreNotCached(t *testing.T) {
	srv := llmtest.New(t)
	cache := llmtest.NewMemCache()
	c := newClient(t, srv, llm.Options{Cache: cache}, func(c *llm.Config) { c.MaxAttempts = 1 })
	for _, f := range []llmtest.Fault{{Kind: llmtest.Status, Status: 429}, {Kind: llmtest.Status, Status: 500},
		{Kind: llmtest.Drop}, {Kind: llmtest.Truncated}, {Kind: llmtest.EmptyChoices}} {
		srv.FailNext(f)
		if _, err := c.Chat(context.Background(), ask("x")); err == nil {
			t.Errorf("fault %+v: got nil error with 1 attempt", f)
		}
	}
	if n := cache.Len(); n != 0 {
		t.Errorf("cache holds %d entries after failures, want 0", n)
	}
	if _, err := c.Chat(context.Background(), ask("x")); err != nil {
		t.Fatal(err)
	}
	if n := cache.Len(); n != 1 {
		t.Errorf("cache holds %d entries after a success, want 1", n)
	}
}

// TestMisbehaviourRecovers: each transient fault on the first attempt is
// retried and the item succeeds, streaming off and on.
func TestMisbehaviourRecovers(t *testing.T) {
	faults := map[string]llmtest.Fault{
		"429":       {Kind: llmtest.Status, Status: 429},
		"500":       {Kind: llmtest.Status, Status: 500},
		"502":       {Kind: llmtest.Status, Status: 502},
		"503":       {Kind: llmtest.Status, Status: 503},
		"drop":      {Kind: llmtest.Drop},
		"stall":     {Kind: llmtest.Stall, Stall: 30 * time.Second},
		"truncated": {Kind: llmtest.Truncated},
		"empty":     {Kind: llmtest.EmptyChoices},
	}
	for _, stream := range []bool{false, true} {
		for name, f := range faults {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				srv := llmtest.New(t)
				c := newClient(t, srv, llm.Options{}, func(c *llm.Config) {
					c.Stream = stream
					if f.Kind == llmtest.Stall {
						// The stall must end by the client's timeout; the
						// other faults keep the default, so a loaded machine's
						// slow answer is not taken for one.
						c.Timeout = 2 * time.Second
					}
				})
				srv.FailNext(f, f)
				resp, err := c.Chat(context.Background(), ask("hi"))
				if err != nil {
					t.Fatalf("got error %v, want recovery", err)
				}
				if resp.Text != "echo: hi" || resp.Attempts != 3 {
					t.Errorf("got %q after %d attempts, want %q after 3", resp.Text, resp.Attempts, "echo: hi")
				}
			})
		}
	}
}

// TestMisbehaviourFailsCleanly: a fault that persists fails the item with
// ErrRetriesExhausted after MaxAttempts, wrapping the cause.
func TestMisbehaviourFailsCleanly(t *testing.T) {
	cases := []struct {
		name  string
		fault llmtest.Fault
		cause error
	}{
		{"503", llmtest.Fault{Kind: llmtest.Status, Status: 503}, nil},
		{"stall", llmtest.Fault{Kind: llmtest.Stall, Stall: 30 * time.Second}, context.DeadlineExceeded},
		{"empty", llmtest.Fault{Kind: llmtest.EmptyChoices}, llm.ErrEmptyResponse},
		{"drop", llmtest.Fault{Kind: llmtest.Drop}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Script(func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Fault: tc.fault} })
			c := newClient(t, srv, llm.Options{}, func(c *llm.Config) {
				c.MaxAttempts = 3
				if tc.fault.Kind == llmtest.Stall {
					c.Timeout = time.Second // cuts the 30 s stall: the cause says so
				}
			})
			_, err := c.Chat(context.Background(), ask("hi"))
			if !errors.Is(err, llm.ErrRetriesExhausted) {
				t.Fatalf("got %v, want ErrRetriesExhausted", err)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("got %v, want it to wrap %v", err, tc.cause)
			}
			if got := srv.Calls("/v1/chat/completions"); got != 3 {
				t.Errorf("server calls: got %d want 3", got)
			}
		})
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	srv := llmtest.New(t)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400}}
	})
	c := newClient(t, srv, llm.Options{}, nil)
	_, err := c.Chat(context.Background(), ask("hi"))
	if err == nil || errors.Is(err, llm.ErrRetriesExhausted) {
		t.Fatalf("got %v, want a permanent error", err)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 1 {
		t.Errorf("server calls: got %d want 1", got)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	srv := llmtest.New(t)
	srv.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 429, RetryAfter: "1"})
	c := newClient(t, srv, llm.Options{}, nil) // backoff alone would wait <= 5 ms
	start := time.Now()
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("retried after %v, want >= 1s as Retry-After said", el)
	}

	// A wait longer than the caller's patience ends with the context.
	srv.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 429, RetryAfter: "60"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err := c.Chat(ctx, ask("hi"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
		t.Errorf("got %v after %v, want the context deadline, not the 60 s Retry-After", err, time.Since(start))
	}
}

func TestCircuitBreakerPausesWorkers(t *testing.T) {
	srv := llmtest.New(t)
	var down atomic.Bool
	down.Store(true)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		if down.Load() {
			return llmtest.Reply{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 503}}
		}
		return llmtest.Reply{Text: "up"}
	})
	c := newClient(t, srv, llm.Options{}, func(c *llm.Config) {
		c.Concurrency = 4
		c.MaxAttempts = 50
		c.BreakerThreshold = 3
		c.BreakerCooldown = 400 * time.Millisecond
	})
	time.AfterFunc(150*time.Millisecond, func() { down.Store(false) })
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Chat(context.Background(), ask(fmt.Sprint(i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	// Without the breaker, 4 workers retrying every <= 5 ms for 150 ms would
	// make ~100 failed calls. With it: the threshold, those in flight when it
	// opened, then the 8 successes.
	if got := srv.Calls("/v1/chat/completions"); got > 3+4+8 {
		t.Errorf("server calls: got %d, want <= 15 (breaker should pause workers)", got)
	}
}

func TestBudgetStopsCalls(t *testing.T) {
	srv := llmtest.New(t)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "x", PromptTokens: 1000, CompletionTokens: 1000}
	})
	// $1 per 1k input, $2 per 1k output: each call costs $3.
	acct := llm.NewAccountant(llm.Prices{"fake-chat": {InputPerM: 1000, OutputPerM: 2000}}, 5)
	c := newClient(t, srv, llm.Options{Accountant: acct}, func(c *llm.Config) { c.Concurrency = 1 })
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		_, err = c.Chat(context.Background(), ask(fmt.Sprint(i)))
	}
	if !errors.Is(err, llm.ErrBudgetExceeded) {
		t.Fatalf("got %v, want ErrBudgetExceeded", err)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 2 {
		t.Errorf("server calls: got %d want 2 ($3 + $3 reaches the $5 budget)", got)
	}
	snap := acct.Snapshot()
	if !snap.BudgetExceeded || math.Abs(snap.Total.Cost-6) > 1e-9 || snap.Stages["test"].Requests != 2 {
		t.Errorf("snapshot: got %+v", snap)
	}
	if s := snap.String(); !strings.Contains(s, "$6.0000/$5.00") {
		t.Errorf("progress line: got %q", s)
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	srv := llmtest.New(t)
	var inflight, peak atomic.Int64
	// The first three answers wait for each other, so the bound is reached
	// whatever the machine's load; the minute is only a hang guard for a
	// client that lets fewer through.
	full := make(chan struct{})
	var once sync.Once
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-time.After(time.Minute):
		}
		inflight.Add(-1)
		return llmtest.Reply{Text: "ok"}
	})
	c := newClient(t, srv, llm.Options{}, func(c *llm.Config) {
		c.Concurrency = 3
		c.Timeout = 2 * time.Minute // past the hang guard
	})
	if _, errs := askAll(t, context.Background(), c, 12); errors.Join(errs...) != nil {
		t.Error(errors.Join(errs...))
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak in flight: got %d want 3", p)
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := llmtest.NewMemCache()
	acct := llm.NewAccountant(nil, 0)

	// The server expects another key and echoes the one presented in its
	// 401 message, as real providers partly do.
	srv := llmtest.New(t, llmtest.WithKey("sk-the-right-one"))
	c := newClient(t, srv, llm.Options{Cache: cache, Accountant: acct, Logger: logger}, nil)
	var errText []string
	if _, err := c.Chat(context.Background(), ask("hi")); err == nil {
		t.Fatal("got nil error with a wrong key")
	} else {
		errText = append(errText, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			errText = append(errText, e.Error())
		}
	}
	if srv.AuthFailures() != 1 {
		t.Errorf("auth failures: got %d want 1", srv.AuthFailures())
	}
	if _, err := c.Models(context.Background()); err == nil {
		t.Fatal("Models: got nil error with a wrong key")
	} else {
		errText = append(errText, err.Error())
	}
	if _, err := c.Embed(context.Background(), []string{"a"}); err == nil {
		t.Fatal("Embed: got nil error with a wrong key")
	} else {
		errText = append(errText, err.Error())
	}

	// A good key, with retries logged, fills the cache and the logs.
	srv2 := llmtest.New(t, llmtest.WithKey(testKey))
	srv2.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 500}, llmtest.Fault{Kind: llmtest.Drop})
	c2 := newClient(t, srv2, llm.Options{Cache: cache, Accountant: acct, Logger: logger}, func(c *llm.Config) { c.EmbedModel = "fake-embed" })
	if _, err := c2.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Embed(context.Background(), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("expected retry logs, got %q", logs.String())
	}
	cfgJSON, _ := json.Marshal(c2.Config())
	snapJSON, _ := json.Marshal(acct.Snapshot())
	outputs := map[string]string{"logs": logs.String(), "config": string(cfgJSON), "snapshot": string(snapJSON)}
	for i, e := range errText {
		outputs[fmt.Sprintf("error %d", i)] = e
	}
	for k, v := range cache.Dump() {
		outputs["cache "+k] = k + string(v)
	}
	if len(cache.Dump()) != 3 {
		t.Errorf("cache entries: got %d want 3", len(cache.Dump()))
	}
	for where, text := range outputs {
		if strings.Contains(text, testKey) {
			t.Errorf("API key leaked into %s: %q", where, text)
		}
	}
	if !strings.Contains(errText[0], "[REDACTED]") {
		t.Errorf("401 error: got %q, want the echoed key redacted", errText[0])
	}
}

func TestEmbedBatchesAndCaches(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithEmbedDim(16))
	cache := llmtest.NewMemCache()
	c := newClient(t, srv, llm.Options{Cache: cache}, func(c *llm.Config) {
		c.EmbedModel = "fake-embed"
		c.EmbedBatch = 3
	})
	texts := []string{"a", "b", "c", "d", "e", "f", "g"}
	srv.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 503})
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		want := llmtest.Vector(texts[i], 16)
		if fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("vector %d: got %v want %v", i, v, want)
		}
	}
	if got := srv.Calls("/v1/embeddings"); got != 4 { // 3 batches + 1 retry
		t.Errorf("embedding calls: got %d want 4", got)
	}
	for _, r := range srv.Requests() {
		if r.Embed != nil && (len(r.Embed.Input) > 3 || r.Embed.Model != "fake-embed") {
			t.Errorf("batch: got %+v", r.Embed)
		}
	}
	// Only the new text is sent the second time.
	if _, err := c.Embed(context.Background(), append(texts, "h")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; srv.Calls("/v1/embeddings") != 5 || len(last.Embed.Input) != 1 || last.Embed.Input[0] != "h" {
		t.Errorf("second Embed: got %d calls, last %+v", srv.Calls("/v1/embeddings"), last.Embed)
	}
}

func TestModels(t *testing.T) {
	srv := llmtest.New(t, llmtest.WithModels("b-model", "a-model"))
	c := newClient(t, srv, llm.Options{}, nil)
	names, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, ","); got != "a-model,b-model" {
		t.Errorf("models: got %q want a-model,b-model", got)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, u := range []string{"ftp://x/v1", "not a url", "http://user:pw@127.0.0.1/v1"} {
		_, err := llm.New(llm.Config{BaseURL: u}, llm.Options{})
		if err == nil {
			t.Errorf("base URL %q: got nil error", u)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("base URL error leaks credentials: %v", err)
		}
	}
}

func TestRequestsPerMinuteLimit(t *testing.T) {
	srv := llmtest.New(t)
	// 120/min = 2/s with a burst of 10 s worth (20): 22 calls need ~1 s.
	c := newClient(t, srv, llm.Options{}, func(c *llm.Config) { c.RequestsPerMinute = 120; c.Concurrency = 8 })
	start := time.Now()
	if _, errs := askAll(t, context.Background(), c, 22); errors.Join(errs...) != nil {
		t.Error(errors.Join(errs...))
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("22 calls at 2/s after a burst of 20 took %v, want >= ~1s", el)
	}
}
