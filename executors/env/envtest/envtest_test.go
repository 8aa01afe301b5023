package envtest

import (
	"os"
	"path/filepath"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/env/pyenv" // registers the ic_mbpp loader
)

// InterCodeTasks finds a task file by its path inside InterCode's data
// directory and loads it under the dataset name given.
func TestInterCodeTasks(t *testing.T) {
	b, err := os.ReadFile("../pyenv/testdata/ic_mbpp.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := "data/python/mbpp/ic_mbpp.json"
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CODEFEEDBACK_INTERCODE_DIR", dir)
	ts := InterCodeTasks(t, rel, "ic_mbpp")
	want := Tasks(t, "../pyenv/testdata/ic_mbpp.json")
	if len(ts) != len(want) || len(ts) == 0 {
		t.Fatalf("got %d tasks, want %d", len(ts), len(want))
	}
	if ts[0].Query != want[0].Query || ts[0].Gold != want[0].Gold {
		t.Errorf("task 0 = %+v, want %+v", ts[0], want[0])
	}
}
