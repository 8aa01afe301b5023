// Package sharedtest locates the real public data in ../shared/data (beside the
// repository) for tests and benchmarks. A user's clone has no such folder, so
// callers skip with a clear message when it is absent.
//
// It is test-only: it imports testing, and only _test.go files may import
// it (TestNotLinkedIntoTheBinary checks). Product code finds benchmark files
// through internal/benchmarks.
package sharedtest

import (
	"os"
	"path/filepath"
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

// DataDir returns ../shared/data relative to the repo root, or "" if absent.
// CODEFEEDBACK_SHARED_DATA overrides the location.
func DataDir() string {
	if d := os.Getenv("CODEFEEDBACK_SHARED_DATA"); d != "" {
		return d
	}
	root, err := Root()
	if err != nil {
		return ""
	}
	d := filepath.Join(root, "..", "shared", "data")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
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
