package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Batch mode sends a stage's chat requests through a provider's batch API
// instead of one HTTP call each: OpenAI's /v1/files + /v1/batches (about half
// the price, much higher limits, answers within the completion window), or a
// directory that an offline runner such as vLLM's run_batch reads and writes.
//
// A caller of Chat does not see the difference: requests that arrive while
// others wait are collected until no new one comes for BatchWindow (or
// BatchSize are pending), written as one batch input file in the OpenAI batch
// format, submitted, polled, and each answer returned to its caller and
// stored in the same request cache as a live answer. A request's batch is
// recorded in the run store before anything is submitted and again once the
// batch exists, so a process killed while a batch is in flight resumes
// polling that batch on the next run and never submits it twice. Requests a
// batch did not answer (expired, failed lines) fall back to live calls.

// batchBucket holds, per request key, the batch that carries it.
const batchBucket = "llm.batch"

// batchRef is what the store records for a request in a batch.
type batchRef struct {
	API   string `json:"api"`             // "openai" or "dir"
	File  string `json:"file"`            // uploaded input file id, or input path
	Batch string `json:"batch,omitempty"` // batch id (openai) or the input path (dir)
}

// batchLine is one line of a batch input file (OpenAI and vLLM format).
type batchLine struct {
	CustomID string                       `json:"custom_id"`
	Method   string                       `json:"method"`
	URL      string                       `json:"url"`
	Body     openai.ChatCompletionRequest `json:"body"`
}

// batchOutLine is one line of a batch output or error file.
type batchOutLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int                           `json:"status_code"`
		Body       openai.ChatCompletionResponse `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// batchStatus is a batch's progress as the API reports it.
type batchStatus struct {
	Done   bool     // no more answers will come (completed, expired, failed, cancelled)
	State  string   // the API's word for it
	Output [][]byte // output and error files' contents once Done
}

// batchAPI is where batches go: the OpenAI batch endpoints or a directory.
type batchAPI interface {
	name() string
	// upload stores the input file and returns its id.
	upload(ctx context.Context, name string, data []byte) (string, error)
	// create starts a batch over an uploaded file and returns its id.
	create(ctx context.Context, fileID string) (string, error)
	// find returns the batch created over fileID, if any (a crash between
	// create and recording its id).
	find(ctx context.Context, fileID string) (string, error)
	status(ctx context.Context, batchID string) (batchStatus, error)
}

// errBatchMissing means the batch ended without an answer for the request;
// the caller falls back to a live call.
var errBatchMissing = errors.New("llm: batch gave no answer")

// batcher collects requests into batches and hands out their answers. It is
// safe for concurrent use.
type batcher struct {
	c   *Client
	api batchAPI

	mu      sync.Mutex
	queue   []*batchReq
	timer   *time.Timer
	watches map[string]*batchWatch // batch id -> poller
	seq     int
}

type batchReq struct {
	key  string
	body openai.ChatCompletionRequest
	// batch receives the id of the batch that carries the request, or an
	// error if submitting failed.
	batch chan batchSubmit
}

type batchSubmit struct {
	id  string
	err error
}

// batchWatch polls one batch until it is done; done is closed then.
type batchWatch struct {
	done    chan struct{}
	answers map[string]openai.ChatCompletionResponse
	failed  map[string]string // custom_id -> error text
	err     error             // polling failed for good
	state   string
}

func newBatcher(c *Client) (*batcher, error) {
	b := &batcher{c: c, watches: map[string]*batchWatch{}}
	switch {
	case c.cfg.BatchDir != "":
		b.api = &dirBatches{dir: c.cfg.BatchDir}
	default:
		b.api = &openaiBatches{oa: c.oa}
	}
	if c.cache == nil {
		return nil, fmt.Errorf("llm %s: batch mode needs the run store (to resume in-flight batches)", c.cfg.Stage)
	}
	return b, nil
}

// chat returns the batch answer for a request (key is its cache key).
func (b *batcher) chat(ctx context.Context, key string, body openai.ChatCompletionRequest) (Response, error) {
	id, err := b.batchOf(ctx, key, body)
	if err != nil {
		return Response{}, err
	}
	w := b.watch(id)
	select {
	case <-w.done:
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
	if w.err != nil {
		return Response{}, w.err
	}
	out, ok := w.answers[key]
	if !ok || len(out.Choices) == 0 {
		return Response{}, fmt.Errorf("%w (batch %s %s: %s)", errBatchMissing, id, w.state, cmpOr(w.failed[key], "no line"))
	}
	resp := Response{Text: out.Choices[0].Message.Content, FinishReason: string(out.Choices[0].FinishReason),
		Model: out.Model, PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	fillUsage(&resp, body)
	return resp, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// batchOf returns the batch carrying the request: the one the store names
// (a resumed run) or a new one it joins.
func (b *batcher) batchOf(ctx context.Context, key string, body openai.ChatCompletionRequest) (string, error) {
	raw, ok, err := b.c.cache.Get(ctx, batchBucket, key)
	if err != nil {
		return "", fmt.Errorf("llm %s: batch state: %w", b.c.cfg.Stage, err)
	}
	var ref batchRef
	if ok && json.Unmarshal(raw, &ref) == nil && ref.API == b.api.name() {
		if ref.Batch == "" { // killed between upload and create
			if ref.Batch, err = b.api.find(ctx, ref.File); err != nil {
				return "", fmt.Errorf("llm %s: find batch of %s: %w", b.c.cfg.Stage, ref.File, err)
			}
		}
		if ref.Batch != "" {
			return ref.Batch, nil
		}
	}
	r := &batchReq{key: key, body: body, batch: make(chan batchSubmit, 1)}
	b.enqueue(r)
	select {
	case s := <-r.batch:
		return s.id, s.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (b *batcher) enqueue(r *batchReq) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, r)
	if len(b.queue) >= b.c.cfg.BatchSize {
		q := b.queue
		b.queue = nil
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
		go b.submit(q)
		return
	}
	// Wait for the other workers' requests: submit after a quiet window.
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(b.c.cfg.BatchWindow, func() {
		b.mu.Lock()
		q := b.queue
		b.queue, b.timer = nil, nil
		b.mu.Unlock()
		if len(q) > 0 {
			b.submit(q)
		}
	})
}

// submit writes q as one batch input file, records it, and creates the batch.
// It runs detached from any one caller's context: the batch serves them all.
func (b *batcher) submit(q []*batchReq) {
	ctx := context.Background()
	fail := func(err error) {
		for _, r := range q {
			r.batch <- batchSubmit{err: err}
		}
	}
	// One line per distinct request: identical prompts share an answer.
	var buf bytes.Buffer
	seen := map[string]bool{}
	for _, r := range q {
		if seen[r.key] {
			continue
		}
		seen[r.key] = true
		line, _ := json.Marshal(batchLine{CustomID: r.key, Method: http.MethodPost, URL: "/v1/chat/completions", Body: r.body})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	b.mu.Lock()
	b.seq++
	name := fmt.Sprintf("codefeedback-%s-%d-%d.jsonl", b.c.cfg.Stage, time.Now().UnixNano(), b.seq)
	b.mu.Unlock()
	fileID, err := b.api.upload(ctx, name, buf.Bytes())
	if err != nil {
		fail(fmt.Errorf("llm %s: upload batch input: %w", b.c.cfg.Stage, err))
		return
	}
	// Recorded before create: a crash after create finds the batch by file.
	if err := b.record(ctx, seen, batchRef{API: b.api.name(), File: fileID}); err != nil {
		fail(err)
		return
	}
	id, err := b.api.create(ctx, fileID)
	if err != nil {
		fail(fmt.Errorf("llm %s: create batch: %w", b.c.cfg.Stage, err))
		return
	}
	if err := b.record(ctx, seen, batchRef{API: b.api.name(), File: fileID, Batch: id}); err != nil {
		fail(err)
		return
	}
	b.c.log.Info("llm batch submitted", "batch", id, "requests", len(seen), "api", b.api.name())
	b.c.acct.record(b.c.cfg.Stage, Usage{Batches: 1})
	for _, r := range q {
		r.batch <- batchSubmit{id: id}
	}
}

func (b *batcher) record(ctx context.Context, keys map[string]bool, ref batchRef) error {
	raw, _ := json.Marshal(ref)
	for k := range keys {
		if err := b.c.cache.Put(ctx, batchBucket, k, raw); err != nil {
			return fmt.Errorf("llm %s: record batch: %w", b.c.cfg.Stage, err)
		}
	}
	return nil
}

// watch returns the poller of batch id, starting it on first use.
func (b *batcher) watch(id string) *batchWatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.watches[id]; ok {
		return w
	}
	w := &batchWatch{done: make(chan struct{}), answers: map[string]openai.ChatCompletionResponse{}, failed: map[string]string{}}
	b.watches[id] = w
	go b.poll(id, w)
	return w
}

func (b *batcher) poll(id string, w *batchWatch) {
	defer close(w.done)
	ctx := context.Background()
	errs := 0
	for {
		st, err := b.api.status(ctx, id)
		if err != nil {
			// Polling is cheap to repeat; a few failures in a row end it and
			// the callers fall back to live requests.
			if errs++; errs >= 5 {
				w.err = fmt.Errorf("llm %s: poll batch %s: %w", b.c.cfg.Stage, id, err)
				return
			}
		} else if errs = 0; st.Done {
			w.state = st.State
			for _, f := range st.Output {
				parseBatchOutput(f, w)
			}
			b.c.log.Info("llm batch done", "batch", id, "state", st.State, "answers", len(w.answers), "failed", len(w.failed))
			return
		}
		time.Sleep(b.c.cfg.BatchPoll)
	}
}

func parseBatchOutput(data []byte, w *batchWatch) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var l batchOutLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.CustomID == "" {
			continue
		}
		switch {
		case l.Error != nil:
			w.failed[l.CustomID] = l.Error.Code + ": " + l.Error.Message
		case l.Response == nil || l.Response.StatusCode != http.StatusOK:
			code := 0
			if l.Response != nil {
				code = l.Response.StatusCode
			}
			w.failed[l.CustomID] = fmt.Sprintf("status %d", code)
		default:
			w.answers[l.CustomID] = l.Response.Body
		}
	}
}

// openaiBatches is the OpenAI batch API through go-openai.
type openaiBatches struct{ oa *openai.Client }

func (openaiBatches) name() string { return "openai" }

func (o *openaiBatches) upload(ctx context.Context, name string, data []byte) (string, error) {
	f, err := o.oa.CreateFileBytes(ctx, openai.FileBytesRequest{Name: name, Bytes: data, Purpose: openai.PurposeBatch})
	return f.ID, err
}

func (o *openaiBatches) create(ctx context.Context, fileID string) (string, error) {
	b, err := o.oa.CreateBatch(ctx, openai.CreateBatchRequest{InputFileID: fileID,
		Endpoint: openai.BatchEndpointChatCompletions, CompletionWindow: "24h",
		Metadata: map[string]any{"created_by": "codefeedback"}})
	return b.ID, err
}

func (o *openaiBatches) find(ctx context.Context, fileID string) (string, error) {
	var after *string
	for range 100 { // pages of 100: the newest batches come first
		limit := 100
		page, err := o.oa.ListBatch(ctx, after, &limit)
		if err != nil {
			return "", err
		}
		for _, b := range page.Data {
			if b.InputFileID == fileID {
				return b.ID, nil
			}
		}
		if !page.HasMore || page.LastID == "" {
			return "", nil
		}
		after = &page.LastID
	}
	return "", nil
}

func (o *openaiBatches) status(ctx context.Context, id string) (batchStatus, error) {
	b, err := o.oa.RetrieveBatch(ctx, id)
	if err != nil {
		return batchStatus{}, err
	}
	st := batchStatus{State: b.Status}
	switch b.Status {
	case "completed", "expired", "failed", "cancelled":
		st.Done = true
	default:
		return st, nil
	}
	for _, f := range []*string{b.OutputFileID, b.ErrorFileID} {
		if f == nil || *f == "" {
			continue
		}
		raw, err := o.oa.GetFileContent(ctx, *f)
		if err != nil {
			return batchStatus{}, fmt.Errorf("read batch file %s: %w", *f, err)
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(raw)
		raw.Close()
		if err != nil {
			return batchStatus{}, fmt.Errorf("read batch file %s: %w", *f, err)
		}
		st.Output = append(st.Output, buf.Bytes())
	}
	return st, nil
}

// dirBatches hands batches to an offline runner through a directory: the
// input is written as DIR/NAME.jsonl; the batch is done when the runner's
// DIR/NAME.output.jsonl has a line for every request (vLLM: python -m vllm.entrypoints.openai.run_batch
// -i DIR/NAME.jsonl -o DIR/NAME.output.jsonl --model M). A DIR/NAME.expired
// file ends a batch that will not be answered in full (the requests without
// a line then run live).
type dirBatches struct{ dir string }

func (dirBatches) name() string { return "dir" }

func (d *dirBatches) upload(_ context.Context, name string, data []byte) (string, error) {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(d.dir, name)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

func (d *dirBatches) create(_ context.Context, fileID string) (string, error) { return fileID, nil }

func (d *dirBatches) find(_ context.Context, fileID string) (string, error) { return fileID, nil }

func (d *dirBatches) status(_ context.Context, id string) (batchStatus, error) {
	base := strings.TrimSuffix(id, ".jsonl")
	out, outErr := os.ReadFile(base + ".output.jsonl")
	if outErr == nil {
		// A runner that writes its output in place can be read half way;
		// the batch is done only when every request has its line. Reason:
		// a partial read would send the rest live, or lose them.
		in, err := os.ReadFile(id)
		if err != nil {
			return batchStatus{}, fmt.Errorf("read batch input %s: %w", id, err)
		}
		want, got := batchIDs(in), batchIDs(out)
		missing := 0
		for k := range want {
			if !got[k] {
				missing++
			}
		}
		if missing == 0 {
			return batchStatus{Done: true, State: "completed", Output: [][]byte{out}}, nil
		}
		if _, err := os.Stat(base + ".expired"); err == nil {
			return batchStatus{Done: true, State: "expired", Output: [][]byte{out}}, nil
		}
		return batchStatus{State: fmt.Sprintf("%s answers %d of %d requests; waiting for the rest (or %s.expired)",
			filepath.Base(base)+".output.jsonl", len(want)-missing, len(want), filepath.Base(base))}, nil
	}
	if _, err := os.Stat(base + ".expired"); err == nil {
		return batchStatus{Done: true, State: "expired"}, nil
	}
	return batchStatus{State: "waiting for " + filepath.Base(base) + ".output.jsonl"}, nil
}

// batchIDs is the set of custom_ids on the complete lines of a batch file;
// a last line without its newline may still be being written.
func batchIDs(data []byte) map[string]bool {
	ids := map[string]bool{}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		return ids
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var l struct {
			CustomID string `json:"custom_id"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.CustomID != "" {
			ids[l.CustomID] = true
		}
	}
	return ids
}

// BatchPending lists the batch input files in dir that have no output yet:
// what a user carries to an offline runner.
func BatchPending(dir string) ([]string, error) {
	ins, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ins {
		if strings.HasSuffix(p, ".output.jsonl") {
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(p, ".jsonl") + ".output.jsonl"); err == nil {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}
