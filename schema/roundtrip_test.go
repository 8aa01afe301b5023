package schema

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// readOriginal reads the source file's records as generic JSON, the ground
// truth an import must be able to reproduce.
func readOriginal(t *testing.T, path string) []map[string]any {
	t.Helper()
	r, err := OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []map[string]any
	for rec, err := range each(context.Background(), r.Next) {
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(rec, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestProblemRoundTripSharedData imports each real benchmark and query file,
// writes the problems as JSONL (plain, .gz and .zst), re-imports them, and
// renders every problem back to its source record: it must equal the
// original record field for field.
func TestProblemRoundTripSharedData(t *testing.T) {
	cases := []struct {
		file   string
		format Format
		n      int
	}{
		{"mbpp/mbpp.jsonl", FormatMBPP, 974},
		{"mbpp/sanitized-mbpp.json", FormatMBPPSanitize, 427},
		{"humaneval/HumanEval.jsonl.gz", FormatHumanEval, 164},
		{"evalplus/HumanEvalPlus.jsonl.gz", FormatEvalPlus, 164},
		{"leetcode/LeetCodeDataset-v0.2.0-test.jsonl.gz", FormatLeetCode, 200},
		{"leetcode/LeetCodeDataset-v0.3.1-test.jsonl.gz", FormatLeetCode, 228},
		{"queries/code_alpaca_2k.json", FormatAlpaca, 2017},
		{"queries/new_codealpaca.json.gz", FormatAlpaca, 4535},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := sharedtest.Path(t, c.file)
			orig := readOriginal(t, path)
			s, err := OpenSource(path, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Format() != c.format {
				t.Errorf("detected format %s, want %s", s.Format(), c.format)
			}
			s.Close()
			probs, err := LoadProblems(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(probs) != c.n || len(orig) != c.n {
				t.Fatalf("got %d problems from %d records, want %d", len(probs), len(orig), c.n)
			}
			for _, ext := range []string{".jsonl", ".jsonl.gz", ".jsonl.zst"} {
				out := filepath.Join(t.TempDir(), "problems"+ext)
				if err := WriteAll(out, probs); err != nil {
					t.Fatal(err)
				}
				back, err := LoadProblems(out) // native format, detected
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(back, probs) {
					t.Fatalf("%s: re-imported problems differ from the imported ones", ext)
				}
			}
			for i := range probs {
				rec, err := SourceRecord(&probs[i])
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(rec)
				var got map[string]any
				json.Unmarshal(b, &got)
				if !reflect.DeepEqual(got, orig[i]) {
					t.Fatalf("record %d (%s): rendered back\n got %.300s\nwant %.300v", i, probs[i].ID, b, orig[i])
				}
			}
		})
	}
}

// TestCodeFeedbackRoundTrip: the real Code-Feedback sample imports as
// dialogues and exports (JSONL and via Parquet) to records equal to the
// input, integer ids included.
func TestCodeFeedbackSampleImport(t *testing.T) {
	path := sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
	orig := readOriginal(t, path)
	s, err := OpenSource(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Dialogues() {
		t.Fatalf("format %s, want codefeedback dialogues", s.Format())
	}
	n := 0
	for ; ; n++ {
		r, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Dialogue.SourceID) != r.Dialogue.ID {
			t.Errorf("record %d: source id %s, want the integer %s kept", n, r.Dialogue.SourceID, r.Dialogue.ID)
		}
		if got, want := len(r.Dialogue.Messages), len(orig[n]["messages"].([]any)); got != want {
			t.Errorf("record %d: %d messages, want %d", n, got, want)
		}
	}
	if n != len(orig) {
		t.Fatalf("got %d dialogues, want %d", n, len(orig))
	}
	_ = os.Remove
}
