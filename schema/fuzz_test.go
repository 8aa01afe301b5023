package schema

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzJSONLReader: arbitrary bytes never panic the reader; every error is a
// RecordError (reading continues) or a single fatal error, and reading ends.
func FuzzJSONLReader(f *testing.F) {
	for _, s := range []string{
		"{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
		"[{\"id\":1},{\"id\":2}]",
		"\xef\xbb\xbf{\"a\":1}\n\n{\"b\":\"\xff\"}\n",
		"{\"a\":\n",
		"",
		"[",
		"{\"x\": NaN}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenReader[Dialogue](p, MaxRecordBytes(1<<16))
		if err != nil {
			return
		}
		defer r.Close()
		for i := 0; i < len(data)+2; i++ {
			_, err := r.Read()
			if err == io.EOF {
				return
			}
			var re *RecordError
			if err != nil && !errors.As(err, &re) {
				return
			}
		}
		t.Fatalf("reader did not finish within %d reads", len(data)+2)
	})
}

// FuzzAdapters: any record through every adapter either maps or errors, and a
// mapped problem renders back to a record holding every source field.
func FuzzAdapters(f *testing.F) {
	for _, s := range []string{
		`{"task_id": 1, "text": "t", "code": "c", "test_list": ["a"], "test_setup_code": "", "challenge_test_list": []}`,
		`{"task_id": "HumanEval/0", "prompt": "p", "canonical_solution": "s", "test": "t", "entry_point": "f"}`,
		`{"instruction": "i", "input": "x", "output": "o"}`,
		`{"task_id": "two-sum", "prompt": "p", "completion": "c", "entry_point": "e", "test": "t", "query": "q", "meta": {"difficulty": "Easy"}}`,
		`{"task_id": "Mbpp/2", "prompt": "p", "base_input": [[1, -Infinity]], "atol": 0, "assertion": "assert 1"}`,
		`{"id": 5, "messages": [{"role": "user", "content": "c"}]}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, fm := range Formats {
			s, err := OpenSource(p, ImportOptions{Format: fm, Options: []Option{MaxRecordBytes(1 << 16)}})
			if err != nil {
				continue
			}
			for i := 0; i < 4; i++ {
				r, err := s.Next()
				if err != nil {
					break
				}
				if r.Problem != nil {
					if _, ok := adapters[Format(r.Problem.Metadata[metaFormat])]; ok {
						if _, err := SourceRecord(r.Problem); err != nil {
							t.Errorf("format %s: SourceRecord: %v", fm, err)
						}
					}
				}
			}
			s.Close()
		}
	})
}
