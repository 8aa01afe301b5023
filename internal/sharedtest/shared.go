// Package sharedtest locates the real public data in ../shared/data (beside the
// repository) for tests and benchmarks. A user's clone has no such folder, so
// callers skip with a clear message when it is absent.
//
// It is test-only: it imports testing, and only _test.go files may import
// it (TestNotLinkedIntoTheBinary checks). Product code finds benchmark files
// through internal/benchmarks.
package sharedtest

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Root returns the repository root (the directory holding go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// EnvDataDir overrides where the shared data is. Pointing it at a directory
// that does not exist (CODEFEEDBACK_SHARED_DATA=/nonexistent) runs the tests
// as on a user's clone, with every test that needs the data skipping.
const EnvDataDir = "CODEFEEDBACK_SHARED_DATA"

// DataDir returns ../shared/data relative to the repo root (or $EnvDataDir
// when set), or "" if that directory is absent.
func DataDir() string {
	d := os.Getenv(EnvDataDir)
	if d == "" {
		root, err := Root()
		if err != nil {
			return ""
		}
		d = filepath.Join(root, "..", "shared", "data")
	}
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// BenchDir returns the shared data directory as a benchmark directory
// (--bench-dir) after checking that each named file is there under it,
// skipping the test with a clear message otherwise. An empty --bench-dir
// would fall back to the user's cache, which a test must not depend on.
func BenchDir(tb testing.TB, files ...string) string {
	tb.Helper()
	for _, f := range files {
		Path(tb, f)
	}
	d := DataDir()
	if d == "" {
		tb.Skipf("skipping: ../shared/data is not present beside the repository (needed as the benchmark directory)")
	}
	return d
}

// Path returns a file under the shared data dir or skips the test with a clear
// message when the shared data is not there.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	d := DataDir()
	if d == "" {
		tb.Skipf("skipping: ../shared/data is not present beside the repository (needed for %s)", rel)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("skipping: %s not found in shared data: %v", rel, err)
	}
	return p
}

// Open opens a file under the shared data dir for reading, gunzipped when
// its name ends in .gz, and closes it when the test ends; it skips as
// Path does.
func Open(tb testing.TB, rel string) io.Reader {
	tb.Helper()
	f, err := os.Open(Path(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	if !strings.HasSuffix(rel, ".gz") {
		return f
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
	return zr
}
