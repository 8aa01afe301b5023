package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// Dialogue output formats are written by the schema package's exporters and
// read back by its readers.
func TestDialogueOutputFormats(t *testing.T) {
	d := schema.Dialogue{ID: "d1", Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "add 1 and 2"},
		{Role: schema.RoleAssistant, Content: "```python\nprint(1 + 2)\n```"},
		{Role: schema.RoleExecution, Content: "3"},
	}}
	it, err := DialogueItem(d)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ format, file, wantRole2 string }{
		{"codefeedback", "cf.jsonl", "user"},
		{"sharegpt", "sg.jsonl", ""},
		{"openai-tool", "oa.jsonl", ""},
		{"parquet", "d.parquet", "user"}, // Code-Feedback layout: the run is an "Execution result:" user turn
	} {
		t.Run(tc.format, func(t *testing.T) {
			f, ok := lookupOutput(tc.format)
			if !ok {
				t.Fatalf("output format %s not registered", tc.format)
			}
			path := filepath.Join(dir, tc.file)
			w, err := f(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(it); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Fatalf("%s visible before Close", path)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.format == "parquet" {
				got, err := schema.ReadAll[schema.Dialogue](path)
				if err != nil || len(got) != 1 || got[0].Messages[2].Role != tc.wantRole2 {
					t.Fatalf("parquet read back: got %+v, %v", got, err)
				}
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if tc.wantRole2 != "" {
				msgs := rec["messages"].([]any)
				if got := msgs[2].(map[string]any)["role"]; got != tc.wantRole2 {
					t.Errorf("execution turn role: got %v, want %s", got, tc.wantRole2)
				}
			}
		})
	}
	// A non-dialogue item is refused rather than written as something else.
	f, _ := lookupOutput("codefeedback")
	w, err := f(filepath.Join(dir, "bad.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	q, _ := QueryItem(schema.Query{ID: "q1", Text: "x"})
	if err := w.Write(q); err == nil {
		t.Error("writing a query item as codefeedback: got nil error, want one")
	}
}

func TestLimitedPath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"out/dialogues.jsonl", 1, "out/dialogues.limit-1.jsonl"},
		{"out/d.jsonl.gz", 100, "out/d.limit-100.jsonl.gz"},
		{"data", 5, "data.limit-5"},
		{".hidden.jsonl", 2, ".hidden.limit-2.jsonl"},
	} {
		if got := limitedPath(tc.in, tc.n); got != tc.want {
			t.Errorf("limitedPath(%q, %d): got %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
