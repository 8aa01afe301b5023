package schema

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ratings file (the filter stage's output) gets a score histogram per
// rubric, with unrated answers counted as 0.
func TestInspectRatingsHistogram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ratings.jsonl")
	lines := []string{
		`{"query_id":"q1","rubric":"skills","score":4,"reason":"graphs"}`,
		`{"query_id":"q1","rubric":"effort","score":5}`,
		`{"query_id":"q2","rubric":"skills","score":4}`,
		`{"query_id":"q2","rubric":"effort","score":2}`,
		`{"query_id":"q3","rubric":"skills","score":0,"raw":"no idea"}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Inspect(context.Background(), path, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rubric      string
		score, want int
	}{{"skills", 4, 2}, {"skills", 0, 1}, {"effort", 5, 1}, {"effort", 2, 1}, {"effort", 4, 0}} {
		if got := rep.Scores[tc.rubric][tc.score]; got != tc.want {
			t.Errorf("Scores[%s][%d]: got %d, want %d", tc.rubric, tc.score, got, tc.want)
		}
	}
	var out bytes.Buffer
	rep.Render(&out)
	for _, want := range []string{"rating scores, rubric effort", "rating scores, rubric skills", "  4      2 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rendered report lacks %q:\n%s", want, out.String())
		}
	}
}
