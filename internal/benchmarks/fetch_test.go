package benchmarks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// mirror serves dir over a loopback HTTP server, counting requests; alter,
// when set, rewrites the bytes of the files it names.
func mirror(t *testing.T, dir string, alter func(path string, b []byte) []byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		rel := strings.TrimPrefix(r.URL.Path, "/")
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if alter != nil {
			b = alter(rel, b)
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func sharedDir(t *testing.T) string {
	sharedtest.Path(t, "evalplus/MbppPlus.jsonl.gz") // skips without the shared data
	return sharedtest.DataDir()
}

func TestRegistryMatchesSharedCopies(t *testing.T) {
	dir := sharedDir(t)
	for _, s := range benchmarks.Known {
		if _, err := benchmarks.Locate(dir, s); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if len(s.URLs) == 0 || !strings.HasPrefix(s.URLs[0], "https://") {
			t.Errorf("%s: no https location: %v", s.Name, s.URLs)
		}
	}
}

func TestFetchAllFromMirror(t *testing.T) {
	srv, n := mirror(t, sharedDir(t), nil)
	dst := t.TempDir()
	f := &benchmarks.Fetcher{Client: srv.Client(), Mirror: srv.URL}
	for _, s := range benchmarks.Known {
		got, err := f.Fetch(context.Background(), dst, s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if got.URL != srv.URL+"/"+s.File {
			t.Errorf("%s: fetched from %q, want the mirror", s.Name, got.URL)
		}
		if _, err := benchmarks.Locate(dst, s); err != nil {
			t.Errorf("%s after fetch: %v", s.Name, err)
		}
	}
	if got := n.Load(); got != int64(len(benchmarks.Known)) {
		t.Errorf("got %d requests, want %d", got, len(benchmarks.Known))
	}
	// A second fetch finds verified files and downloads nothing.
	for _, s := range benchmarks.Known {
		got, err := f.Fetch(context.Background(), dst, s)
		if err != nil || got.URL != "" {
			t.Errorf("%s again: url %q, err %v; want no download", s.Name, got.URL, err)
		}
	}
	if got := n.Load(); got != int64(len(benchmarks.Known)) {
		t.Errorf("after a second fetch: %d requests, want %d", got, len(benchmarks.Known))
	}
	leftovers(t, dst)
}

// leftovers fails on temporary files left in dir's tree.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".part") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestFetchChecksumMismatch(t *testing.T) {
	src := sharedDir(t)
	s, _ := benchmarks.Lookup("mbpp")
	cases := []struct {
		name  string
		alter func(string, []byte) []byte
	}{
		{"one byte changed", func(_ string, b []byte) []byte { c := append([]byte(nil), b...); c[100] ^= 1; return c }},
		{"truncated", func(_ string, b []byte) []byte { return b[:len(b)/2] }},
		{"longer", func(_ string, b []byte) []byte { return append(append([]byte(nil), b...), make([]byte, 4096)...) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := mirror(t, src, c.alter)
			dst := t.TempDir()
			_, err := (&benchmarks.Fetcher{Client: srv.Client(), Mirror: srv.URL}).Fetch(context.Background(), dst, s)
			if !errors.Is(err, benchmarks.ErrChecksum) {
				t.Fatalf("got %v, want ErrChecksum", err)
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q does not name the location", err)
			}
			if _, err := os.Stat(s.Path(dst)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a rejected download left %s (stat: %v)", s.Path(dst), err)
			}
			leftovers(t, dst)
		})
	}
}

func TestFetchReplacesCorruptFileAndFallsBack(t *testing.T) {
	src := sharedDir(t)
	good, _ := mirror(t, src, nil)
	bad := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(bad.Close)
	s, _ := benchmarks.Lookup("humaneval")
	// The first location answers 404, the second serves the right bytes.
	s.URLs = []string{bad.URL + "/HumanEval.jsonl.gz", good.URL + "/" + s.File}
	dst := t.TempDir()
	os.MkdirAll(filepath.Dir(s.Path(dst)), 0o755)
	os.WriteFile(s.Path(dst), []byte("not the benchmark"), 0o644)
	if err := benchmarks.Verify(s.Path(dst), s); !errors.Is(err, benchmarks.ErrChecksum) {
		t.Fatalf("corrupt file: got %v, want ErrChecksum", err)
	}
	got, err := (&benchmarks.Fetcher{}).Fetch(context.Background(), dst, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != s.URLs[1] {
		t.Errorf("fetched from %q, want the second location", got.URL)
	}
	if _, err := benchmarks.Locate(dst, s); err != nil {
		t.Error(err)
	}
	// Every location failing names each one.
	s.URLs = []string{bad.URL + "/a", bad.URL + "/b"}
	_, err = (&benchmarks.Fetcher{}).Fetch(context.Background(), t.TempDir(), s)
	if err == nil || !strings.Contains(err.Error(), bad.URL+"/a: 404") || !strings.Contains(err.Error(), bad.URL+"/b: 404") {
		t.Errorf("got %v, want both locations with 404", err)
	}
}

func TestLocateMissingSaysHowToFetch(t *testing.T) {
	s, _ := benchmarks.Lookup("MBPP-sanitized")
	if s.Name != benchmarks.MBPPSanitized {
		t.Fatalf("Lookup is not case-insensitive: %+v", s)
	}
	_, err := benchmarks.Locate(t.TempDir(), s)
	if !errors.Is(err, benchmarks.ErrMissing) || !strings.Contains(err.Error(), "codefeedback bench fetch") {
		t.Errorf("got %v, want ErrMissing with the fetch hint", err)
	}
}

func TestDirPrecedence(t *testing.T) {
	t.Setenv(benchmarks.EnvDir, "/from/env")
	if d, _ := benchmarks.Dir("/from/flag"); d != "/from/flag" {
		t.Errorf("flag: got %s", d)
	}
	if d, _ := benchmarks.Dir(""); d != "/from/env" {
		t.Errorf("env: got %s", d)
	}
	t.Setenv(benchmarks.EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d, _ := benchmarks.Dir(""); d != "/xdg/codefeedback/benchmarks" {
		t.Errorf("cache: got %s, want /xdg/codefeedback/benchmarks", d)
	}
}

// A mirror may be a Hugging Face dataset: hf://datasets/OWNER/NAME is
// fetched through the Hub's resolve endpoint (here a loopback fake of it,
// which wants $HF_TOKEN), like a pipeline input by URL.
func TestFetchFromHubMirror(t *testing.T) {
	src := sharedDir(t)
	var paths []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer hf_test" {
			http.Error(w, "gated", http.StatusUnauthorized)
			return
		}
		rel, ok := strings.CutPrefix(r.URL.Path, "/datasets/me/benchmarks/resolve/main/")
		paths = append(paths, r.URL.Path)
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if !ok || err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(hub.Close)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_TOKEN", "hf_test")
	s, _ := benchmarks.Lookup("humaneval")
	dst := t.TempDir()
	got, err := (&benchmarks.Fetcher{Mirror: "hf://datasets/me/benchmarks"}).Fetch(context.Background(), dst, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "hf://datasets/me/benchmarks/"+s.File || len(paths) != 1 || paths[0] != "/datasets/me/benchmarks/resolve/main/"+s.File {
		t.Errorf("fetched %q via %q", got.URL, paths)
	}
	if err := benchmarks.Verify(s.Path(dst), s); err != nil {
		t.Error(err)
	}
}
