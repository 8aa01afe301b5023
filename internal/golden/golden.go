// Package golden compares what a test renders with a golden file kept under
// the package's testdata, so a change to rendered text shows up as a diff
// in review. Run a package's tests with -update to rewrite its golden files
// after an intended change, then read the diff (git diff testdata/) before
// committing it:
//
//	go test ./prompts -run Golden -update
//
// Only test code imports this package.
package golden

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with what the tests render")

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }

// Check compares got with the golden file at path. With -update it writes
// got to path instead (creating its directory); without, a missing file or
// a difference fails t with the first differing line.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: no golden file; run the test with -update to write it, then review it", path)
		return
	}
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if d := Diff(got, string(want)); d != "" {
		t.Errorf("%s differs from what the test renders (run with -update if the change is intended):\n%s", path, d)
	}
}

// Diff describes the first line where got and want differ, or returns ""
// when they are equal.
func Diff(got, want string) string {
	if got == want {
		return ""
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		gl, wl := line(g, i), line(w, i)
		if gl != wl {
			return fmt.Sprintf("first difference at line %d (got %d lines, want %d):\ngot:  %s\nwant: %s", i+1, len(g), len(w), gl, wl)
		}
	}
	// Unreachable for different strings: they differ in some line.
	return "differ"
}

// line is lines[i] quoted, or a marker past the end.
func line(lines []string, i int) string {
	if i >= len(lines) {
		return "(no line: the text ends before)"
	}
	return fmt.Sprintf("%q", lines[i])
}
