// Package serve puts an executor pool behind HTTP, as a reward server for
// RL trainers: POST /run_code speaks SandboxFusion's request and response
// (what verl's sandbox_fusion reward and similar clients send), POST
// /submit judges code against tests (the ground truth `export --to rl`
// writes), GET /health and GET /metrics. Every run has the isolation and
// limits of any other run of the pool; limits a request asks above the
// server's maxima are clamped and the response says so.
package serve

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/schema"
)

// Config configures a Server. Zero fields take the defaults.
type Config struct {
	Exec executors.Executor
	// Concurrency bounds the runs in flight (default 4; set it to the
	// pool's size so the pool stays busy); further requests queue.
	Concurrency int
	// QueueTimeout, when positive, answers 503 to a request that waited
	// that long for a slot.
	QueueTimeout time.Duration
	// MaxBody bounds a request body (default 16 MiB); larger ones get 413.
	MaxBody int64
	// Maxima a request may ask for; above them the limit is clamped.
	MaxRunTimeout     time.Duration // default 30s
	MaxCompileTimeout time.Duration // default 60s
	MaxMemoryMB       int64         // default 2048
	// Defaults for a request that names no limit (SandboxFusion's own
	// defaults: 10 s each; memory -1 means the server's default).
	RunTimeout, CompileTimeout time.Duration
	MemoryMB                   int64 // default 512
	// APIKey, when set, must come as "Authorization: Bearer KEY" or
	// "X-API-Key: KEY" on every endpoint but /health.
	APIKey string
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 16 << 20
	}
	def(&c.MaxRunTimeout, 30*time.Second)
	def(&c.MaxCompileTimeout, 60*time.Second)
	def(&c.RunTimeout, 10*time.Second)
	def(&c.CompileTimeout, 10*time.Second)
	if c.MaxMemoryMB <= 0 {
		c.MaxMemoryMB = 2048
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = 512
	}
	c.RunTimeout = min(c.RunTimeout, c.MaxRunTimeout)
	c.CompileTimeout = min(c.CompileTimeout, c.MaxCompileTimeout)
	c.MemoryMB = min(c.MemoryMB, c.MaxMemoryMB)
	return c
}

// Server serves one executor. Safe for concurrent use.
type Server struct {
	cfg   Config
	slots chan struct{}
	m     metrics
}

// New returns a server for cfg.Exec.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	return &Server{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency)}
}

// Handler routes the endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /run_code", s.auth(s.runCode))
	mux.HandleFunc("POST /submit", s.auth(s.submit))
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("pong")) }) // SandboxFusion's liveness probe
	mux.HandleFunc("GET /metrics", s.auth(s.metrics))
	return mux
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.APIKey == "" {
		return h
	}
	want := []byte(s.cfg.APIKey)
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-API-Key")
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			got = b
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			s.m.unauthorized.Add(1)
			httpError(w, http.StatusUnauthorized, "missing or wrong API key")
			return
		}
		h(w, r)
	}
}

// errorBody is the body of a refused request.
type errorBody struct {
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{msg})
}

// badRequest counts and answers a request this server refuses (400).
func (s *Server) badRequest(w http.ResponseWriter, msg string) {
	s.m.badRequest.Add(1)
	httpError(w, http.StatusBadRequest, msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body under the size limit; false when it answered
// the request (413 or 400).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.m.tooLarge.Add(1)
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", s.cfg.MaxBody))
			return false
		}
		s.badRequest(w, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// acquire waits for a run slot while the client waits; false when it
// answered (503 after QueueTimeout) or the client went away.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) bool {
	start := time.Now()
	ctx := r.Context()
	if s.cfg.QueueTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.QueueTimeout)
		defer cancel()
	}
	s.m.queued.Add(1)
	defer s.m.queued.Add(-1)
	select {
	case s.slots <- struct{}{}:
		s.m.queueWaitNS.Add(int64(time.Since(start)))
		s.m.inFlight.Add(1)
		return true
	case <-ctx.Done():
		if r.Context().Err() != nil {
			s.m.abandoned.Add(1)
			return false // nobody to answer
		}
		s.m.busy.Add(1)
		httpError(w, http.StatusServiceUnavailable, "all sandboxes busy; retry")
		return false
	}
}

// gone counts a run whose client went away: cancelled when the run was
// stopped by it, abandoned when the run ended on its own first.
func (s *Server) gone(err error) {
	if errors.Is(err, context.Canceled) {
		s.m.cancelled.Add(1)
	} else {
		s.m.abandoned.Add(1)
	}
}

func (s *Server) release() {
	s.m.inFlight.Add(-1)
	<-s.slots
}

// inSlot runs fn (a run of the request) in a run slot, counted and timed
// as a run; false when the request needs no answer: the queue answered
// (503), or the client went away (fn's error tells how).
func (s *Server) inSlot(w http.ResponseWriter, r *http.Request, fn func(context.Context) error) bool {
	if !s.acquire(w, r) {
		return false
	}
	start := time.Now()
	err := fn(r.Context())
	s.release()
	s.m.runs.Add(1)
	s.m.runNS.Add(int64(time.Since(start)))
	if r.Context().Err() != nil {
		s.gone(err)
		return false
	}
	return true
}

// RunCodeRequest is SandboxFusion's /run_code request.
type RunCodeRequest struct {
	Code           string            `json:"code"`
	Language       string            `json:"language"`
	CompileTimeout float64           `json:"compile_timeout"` // seconds
	RunTimeout     float64           `json:"run_timeout"`     // seconds
	MemoryLimitMB  int64             `json:"memory_limit_MB"` // -1: the server's default
	Stdin          *string           `json:"stdin"`
	Files          map[string]string `json:"files"` // path -> base64
	FetchFiles     []string          `json:"fetch_files"`
}

// CommandRunResult is SandboxFusion's result of one step.
type CommandRunResult struct {
	Status        string  `json:"status"` // Finished, TimeLimitExceeded, Error
	ExecutionTime float64 `json:"execution_time"`
	ReturnCode    *int    `json:"return_code"`
	Stdout        string  `json:"stdout"`
	Stderr        string  `json:"stderr"`
}

// RunCodeResponse is SandboxFusion's /run_code response, plus Notes (the
// limits this server clamped) that its clients ignore.
type RunCodeResponse struct {
	Status        string            `json:"status"` // Success, Failed, SandboxError
	Message       string            `json:"message"`
	CompileResult *CommandRunResult `json:"compile_result"`
	RunResult     *CommandRunResult `json:"run_result"`
	Files         map[string]string `json:"files"`
	Notes         []string          `json:"notes,omitempty"`
}

// Statuses of a response and of a step, as SandboxFusion names them.
const (
	StatusSuccess      = "Success"
	StatusFailed       = "Failed"
	StatusSandboxError = "SandboxError"

	StepFinished = "Finished"
	StepTimeout  = "TimeLimitExceeded"
	StepError    = "Error"
)

// limits turns requested seconds and megabytes into run limits, clamped
// to the server's maxima, with a note for each clamp.
func (s *Server) limits(runS, compileS float64, memMB int64) (run, compile executors.Limits, notes []string) {
	pick := func(name string, asked float64, def, max time.Duration) time.Duration {
		if asked <= 0 {
			return def
		}
		d := time.Duration(asked * float64(time.Second))
		if d > max {
			notes = append(notes, fmt.Sprintf("%s %gs clamped to the server's maximum %gs", name, asked, max.Seconds()))
			return max
		}
		return d
	}
	run.Timeout = pick("run_timeout", runS, s.cfg.RunTimeout, s.cfg.MaxRunTimeout)
	compile.Timeout = pick("compile_timeout", compileS, s.cfg.CompileTimeout, s.cfg.MaxCompileTimeout)
	mem := s.cfg.MemoryMB
	if memMB > 0 {
		mem = memMB
		if mem > s.cfg.MaxMemoryMB {
			notes = append(notes, fmt.Sprintf("memory_limit_MB %d clamped to the server's maximum %d", memMB, s.cfg.MaxMemoryMB))
			mem = s.cfg.MaxMemoryMB
		}
	}
	run.MemoryBytes = mem << 20
	// A busy loop must end by the wall clock, not race it on CPU time.
	run.CPUTime = run.Timeout + time.Second
	return run, compile, notes
}

// language maps SandboxFusion's language names (python, nodejs, cpp, go,
// java, rust, bash, typescript, php, lua, ruby, ...) to the sandbox's.
func language(name string) (executors.Language, bool) {
	return executors.ParseLanguage(name)
}

func (s *Server) runCode(w http.ResponseWriter, r *http.Request) {
	s.m.requests.Add(1)
	var req RunCodeRequest
	if !s.decode(w, r, &req) {
		return
	}
	lang, ok := language(req.Language)
	if !ok {
		s.badRequest(w, fmt.Sprintf("unknown language %q (this sandbox runs %s)", req.Language, executors.LanguageNames()))
		return
	}
	if len(req.FetchFiles) > 0 {
		// The executor drops a run's scratch directory with the run.
		s.badRequest(w, "fetch_files is not supported by this server: a run's files are not kept")
		return
	}
	files := map[string][]byte{}
	for name, b64 := range req.Files {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			s.badRequest(w, fmt.Sprintf("files[%q]: not base64: %v", name, err))
			return
		}
		files[name] = b
	}
	run, compile, notes := s.limits(req.RunTimeout, req.CompileTimeout, req.MemoryLimitMB)
	xr := executors.Request{Language: lang, Code: req.Code, Files: files, Limits: run, CompileLimits: compile}
	if req.Stdin != nil {
		xr.Stdin = *req.Stdin
	}
	if err := xr.Validate(); err != nil {
		s.badRequest(w, err.Error())
		return
	}
	var res executors.Result
	var err error
	if !s.inSlot(w, r, func(ctx context.Context) error {
		res, err = s.cfg.Exec.Run(ctx, xr)
		return err
	}) {
		return // answered, or nobody to answer
	}
	resp := RunCodeResponseOf(lang, res, err)
	resp.Notes = notes
	s.m.count(resp.Status)
	writeJSON(w, resp)
}

// RunCodeResponseOf renders a run's result (or the sandbox's error) as
// SandboxFusion does: a compiled language gets a compile_result; a failed
// compile has no run_result; a timeout is TimeLimitExceeded with no return
// code; a non-zero exit or a timeout makes the request Failed.
func RunCodeResponseOf(lang executors.Language, res executors.Result, err error) RunCodeResponse {
	resp := RunCodeResponse{Files: map[string]string{}}
	if err != nil {
		resp.Status, resp.Message = StatusSandboxError, err.Error()
		return resp
	}
	code := res.ExitCode
	step := &CommandRunResult{Status: StepFinished, ExecutionTime: res.Duration.Seconds(), ReturnCode: &code, Stdout: res.Stdout, Stderr: res.Stderr}
	if res.TimedOut {
		step.Status, step.ReturnCode = StepTimeout, nil
	}
	if lang.Compiled() {
		zero := 0
		cr := &CommandRunResult{Status: StepFinished, ExecutionTime: res.CompileDuration.Seconds(), ReturnCode: &zero}
		if res.Phase == "compile" {
			cr.ReturnCode, cr.Stdout, cr.Stderr = &code, res.Stdout, res.Stderr
			if res.TimedOut {
				cr.Status, cr.ReturnCode = StepTimeout, nil
			}
			resp.CompileResult = cr
			resp.Status = StatusFailed
			return resp
		}
		resp.CompileResult = cr
	}
	resp.RunResult = step
	resp.Status = StatusSuccess
	if !res.OK() {
		resp.Status = StatusFailed
	}
	return resp
}

// SubmitRequest judges code against tests: a GroundTruth (what `export
// --to rl` writes in reward_model.ground_truth) plus the code, given as
// code or as a model's whole completion (its last code block in the
// language, else its last code block, is judged).
type SubmitRequest struct {
	schema.GroundTruth
	Code       string `json:"code"`
	Completion string `json:"completion"`
}

// SubmitResponse is the verdict. Reward is passed_count/total (0 when
// the code did not load); Passed needs every test.
type SubmitResponse struct {
	Passed      bool                 `json:"passed"`
	Reward      float64              `json:"reward"`
	Total       int                  `json:"total"`
	PassedCount int                  `json:"passed_count"`
	Outcome     string               `json:"outcome"` // pass, wrong_answer, timeout, error or an exception name
	Feedback    string               `json:"feedback"`
	Cases       []harness.CaseResult `json:"cases"`
	Execution   schema.Execution     `json:"execution"` // the record verify re-runs
	Notes       []string             `json:"notes,omitempty"`
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request) {
	s.m.submits.Add(1)
	var req SubmitRequest
	if !s.decode(w, r, &req) {
		return
	}
	lang, ok := language(req.Language)
	if req.Language == "" {
		lang, ok = executors.Python, true
	}
	if !ok || !harness.Judged(lang) {
		s.badRequest(w, fmt.Sprintf("no test judge for language %q", req.Language))
		return
	}
	if len(req.Tests) == 0 {
		s.badRequest(w, "tests: want at least one test")
		return
	}
	code := req.Code
	if code == "" {
		code = CodeOf(req.Completion, lang)
	}
	run, _, notes := s.limits(req.TimeoutS, 0, req.MemoryMB)
	opts := harness.Options{Timeout: run.Timeout, Limits: executors.Limits{MemoryBytes: run.MemoryBytes}}
	if req.CaseTimeout > 0 {
		opts.CaseTimeout = min(time.Duration(req.CaseTimeout*float64(time.Second)), run.Timeout)
	}
	p := schema.Problem{Query: schema.Query{ID: "submit"}, Tests: req.Tests, EntryPoint: req.EntryPoint, Setup: req.Setup, TestImport: req.TestImport, Prompt: req.Prompt}
	if strings.TrimSpace(code) == "" {
		// Nothing to run is a failed attempt, not a bad request: a
		// policy's completion may hold no code.
		writeJSON(w, SubmitResponse{Total: len(req.Tests), Outcome: harness.OutcomeError, Feedback: "no code to judge", Notes: notes})
		s.m.count(StatusFailed)
		return
	}
	var v harness.Verdict
	var err error
	if !s.inSlot(w, r, func(ctx context.Context) error {
		v, err = harness.JudgeIn(ctx, s.cfg.Exec, lang, p, code, opts)
		return err
	}) {
		return
	}
	if err != nil {
		s.m.count(StatusSandboxError)
		httpError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	resp := SubmitResponse{Passed: v.Passed, Total: v.Total, PassedCount: v.PassedCount, Outcome: v.Outcome(), Feedback: v.Feedback,
		Cases: v.Cases, Execution: v.Execution(), Notes: notes}
	if v.Total > 0 {
		resp.Reward = float64(v.PassedCount) / float64(v.Total)
	}
	if v.Passed {
		s.m.count(StatusSuccess)
	} else {
		s.m.count(StatusFailed)
	}
	writeJSON(w, resp)
}

// CodeOf is the code of a completion: its last fenced block in lang, else
// its last fenced block, else the whole text when it has no fence.
func CodeOf(completion string, lang executors.Language) string {
	blocks := fencedBlocks(completion)
	if len(blocks) == 0 {
		return completion
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		if l, ok := executors.ParseLanguage(blocks[i].lang); ok && l == lang {
			return blocks[i].code
		}
	}
	return blocks[len(blocks)-1].code
}

type block struct{ lang, code string }

func fencedBlocks(text string) []block {
	var out []block
	var cur *block
	var body []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			if cur != nil {
				body = append(body, line)
			}
			continue
		}
		if cur == nil {
			cur = &block{lang: strings.TrimSpace(t[3:])}
			body = body[:0]
			continue
		}
		cur.code = strings.Join(body, "\n") + "\n"
		out = append(out, *cur)
		cur = nil
	}
	return out
}

// Health is GET /health's body.
type Health struct {
	Status      string `json:"status"`
	Driver      string `json:"driver"`
	Concurrency int    `json:"concurrency"`
	InFlight    int64  `json:"in_flight"`
	Queued      int64  `json:"queued"`
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, Health{Status: "ok", Driver: s.cfg.Exec.Info().Driver, Concurrency: s.cfg.Concurrency, InFlight: s.m.inFlight.Load(), Queued: s.m.queued.Load()})
}

type metrics struct {
	requests, submits, runs, runNS, queueWaitNS atomic.Int64
	inFlight, queued                            atomic.Int64
	success, failed, sandboxError               atomic.Int64
	badRequest, tooLarge, unauthorized, busy    atomic.Int64
	cancelled, abandoned                        atomic.Int64
}

func (m *metrics) count(status string) {
	switch status {
	case StatusSuccess:
		m.success.Add(1)
	case StatusFailed:
		m.failed.Add(1)
	default:
		m.sandboxError.Add(1)
	}
}

// metrics writes the counters in Prometheus's text format.
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	m := &s.m
	vals := map[string]float64{
		"codefeedback_serve_run_code_requests_total":              float64(m.requests.Load()),
		"codefeedback_serve_submit_requests_total":                float64(m.submits.Load()),
		"codefeedback_serve_runs_total":                           float64(m.runs.Load()),
		"codefeedback_serve_run_seconds_total":                    float64(m.runNS.Load()) / 1e9,
		"codefeedback_serve_queue_wait_seconds_total":             float64(m.queueWaitNS.Load()) / 1e9,
		"codefeedback_serve_in_flight":                            float64(m.inFlight.Load()),
		"codefeedback_serve_queued":                               float64(m.queued.Load()),
		"codefeedback_serve_concurrency":                          float64(s.cfg.Concurrency),
		`codefeedback_serve_results_total{status="Success"}`:      float64(m.success.Load()),
		`codefeedback_serve_results_total{status="Failed"}`:       float64(m.failed.Load()),
		`codefeedback_serve_results_total{status="SandboxError"}`: float64(m.sandboxError.Load()),
		`codefeedback_serve_refused_total{reason="bad_request"}`:  float64(m.badRequest.Load()),
		`codefeedback_serve_refused_total{reason="too_large"}`:    float64(m.tooLarge.Load()),
		`codefeedback_serve_refused_total{reason="unauthorized"}`: float64(m.unauthorized.Load()),
		`codefeedback_serve_refused_total{reason="busy"}`:         float64(m.busy.Load()),
		"codefeedback_serve_cancelled_total":                      float64(m.cancelled.Load()),
		"codefeedback_serve_abandoned_total":                      float64(m.abandoned.Load()),
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, k := range keys {
		fmt.Fprintf(w, "%s %g\n", k, vals[k])
	}
}
