package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

func TestResolve(t *testing.T) {
	o := Options{HubEndpoint: "https://hub.example"}
	cases := []struct{ in, want string }{
		{"hf://datasets/m-a-p/Code-Feedback/Code-Feedback.jsonl", "https://hub.example/datasets/m-a-p/Code-Feedback/resolve/main/Code-Feedback.jsonl"},
		{"hf://datasets/o/n@v1.0/data/train-00000.parquet", "https://hub.example/datasets/o/n/resolve/v1.0/data/train-00000.parquet"},
		{"hf://models/o/n/config.json", "https://hub.example/o/n/resolve/main/config.json"},
		{"https://example.org/x.jsonl", "https://example.org/x.jsonl"},
	}
	for _, c := range cases {
		got, err := Resolve(c.in, o)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"hf://datasets/o", "hf://buckets/o/n/f", "hf://datasets/o/n@/f", "ftp://x/y"} {
		if _, err := Resolve(bad, o); err == nil {
			t.Errorf("Resolve(%q): want an error", bad)
		}
	}
}

// fakeHub plays the Hub's resolve endpoint: a 302 to a CDN on another host
// name (localhost vs 127.0.0.1) carrying X-Linked-Etag, as for LFS files,
// and 304 for a matching If-None-Match.
type fakeHub struct {
	hub, cdn   *httptest.Server
	downloads  atomic.Int64
	cdnAuth    atomic.Value
	content    string
	wantToken  string
	revisions  map[string]string
	lastIfNone atomic.Value
}

func newFakeHub(t *testing.T, content string) *fakeHub {
	f := &fakeHub{content: content, wantToken: "hf_secret"}
	sum := sha256.Sum256([]byte(content))
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	f.cdn = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.cdnAuth.Store(r.Header.Get("Authorization"))
		f.downloads.Add(1)
		fmt.Fprint(w, f.content)
	}))
	t.Cleanup(f.cdn.Close)
	f.hub = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.wantToken {
			http.Error(w, "gated", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/datasets/o/n/resolve/main/data/train.jsonl" && r.URL.Path != "/datasets/o/n/resolve/v2/data/train.jsonl" {
			http.NotFound(w, r)
			return
		}
		f.lastIfNone.Store(r.Header.Get("If-None-Match"))
		w.Header().Set("X-Linked-Etag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		cdn := strings.Replace(f.cdn.URL, "127.0.0.1", "localhost", 1)
		http.Redirect(w, r, cdn+"/blobs/"+etag[1:len(etag)-1], http.StatusFound)
	}))
	t.Cleanup(f.hub.Close)
	return f
}

func TestFetchHubCachesByETag(t *testing.T) {
	f := newFakeHub(t, `{"id": 1}`+"\n")
	t.Setenv("HF_ENDPOINT", f.hub.URL)
	t.Setenv("HF_TOKEN", "hf_secret")
	o := Options{CacheDir: t.TempDir()}
	ctx := context.Background()
	got, err := Fetch(ctx, "hf://datasets/o/n/data/train.jsonl", o)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(f.content))
	if got.SHA256 != hex.EncodeToString(sum[:]) || !got.Downloaded || got.Bytes != int64(len(f.content)) {
		t.Errorf("first fetch = %+v", got)
	}
	if b, _ := os.ReadFile(got.Path); string(b) != f.content {
		t.Errorf("local copy = %q", b)
	}
	if a, _ := f.cdnAuth.Load().(string); a != "" {
		t.Errorf("the token reached the CDN host: %q", a)
	}
	// Unchanged: revalidated, not downloaded again.
	again, err := Fetch(ctx, "hf://datasets/o/n/data/train.jsonl", o)
	if err != nil || again.Downloaded || again.SHA256 != got.SHA256 || again.Path != got.Path {
		t.Errorf("second fetch = %+v, %v; want the cached copy", again, err)
	}
	if n := f.downloads.Load(); n != 1 {
		t.Errorf("downloads = %d, want 1", n)
	}
	// A revision is its own cache entry.
	if r, err := Fetch(ctx, "hf://datasets/o/n@v2/data/train.jsonl", o); err != nil || !r.Downloaded {
		t.Errorf("revision fetch = %+v, %v", r, err)
	}
}

func TestFetchErrors(t *testing.T) {
	f := newFakeHub(t, "x\n")
	t.Setenv("HF_ENDPOINT", f.hub.URL)
	o := Options{CacheDir: t.TempDir()}
	ctx := context.Background()
	t.Setenv("HF_TOKEN", "wrong")
	if _, err := Fetch(ctx, "hf://datasets/o/n/data/train.jsonl", o); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("bad token: %v", err)
	}
	t.Setenv("HF_TOKEN", "hf_secret")
	if _, err := Fetch(ctx, "hf://datasets/o/n/data/missing.jsonl", o); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing file: %v", err)
	}
	o.SHA256 = strings.Repeat("0", 64)
	_, err := Fetch(ctx, "hf://datasets/o/n/data/train.jsonl", o)
	if !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong checksum: %v", err)
	}
	entries, _ := os.ReadDir(o.CacheDir)
	for _, e := range entries {
		files, _ := os.ReadDir(o.CacheDir + "/" + e.Name())
		for _, x := range files {
			if strings.HasPrefix(x.Name(), ".download-") || x.Name() == "train.jsonl" {
				t.Errorf("a rejected download was kept: %s", x.Name())
			}
		}
	}
}
