package pipeline

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRemoteInput: an hf:// input is fetched through the Hub's resolve
// endpoint (a fake on loopback: redirect to a CDN host, ETag), cached in the
// user cache, recorded in the manifest with its URL and SHA-256, and a
// re-run downloads nothing.
func TestRemoteInput(t *testing.T) {
	var body strings.Builder
	for i := range 5 {
		fmt.Fprintf(&body, `{"id":"q%d","text":"query number %d"}`+"\n", i, i)
	}
	var downloads atomic.Int64
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		fmt.Fprint(w, body.String())
	}))
	defer cdn.Close()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/datasets/acme/queries/resolve/main/q.jsonl" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Linked-Etag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		http.Redirect(w, r, cdn.URL+"/blob", http.StatusFound)
	}))
	defer hub.Close()
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir, file := setup(t, 0, `
run_dir: $DIR/run
inputs:
  - {path: "hf://datasets/acme/queries/q.jsonl", format: native}
stages:
  - {stage: t-suffix, name: a, settings: {prompt: "-a"}}
outputs:
  - {path: $DIR/out.jsonl, format: jsonl, from: a}
`)
	m := mustRun(t, file, RunOptions{})
	if len(m.Inputs) != 1 || m.Inputs[0].URL != hub.URL+"/datasets/acme/queries/resolve/main/q.jsonl" ||
		m.Inputs[0].Items != 5 || len(m.Inputs[0].SHA256) != 64 {
		t.Fatalf("manifest inputs = %+v", m.Inputs)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if !strings.Contains(string(out), "query number 4-a") {
		t.Fatalf("output = %.300s", out)
	}
	mustRun(t, file, RunOptions{})
	if n := downloads.Load(); n != 1 {
		t.Errorf("downloads after a re-run = %d, want 1", n)
	}
}
