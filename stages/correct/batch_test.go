package correct

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// outcomeText is everything Generate decided for a problem, with each
// execution record's duration and time left out (they differ on every run).
func outcomeText(t *testing.T, o outcome) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("skipped: " + o.Skipped + "\n")
	for _, a := range o.Attempts {
		b.WriteString("attempt " + a.Operator + " " + a.Observed + "\n")
	}
	for _, d := range o.Dialogues {
		for i := range d.Messages {
			if e := d.Messages[i].Exec; e != nil {
				c := *e
				c.Duration, c.ExecutedAt = 0, time.Time{}
				d.Messages[i].Exec = &c
			}
		}
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPlantBatchMatchesRunPerCandidate: planting and judging in one batch
// run must decide exactly what a run per candidate decides (the same
// attempts, skips and dialogues), on sample problems and on references
// that fail their tests, do not parse, or print to stderr (which sends
// every candidate to a run of its own).
func TestPlantBatchMatchesRunPerCandidate(t *testing.T) {
	ps, err := schema.LoadProblems(repoFile(t, "data/problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ps = ps[:2]
	add := func(id, solution string) {
		ps = append(ps, schema.Problem{Query: schema.Query{ID: id, Text: "Add two numbers."}, Solution: solution,
			Tests: []string{"assert add(1, 2) == 3", "assert add(0, 0) == 0"}})
	}
	add("fails", "def add(a, b):\n    return a - b\n")
	add("does-not-parse", "def add(a, b)\n    return a + b\n")
	add("stderr", "import sys\ndef add(a, b):\n    total = a\n    for _ in range(b):\n        total += 1\n    sys.stderr.write('.')\n    return total\n")
	ex := sandbox(t)
	ctx := context.Background()
	batch := newGenerator(ex, mutationOptions{Seed: 1})
	alone := newGenerator(ex, mutationOptions{Seed: 1})
	alone.NoBatch = true
	for i := range ps {
		p := &ps[i]
		a, err := batch.Generate(ctx, p)
		if err != nil {
			t.Fatalf("%s: batch: %v", p.ID, err)
		}
		b, err := alone.Generate(ctx, p)
		if err != nil {
			t.Fatalf("%s: a run per candidate: %v", p.ID, err)
		}
		if ta, tb := outcomeText(t, a), outcomeText(t, b); ta != tb {
			t.Errorf("%s: batch decided\n%s\na run per candidate\n%s", p.ID, ta, tb)
		}
		if p.ID == "stderr" && len(a.Dialogues) == 0 {
			t.Errorf("stderr: no dialogue (its candidates must still be judged, alone)")
		}
	}
}
