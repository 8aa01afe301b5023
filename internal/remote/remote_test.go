package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
			if strings.HasSuffix(x.Name(), ".part") || x.Name() == "train.jsonl" {
				t.Errorf("a rejected download was kept: %s", x.Name())
			}
		}
	}
}

// cutServer serves content with http.ServeContent (Range, If-Range, ETag),
// cutting the connection after half the bytes while cut is set; it records
// the Range and Authorization headers it saw.
type cutServer struct {
	*httptest.Server
	content, etag string
	cut           atomic.Bool
	ranges, auths []string
}

func newCutServer(t *testing.T, content string) *cutServer {
	s := &cutServer{content: content, etag: `"v1"`}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		w.Header().Set("ETag", s.etag)
		if s.cut.Load() && r.Header.Get("Range") == "" {
			w.Header().Set("Content-Length", fmt.Sprint(len(s.content)))
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, s.content[:len(s.content)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-body
		}
		http.ServeContent(w, r, "f", time.Time{}, strings.NewReader(s.content))
	}))
	t.Cleanup(s.Close)
	return s
}

// A download cut half way is resumed with a Range request by the next
// Fetch, for a pinned file (the checksum proves the joined bytes) and for a
// cached URL (If-Range with the ETag the part came with); a file that
// changed meanwhile is downloaded whole again.
func TestFetchResumesCutDownload(t *testing.T) {
	content := strings.Repeat("0123456789abcdef", 4096)
	sum := sha256.Sum256([]byte(content))
	pinned := hex.EncodeToString(sum[:])
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		opts    func(dir string) Options
		changed bool
	}{
		{"pinned", func(dir string) Options {
			return Options{Dest: dir + "/x/file.txt", SHA256: pinned, Size: int64(len(content))}
		}, false},
		{"cached by etag", func(dir string) Options { return Options{CacheDir: dir} }, false},
		{"changed meanwhile", func(dir string) Options { return Options{CacheDir: dir} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newCutServer(t, content)
			o := c.opts(t.TempDir())
			s.cut.Store(true)
			if _, err := Fetch(ctx, s.URL+"/file.txt", o); err == nil {
				t.Fatal("cut download: no error")
			}
			s.cut.Store(false)
			want := content
			if c.changed {
				want = strings.Repeat("fedcba9876543210", 4096)
				s.content, s.etag = want, `"v2"`
			}
			var log strings.Builder
			o.Progress = &log
			f, err := Fetch(ctx, s.URL+"/file.txt", o)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(f.Path); string(b) != want {
				t.Fatalf("local copy: %d bytes, want %d", len(b), len(want))
			}
			wantRange := fmt.Sprintf("bytes=%d-", len(content)/2)
			if s.ranges[1] != wantRange || f.Resumed == c.changed {
				t.Errorf("second request Range %q, resumed %v; want %q, resumed %v", s.ranges[1], f.Resumed, wantRange, !c.changed)
			}
			if want := "resuming "; c.changed == strings.Contains(log.String(), want) || !strings.Contains(log.String(), "downloaded ") {
				t.Errorf("progress:\n%s", log.String())
			}
			if _, err := os.Stat(f.Path + ".part"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the part file is left: %v", err)
			}
		})
	}
}

// HF_TOKEN goes to the Hub's host only: not to another https host, even
// with the token set.
func TestTokenOnlyForHubHost(t *testing.T) {
	s := newCutServer(t, "data\n")
	t.Setenv("HF_TOKEN", "hf_secret")
	t.Setenv("HF_ENDPOINT", "https://hub.example")
	if _, err := Fetch(context.Background(), s.URL+"/f", Options{CacheDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", s.URL) // the same host is the Hub: the token goes
	if _, err := Fetch(context.Background(), s.URL+"/g", Options{CacheDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if len(s.auths) != 2 || s.auths[0] != "" || s.auths[1] != "Bearer hf_secret" {
		t.Errorf("Authorization headers %q, want none to the other host and the token to the Hub", s.auths)
	}
}

// At Dest: a matching file is kept without a request; a wrong download is
// refused and leaves neither the file nor a part.
func TestFetchDest(t *testing.T) {
	s := newCutServer(t, "the file\n")
	sum := sha256.Sum256([]byte("the file\n"))
	dst := t.TempDir() + "/d/f.txt"
	o := Options{Dest: dst, SHA256: hex.EncodeToString(sum[:]), Size: 9}
	if f, err := Fetch(context.Background(), s.URL+"/f", o); err != nil || !f.Downloaded {
		t.Fatalf("first: %+v, %v", f, err)
	}
	if f, err := Fetch(context.Background(), s.URL+"/f", o); err != nil || f.Downloaded || len(s.ranges) != 1 {
		t.Fatalf("second: %+v, %v, %d requests; want the file kept without a request", f, err, len(s.ranges))
	}
	o.Dest, o.SHA256 = t.TempDir()+"/g.txt", strings.Repeat("0", 64)
	if _, err := Fetch(context.Background(), s.URL+"/f", o); !errors.Is(err, ErrChecksum) {
		t.Fatalf("wrong checksum: %v", err)
	}
	for _, p := range []string{o.Dest, o.Dest + ".part"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after a rejected download", p)
		}
	}
}
