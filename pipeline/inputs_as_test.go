package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// TestInputsAs: an input's `as` decides what its records become, the
// default making records without tests queries that keep their output as
// the reference answer; changing it imports again.
func TestInputsAs(t *testing.T) {
	dir := t.TempDir()
	recs := `{"instruction": "Reverse a string in Python.", "output": "def rev(s):\n    return s[::-1]"}
{"instruction": "Explain binary search.", "response": "Halve the range each step."}
{"text": "add one", "code": "def f(x):\n    return x + 1", "test_list": ["assert f(1) == 2"]}
`
	if err := os.WriteFile(filepath.Join(dir, "pairs.jsonl"), []byte(recs[:strings.LastIndex(recs[:len(recs)-1], "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mbpp.jsonl"), []byte(recs[strings.LastIndex(recs[:len(recs)-1], "\n")+1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "p.yaml")
	imported := func(as string) map[string]string {
		t.Helper()
		writePipeline(t, file, dir, `
run_dir: $DIR/run
inputs: [{path: pairs.jsonl`+as+`}, {path: mbpp.jsonl`+as+`}]
stages:
  - {stage: t-count}
`)
		mustRun(t, file, RunOptions{})
		kinds := map[string]string{} // text -> kind (+ reference answer)
		for it, err := range readItems(context.Background(), nil, filepath.Join(dir, "run", "stages", InputsName, importedFile)) {
			if err != nil {
				t.Fatal(err)
			}
			var q schema.Query
			if err := it.Decode(&q); err != nil {
				t.Fatal(err)
			}
			kinds[strings.SplitN(q.Text, "\n", 2)[0]] = it.Kind + " " + schema.ReferenceAnswer(q)
		}
		return kinds
	}
	for _, tc := range []struct {
		as   string
		want map[string]string
	}{
		{"", map[string]string{"Reverse a string in Python.": "query def rev(s):\n    return s[::-1]",
			"Explain binary search.": "query Halve the range each step.", "add one": "problem "}},
		{", as: problem", map[string]string{"Reverse a string in Python.": "problem ", "Explain binary search.": "problem ", "add one": "problem "}},
		{", as: query", map[string]string{"Reverse a string in Python.": "query def rev(s):\n    return s[::-1]",
			"Explain binary search.": "query Halve the range each step.", "add one": "query def f(x):\n    return x + 1"}},
		{", as: auto", map[string]string{"Reverse a string in Python.": "query def rev(s):\n    return s[::-1]",
			"Explain binary search.": "query Halve the range each step.", "add one": "problem "}},
	} {
		got := imported(tc.as)
		for text, want := range tc.want {
			if got[text] != want {
				t.Errorf("as %q: %q imported as %q, want %q", tc.as, text, got[text], want)
			}
		}
	}

	writePipeline(t, file, dir, `
inputs: [{path: pairs.jsonl, as: rows}]
stages:
  - {stage: t-count}
`)
	if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), `as "rows": want auto, query or problem`) {
		t.Errorf("Load with as: rows: got %v, want the choices named", err)
	}
}
