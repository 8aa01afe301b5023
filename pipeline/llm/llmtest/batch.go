package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The OpenAI files and batches endpoints, as the real API speaks them:
// POST /v1/files (multipart, purpose=batch), GET /v1/files/{id}/content,
// POST /v1/batches, GET /v1/batches/{id}, GET /v1/batches (newest first),
// POST /v1/batches/{id}/cancel. A batch answers each line with the same
// Script as live requests, so a batch answer equals the live one. It moves
// validating -> in_progress -> completed over BatchPolls retrievals; with
// ExpireBatches it ends "expired" with only the first half of its lines
// answered.

type batchAPI struct {
	mu      sync.Mutex
	files   map[string][]byte
	names   map[string]string // file id -> uploaded file name
	batches []*fakeBatch      // creation order
	polls   int               // retrievals before a batch completes (default 1)
	expire  bool
	fileN   int
}

type fakeBatch struct {
	b     openai.Batch
	file  string // the input file's uploaded name
	lines [][]byte
	seen  int
}

// BatchPolls sets how many GET /v1/batches/{id} calls see a batch in progress
// before it completes.
func (s *Server) BatchPolls(n int) {
	s.batchAPI().mu.Lock()
	s.batchAPI().polls = n
	s.batchAPI().mu.Unlock()
}

// ExpireBatches makes the next batches expire half done.
func (s *Server) ExpireBatches(on bool) {
	s.batchAPI().mu.Lock()
	s.batchAPI().expire = on
	s.batchAPI().mu.Unlock()
}

// Batches returns the batches created so far.
func (s *Server) Batches() []openai.Batch {
	api := s.batchAPI()
	api.mu.Lock()
	defer api.mu.Unlock()
	out := make([]openai.Batch, len(api.batches))
	for i, b := range api.batches {
		out[i] = b.b
	}
	return out
}

// BatchRequestIDs returns the custom_ids of a batch's input lines.
func (s *Server) BatchRequestIDs(id string) []string {
	api := s.batchAPI()
	api.mu.Lock()
	defer api.mu.Unlock()
	fb := api.find(id)
	if fb == nil {
		return nil
	}
	var ids []string
	for _, l := range fb.lines {
		var v struct {
			CustomID string `json:"custom_id"`
		}
		if json.Unmarshal(l, &v) == nil {
			ids = append(ids, v.CustomID)
		}
	}
	return ids
}

// BatchFileName returns the uploaded name of a batch's input file.
func (s *Server) BatchFileName(id string) string {
	api := s.batchAPI()
	api.mu.Lock()
	defer api.mu.Unlock()
	if fb := api.find(id); fb != nil {
		return fb.file
	}
	return ""
}

func (s *Server) batchAPI() *batchAPI {
	s.batchOnce.Do(func() { s.batch = &batchAPI{files: map[string][]byte{}, names: map[string]string{}, polls: 1} })
	return s.batch
}

func isBatchPath(p string) bool {
	return strings.HasPrefix(p, "/v1/files") || strings.HasPrefix(p, "/v1/batches")
}

func (s *Server) serveBatchAPI(w http.ResponseWriter, r *http.Request, body []byte) {
	api := s.batchAPI()
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/files":
		name, purpose, data, err := readUpload(r, body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		api.mu.Lock()
		api.fileN++
		id := fmt.Sprintf("file-%d", api.fileN)
		api.files[id] = data
		api.names[id] = name
		api.mu.Unlock()
		writeJSON(w, openai.File{ID: id, Object: "file", Bytes: len(data), FileName: name, Purpose: purpose,
			Status: "processed", CreatedAt: time.Now().Unix()}, false)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/files/") && strings.HasSuffix(path, "/content"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/files/"), "/content")
		api.mu.Lock()
		data, ok := api.files[id]
		api.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "invalid_request_error", "no such file "+id)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	case r.Method == http.MethodPost && path == "/batches":
		var req openai.CreateBatchRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
			return
		}
		api.mu.Lock()
		data, ok := api.files[req.InputFileID]
		if !ok {
			api.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request_error", "no such file "+req.InputFileID)
			return
		}
		fb := &fakeBatch{file: api.names[req.InputFileID], b: openai.Batch{ID: fmt.Sprintf("batch-%d", len(api.batches)+1), Object: "batch",
			Endpoint: req.Endpoint, InputFileID: req.InputFileID, CompletionWindow: req.CompletionWindow,
			Status: "validating", CreatedAt: int(time.Now().Unix()), Metadata: req.Metadata}}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				fb.lines = append(fb.lines, bytes.Clone(sc.Bytes()))
			}
		}
		fb.b.RequestCounts.Total = len(fb.lines)
		api.batches = append(api.batches, fb)
		out := fb.b
		api.mu.Unlock()
		writeJSON(w, out, false)
	case r.Method == http.MethodGet && path == "/batches":
		api.mu.Lock()
		var page struct {
			Object  string         `json:"object"`
			Data    []openai.Batch `json:"data"`
			HasMore bool           `json:"has_more"`
		}
		page.Object = "list"
		for i := len(api.batches) - 1; i >= 0; i-- {
			page.Data = append(page.Data, api.batches[i].b)
		}
		api.mu.Unlock()
		writeJSON(w, page, false)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/batches/"):
		id := strings.TrimPrefix(path, "/batches/")
		api.mu.Lock()
		fb := api.find(id)
		if fb == nil {
			api.mu.Unlock()
			writeError(w, http.StatusNotFound, "invalid_request_error", "no such batch "+id)
			return
		}
		if fb.b.Status == "validating" || fb.b.Status == "in_progress" {
			fb.seen++
			fb.b.Status = "in_progress"
			if fb.seen > api.polls {
				expire := api.expire
				api.mu.Unlock()
				out, errs := s.runBatch(fb, expire) // the script runs without the lock
				api.mu.Lock()
				api.finish(fb, out, errs, expire)
			}
		}
		out := fb.b
		api.mu.Unlock()
		writeJSON(w, out, false)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/batches/") && strings.HasSuffix(path, "/cancel"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/batches/"), "/cancel")
		api.mu.Lock()
		fb := api.find(id)
		if fb != nil && fb.b.Status != "completed" {
			fb.b.Status = "cancelled"
		}
		api.mu.Unlock()
		if fb == nil {
			writeError(w, http.StatusNotFound, "invalid_request_error", "no such batch "+id)
			return
		}
		writeJSON(w, fb.b, false)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.URL.Path)
	}
}

func (api *batchAPI) find(id string) *fakeBatch {
	for _, b := range api.batches {
		if b.b.ID == id {
			return b
		}
	}
	return nil
}

// runBatch answers the batch's lines with the script (the first half only
// when it is to expire). It returns the output and error files' lines.
func (s *Server) runBatch(fb *fakeBatch, expire bool) (out, errs []byte) {
	n := len(fb.lines)
	if expire {
		n /= 2
	}
	for i, raw := range fb.lines[:n] {
		var l struct {
			CustomID string                       `json:"custom_id"`
			URL      string                       `json:"url"`
			Body     openai.ChatCompletionRequest `json:"body"`
		}
		if err := json.Unmarshal(raw, &l); err != nil || l.URL != "/v1/chat/completions" {
			line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("batch_req_%d", i), "custom_id": l.CustomID,
				"response": nil, "error": map[string]string{"code": "invalid_request", "message": "bad line"}})
			errs = append(append(errs, line...), '\n')
			continue
		}
		rep := s.reply(Call{N: int(s.chatN.Add(1)), Request: l.Body})
		if rep.Fault.Kind == Status {
			line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("batch_req_%d", i), "custom_id": l.CustomID,
				"response": map[string]any{"status_code": rep.Fault.Status, "body": map[string]any{"error": map[string]string{"message": "injected"}}},
				"error":    nil})
			errs = append(append(errs, line...), '\n')
			continue
		}
		var buf bytes.Buffer
		rec := &bufferWriter{h: http.Header{}, buf: &buf}
		s.serveChat(rec, &l.Body, rep, NoFault)
		var body json.RawMessage = buf.Bytes()
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("batch_req_%d", i), "custom_id": l.CustomID,
			"response": map[string]any{"status_code": 200, "request_id": fmt.Sprintf("req_%d", i), "body": body}, "error": nil})
		out = append(append(out, line...), '\n')
	}
	return out, errs
}

func (api *batchAPI) finish(fb *fakeBatch, out, errs []byte, expire bool) {
	api.fileN++
	outID := fmt.Sprintf("file-%d", api.fileN)
	api.files[outID] = out
	fb.b.OutputFileID = &outID
	if len(errs) > 0 {
		api.fileN++
		errID := fmt.Sprintf("file-%d", api.fileN)
		api.files[errID] = errs
		fb.b.ErrorFileID = &errID
	}
	fb.b.Status = "completed"
	if expire {
		fb.b.Status = "expired"
	}
	fb.b.RequestCounts.Completed = bytes.Count(out, []byte("\n"))
	fb.b.RequestCounts.Failed = bytes.Count(errs, []byte("\n"))
}

// bufferWriter captures what serveChat writes.
type bufferWriter struct {
	h   http.Header
	buf *bytes.Buffer
}

func (b *bufferWriter) Header() http.Header         { return b.h }
func (b *bufferWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferWriter) WriteHeader(int)             {}

// readUpload parses a multipart file upload.
func readUpload(r *http.Request, body []byte) (name, purpose string, data []byte, err error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", "", nil, fmt.Errorf("want multipart/form-data: %w", err)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", "", nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return "", "", nil, err
		}
		switch p.FormName() {
		case "purpose":
			purpose = string(b)
		case "file":
			name, data = p.FileName(), b
		}
	}
	if data == nil {
		return "", "", nil, fmt.Errorf("no file part")
	}
	if purpose != "batch" {
		return "", "", nil, fmt.Errorf("purpose %q: this server takes batch files only", purpose)
	}
	return name, purpose, data, nil
}
