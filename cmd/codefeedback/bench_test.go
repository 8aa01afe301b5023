package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/leak"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// `bench fetch` fills an empty cache from a loopback mirror of the shared
// data, then `audit` finds the benchmarks there with no --bench-dir; a
// mirror serving other bytes fails with exit 7 (bad data) and leaves nothing.
func TestBenchFetchThenAudit(t *testing.T) {
	sharedtest.Path(t, "evalplus/MbppPlus.jsonl.gz")
	src := sharedtest.DataDir()
	tamper := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/"))))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if tamper {
			b[len(b)/2] ^= 0x20
		}
		w.Write(b)
	}))
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(benchmarks.EnvDir, "")

	var out bytes.Buffer
	if err := runBenchList("", false, &out); err != nil || !strings.Contains(out.String(), "missing") || !strings.Contains(out.String(), "bench fetch") {
		t.Errorf("list on an empty cache: %v\n%s", err, out.String())
	}
	out.Reset()
	err := runBenchFetch(context.Background(), benchFetchOptions{names: []string{"humaneval", "MBPP"}, mirror: srv.URL, client: srv.Client(), stdout: &out})
	if err != nil {
		t.Fatalf("fetch: %v\n%s", err, out.String())
	}
	if got := strings.Count(out.String(), "fetched"); got != 2 {
		t.Errorf("got %d fetched lines, want 2:\n%s", got, out.String())
	}
	for _, n := range []string{"humaneval", "mbpp"} {
		s, _ := benchmarks.Lookup(n)
		if _, err := benchmarks.Locate(filepath.Join(cache, "codefeedback", "benchmarks"), s); err != nil {
			t.Errorf("%s not in the user cache: %v", n, err)
		}
	}
	if err := runBenchFetch(context.Background(), benchFetchOptions{names: []string{"nonesuch"}, stdout: &out}); exitCode(err) != 2 {
		t.Errorf("unknown name: got %v, want exit 2", err)
	}

	// audit reads the cache by default.
	in := filepath.Join(t.TempDir(), "d.jsonl")
	os.WriteFile(in, []byte(`{"id":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`+"\n"), 0o644)
	var aout, aerr bytes.Buffer
	if err := runAudit(context.Background(), auditOptions{dataset: in, against: []string{"humaneval", "mbpp"}, measures: defaultMeasures(), stdout: &aout, stderr: &aerr}); err != nil {
		t.Fatalf("audit from the cache: %v\n%s", err, aerr.String())
	}

	tamper = true
	err = runBenchFetch(context.Background(), benchFetchOptions{names: []string{"mbpp-sanitized"}, mirror: srv.URL, client: srv.Client(), stdout: &out})
	if !errors.Is(err, benchmarks.ErrChecksum) || exitCode(err) != exitBadData {
		t.Errorf("tampered: got %v, want ErrChecksum with exit 7 (bad data)", err)
	}
	s, _ := benchmarks.Lookup("mbpp-sanitized")
	if benchmarks.Present(filepath.Join(cache, "codefeedback", "benchmarks"), s) {
		t.Errorf("a tampered download was kept")
	}
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 1
	}
	return 0
}

func defaultMeasures() leak.Options {
	o := leak.DefaultOptions
	o.Workers = 2
	return o
}
