package schema

import (
	"path/filepath"
	"strings"
	"testing"
)

// A Parquet file holds dialogues: readers and writers of other records are
// refused by name, and dialogues go through.
func TestParquetStreamsDialoguesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.parquet")
	if _, err := CreateWriter[Query](path); err == nil || !strings.Contains(err.Error(), "hold dialogues only, not schema.Query") {
		t.Errorf("CreateWriter[Query]: got %v, want the dialogues-only error", err)
	}
	w, err := CreateWriter[Dialogue](path)
	if err != nil {
		t.Fatal(err)
	}
	d := Dialogue{ID: "d1", Messages: []Message{{Role: RoleUser, Content: "hi"}, {Role: RoleAssistant, Content: "hello"}}}
	if err := w.Write(d); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader[Query](path); err == nil || !strings.Contains(err.Error(), "hold dialogues only, not schema.Query") {
		t.Errorf("OpenReader[Query]: got %v, want the dialogues-only error", err)
	}
	ds, err := ReadAll[Dialogue](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].ID != "d1" || len(ds[0].Messages) != 2 {
		t.Errorf("read back %+v, want dialogue d1 with 2 messages", ds)
	}
}
