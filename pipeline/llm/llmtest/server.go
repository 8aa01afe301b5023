// Package llmtest runs an in-process OpenAI-compatible server for tests. It
// speaks the real wire protocol (the JSON bodies go-openai sends and decodes,
// and Server-Sent Events when a request says "stream": true) on a loopback
// httptest listener, so any stage can test its prompts and parsing against a
// scripted fake model without a network.
//
// Typical use in a stage test:
//
//	srv := llmtest.New(t, llmtest.WithKey("sk-test"))
//	srv.Script(func(c llmtest.Call) llmtest.Reply {
//		if c.N == 1 {
//			return llmtest.Reply{Text: "```python\nprint(1/0)\n```"} // first answer has a bug
//		}
//		return llmtest.Reply{Text: "```python\nprint(1)\n```"} // the fix
//	})
//	t.Setenv("TEST_KEY", "sk-test")
//	client := ... llm.Config{BaseURL: srv.URL, APIKeyEnv: "TEST_KEY", ...}
//
// Misbehaviour is injected per request with Reply.Fault or for the next
// requests with FailNext: HTTP errors with optional Retry-After, dropped
// connections, stalls, truncated bodies and empty choices. Every request is
// recorded (Requests) and counted (Calls) so tests can assert what was sent,
// including that the Authorization header carried the expected key.
//
// The server is closed by t.Cleanup. All methods are safe for concurrent use.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// FaultKind names a way the server misbehaves.
type FaultKind int

const (
	// NoFault answers normally.
	NoFault FaultKind = iota
	// Status answers with Fault.Status (e.g. 429, 500, 502, 503) and an
	// OpenAI-style error body, with a Retry-After header when set.
	Status
	// Drop hijacks the connection and closes it without answering.
	Drop
	// Stall waits Fault.Stall (or until the client gives up) and then answers
	// normally; use it to make a client-side timeout fire.
	Stall
	// Truncated answers 200 with the JSON body cut in half.
	Truncated
	// EmptyChoices answers 200 with a well-formed body whose choices (or
	// embedding data) are empty.
	EmptyChoices
	// Body answers 200 with Fault.Body verbatim as application/json.
	Body
)

// Fault describes one misbehaviour.
type Fault struct {
	Kind       FaultKind
	Status     int           // for Status; default 500
	RetryAfter string        // for Status: Retry-After header value (seconds or HTTP-date)
	Stall      time.Duration // for Stall; default 30s
	Body       string        // for Body
}

// Call is what a Script sees for one chat request.
type Call struct {
	// N is the 1-based index of this chat call on the server.
	N int
	// Request is the decoded request body.
	Request openai.ChatCompletionRequest
}

// LastUser returns the content of the last user message, or "".
func (c Call) LastUser() string {
	for i := len(c.Request.Messages) - 1; i >= 0; i-- {
		if c.Request.Messages[i].Role == openai.ChatMessageRoleUser {
			return c.Request.Messages[i].Content
		}
	}
	return ""
}

// AssistantTurns is the number of assistant messages in the request: the
// answers a writer has already given (0 for its first answer).
func (c Call) AssistantTurns() int {
	n := 0
	for _, m := range c.Request.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			n++
		}
	}
	return n
}

// Reply is a scripted answer to one chat request.
type Reply struct {
	// Text is the assistant message content.
	Text string
	// FinishReason defaults to "stop".
	FinishReason string
	// PromptTokens and CompletionTokens are reported in usage; when zero they
	// are estimated as bytes/4 of the request messages and of Text.
	PromptTokens, CompletionTokens int
	// OmitUsage leaves usage out (some servers do not report it).
	OmitUsage bool
	// Fault, when set, makes this request misbehave instead of answering.
	Fault Fault
}

// Script decides the reply to each chat request.
type Script func(Call) Reply

// Recorded is one request the server received.
type Recorded struct {
	Method, Path  string
	Authorization string
	Body          []byte
	// Chat is the decoded body for /v1/chat/completions, nil otherwise.
	Chat *openai.ChatCompletionRequest
	// Embed is the decoded body for /v1/embeddings, nil otherwise.
	Embed *EmbeddingRequest
}

// EmbeddingRequest is the body of /v1/embeddings with Input normalised to a
// list of strings.
type EmbeddingRequest struct {
	Model string
	Input []string
}

// Server is a running fake endpoint.
type Server struct {
	// URL is the base URL to configure clients with; it ends in /v1.
	URL string

	srv       *httptest.Server
	key       string
	models    []string
	embedDim  int
	latency   time.Duration
	mu        sync.Mutex
	script    Script
	faults    []Fault
	requests  []Recorded
	noRecord  bool
	chatN     atomic.Int64
	calls     sync.Map // path -> *atomic.Int64
	authFails atomic.Int64
	batchOnce sync.Once
	batch     *batchAPI // the files and batches endpoints (batch.go)
}

// Option configures a Server.
type Option func(*Server)

// WithKey makes the server require "Authorization: Bearer key"; other requests
// get 401 with an OpenAI-style message that echoes the presented key, as real
// providers partly do, so tests can check clients redact it.
func WithKey(key string) Option { return func(s *Server) { s.key = key } }

// WithLatency delays every answer by d (the delay ends early if the client
// goes away).
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// WithModels sets the names /v1/models lists (default "fake-chat", "fake-embed").
func WithModels(names ...string) Option { return func(s *Server) { s.models = names } }

// WithEmbedDim sets the embedding dimension (default 8).
func WithEmbedDim(n int) Option { return func(s *Server) { s.embedDim = n } }

// WithoutRecording keeps no request log (for benchmarks); Calls still counts.
func WithoutRecording() Option { return func(s *Server) { s.noRecord = true } }

// New starts a server closed at the end of the test.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{models: []string{"fake-chat", "fake-embed"}, embedDim: 8}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

// Close shuts the server down, dropping connections still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client returns an *http.Client for the server (loopback only).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Script sets the function that answers chat requests. Without one the server
// answers "echo: <last user message>", or {"echo": "<last user message>"} in
// JSON mode.
func (s *Server) Script(f Script) {
	s.mu.Lock()
	s.script = f
	s.mu.Unlock()
}

// FailNext queues faults applied, in order, to the next requests on any
// endpoint, before the script is consulted.
func (s *Server) FailNext(faults ...Fault) {
	s.mu.Lock()
	s.faults = append(s.faults, faults...)
	s.mu.Unlock()
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Calls returns how many requests reached path (e.g. "/v1/chat/completions"),
// including failed ones.
func (s *Server) Calls(path string) int {
	if v, ok := s.calls.Load(path); ok {
		return int(v.(*atomic.Int64).Load())
	}
	return 0
}

// AuthFailures counts requests rejected for a missing or wrong key.
func (s *Server) AuthFailures() int { return int(s.authFails.Load()) }

func (s *Server) count(path string) {
	v, _ := s.calls.LoadOrStore(path, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (s *Server) nextFault() (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return Fault{}, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.count(r.URL.Path)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body}
	var chat *openai.ChatCompletionRequest
	var emb *EmbeddingRequest
	switch r.URL.Path {
	case "/v1/chat/completions":
		chat = new(openai.ChatCompletionRequest)
		if err := json.Unmarshal(body, chat); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
			return
		}
		rec.Chat = chat
	case "/v1/embeddings":
		emb, err = decodeEmbedding(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		rec.Embed = emb
	}
	if !s.noRecord {
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}

	if s.key != "" && rec.Authorization != "Bearer "+s.key {
		s.authFails.Add(1)
		presented := strings.TrimPrefix(rec.Authorization, "Bearer ")
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided: "+presented+".")
		return
	}
	if isBatchPath(r.URL.Path) {
		s.serveBatchAPI(w, r, body)
		return
	}
	if !s.wait(r, s.latency) {
		return
	}

	var reply Reply
	var n int
	if chat != nil {
		n = int(s.chatN.Add(1))
	}
	fault, queued := s.nextFault()
	if !queued && chat != nil {
		reply = s.reply(Call{N: n, Request: *chat})
		fault = reply.Fault
	}
	if fault.Kind == Stall {
		d := fault.Stall
		if d == 0 {
			d = 30 * time.Second
		}
		if !s.wait(r, d) {
			return
		}
		fault = Fault{}
		if queued && chat != nil { // a queued stall delays the normal answer
			reply = s.reply(Call{N: n, Request: *chat})
			fault = reply.Fault
		}
	}

	switch fault.Kind {
	case Status:
		code := fault.Status
		if code == 0 {
			code = http.StatusInternalServerError
		}
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		typ := "server_error"
		if code == http.StatusTooManyRequests {
			typ = "rate_limit_exceeded"
		}
		writeError(w, code, typ, fmt.Sprintf("injected %d", code))
		return
	case Drop:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("llmtest: response writer cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case Body:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fault.Body)
		return
	}

	switch r.URL.Path {
	case "/v1/models":
		s.serveModels(w)
	case "/v1/embeddings":
		s.serveEmbeddings(w, emb, fault.Kind)
	case "/v1/chat/completions":
		if chat.Stream && fault.Kind == NoFault {
			s.serveStream(w, chat, reply)
			return
		}
		s.serveChat(w, chat, reply, fault.Kind)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.URL.Path)
	}
}

// wait sleeps d unless the client goes away first; it reports whether to go on.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) reply(c Call) Reply {
	s.mu.Lock()
	f := s.script
	s.mu.Unlock()
	if f != nil {
		return f(c)
	}
	if c.Request.ResponseFormat != nil && c.Request.ResponseFormat.Type == openai.ChatCompletionResponseFormatTypeJSONObject {
		b, _ := json.Marshal(map[string]string{"echo": c.LastUser()})
		return Reply{Text: string(b)}
	}
	return Reply{Text: "echo: " + c.LastUser()}
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

func writeJSON(w http.ResponseWriter, v any, truncate bool) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if truncate {
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func estimateTokens(s string) int { return (len(s) + 3) / 4 }

func usageFor(chat *openai.ChatCompletionRequest, rep Reply) openai.Usage {
	p, c := rep.PromptTokens, rep.CompletionTokens
	if p == 0 {
		for _, m := range chat.Messages {
			p += estimateTokens(m.Content) + 4
		}
	}
	if c == 0 {
		c = estimateTokens(rep.Text)
	}
	return openai.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

func (s *Server) serveChat(w http.ResponseWriter, chat *openai.ChatCompletionRequest, rep Reply, kind FaultKind) {
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
	}
	resp := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": chat.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": rep.Text},
			"finish_reason": finish,
		}},
	}
	if kind == EmptyChoices {
		resp["choices"] = []any{}
	}
	if !rep.OmitUsage {
		resp["usage"] = usageFor(chat, rep)
	}
	writeJSON(w, resp, kind == Truncated)
}

// serveStream writes the reply as SSE chunks of a few words each, a final
// chunk with the finish reason, a usage chunk when the client asked for it
// (stream_options.include_usage), then [DONE].
func (s *Server) serveStream(w http.ResponseWriter, chat *openai.ChatCompletionRequest, rep Reply) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": chat.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, piece := range splitChunks(rep.Text, 16) {
		send(chunk(map[string]any{"content": piece}, nil))
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
	}
	send(chunk(map[string]any{}, finish))
	if chat.StreamOptions != nil && chat.StreamOptions.IncludeUsage && !rep.OmitUsage {
		send(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": chat.Model,
			"choices": []any{}, "usage": usageFor(chat, rep),
		})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// splitChunks cuts s into pieces of at most n bytes without splitting UTF-8
// sequences.
func splitChunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && i > 0 && s[i]&0xC0 == 0x80 {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func (s *Server) serveModels(w http.ResponseWriter) {
	data := make([]map[string]any, len(s.models))
	for i, m := range s.models {
		data[i] = map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "llmtest"}
	}
	writeJSON(w, map[string]any{"object": "list", "data": data}, false)
}

func decodeEmbedding(body []byte) (*EmbeddingRequest, error) {
	var raw struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	req := &EmbeddingRequest{Model: raw.Model}
	var one string
	if err := json.Unmarshal(raw.Input, &one); err == nil {
		req.Input = []string{one}
		return req, nil
	}
	if err := json.Unmarshal(raw.Input, &req.Input); err != nil {
		return nil, fmt.Errorf("input must be a string or a list of strings: %w", err)
	}
	return req, nil
}

// Vector is the embedding the server returns for text: a deterministic,
// L2-normalised function of the text, so tests can compare results.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", i, text)
		x := float64(h.Sum64()%2001)/1000 - 1
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, req *EmbeddingRequest, kind FaultKind) {
	data := make([]map[string]any, 0, len(req.Input))
	tokens := 0
	if kind != EmptyChoices {
		for i, in := range req.Input {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": Vector(in, s.embedDim)})
			tokens += estimateTokens(in)
		}
	}
	writeJSON(w, map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	}, kind == Truncated)
}
