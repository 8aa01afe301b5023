package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// TestVerifyProgress: verify shows its progress over the file's dialogues
// (here as the log line a non-terminal gets at the end).
func TestVerifyProgress(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "d.jsonl")
	var b strings.Builder
	for _, id := range []string{"d1", "d2", "d3"} {
		b.WriteString(`{"id":"` + id + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n")
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	ctx := context.Background()
	p := verifyProgress(ctx, data, errFile)
	n := 0
	for _, err := range p.count(schema.ReadShipped(ctx, data)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	p.Finish()
	got, _ := os.ReadFile(errFile.Name())
	if n != 3 || !strings.Contains(string(got), "stage=verify done=3 total=3") {
		t.Errorf("read %d dialogues; stderr %q, want a progress line with done=3 total=3", n, got)
	}
}
