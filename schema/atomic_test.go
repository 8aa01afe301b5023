package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteJSONAtomic writes indented JSON with a final newline, readable by
// all, and replaces an earlier file whole, leaving no temporary file.
func TestWriteJSONAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "note.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("an older and longer content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"b": []int{1, 2}, "a": "x"}
	if err := WriteJSONAtomic(path, v); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": \"x\",\n  \"b\": [\n    1,\n    2\n  ]\n}\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := WriteJSONAtomic(path, func() {}); err == nil {
		t.Error("a value JSON cannot encode: no error")
	}
}

// WriteJSONAtomic makes the file's directory when it is missing.
func TestWriteJSONAtomicMakesDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "note.json")
	if err := WriteJSONAtomic(path, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "[\n  \"x\"\n]\n" {
		t.Fatalf("got %q, %v; want the indented list", got, err)
	}
}
