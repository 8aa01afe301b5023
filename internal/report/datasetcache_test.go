package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDatasetSummaryCached: a second report of the same stage output takes
// the dataset summary and sample from the first, identical to a scan; a
// summary kept under another key (another output or sample size) is not
// used.
func TestDatasetSummaryCached(t *testing.T) {
	s := runSample(t)
	ctx := context.Background()
	cache := filepath.Join(s.runDir, datasetCacheFile)
	os.Remove(cache)
	scanned, err := Collect(ctx, s.runDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no summary kept after a scan: %v", err)
	}
	cached, err := Collect(ctx, s.runDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"dataset", cached.Dataset, scanned.Dataset},
		{"sample ids", cached.SampleIDs, scanned.SampleIDs},
		{"sample", cached.sample, scanned.sample},
	} {
		if g, w := js(c.got), js(c.want); g != w {
			t.Errorf("%s from the kept summary:\ngot  %.400s\nwant %.400s", c.what, g, w)
		}
	}
	if scanned.Dataset.Dialogues == 0 {
		t.Fatal("the sample run's dataset is empty; nothing was compared")
	}

	// A kept summary is what the next report shows (so the test above
	// compared the cache, not a second scan) ...
	var kept datasetCache
	b, _ := os.ReadFile(cache)
	if err := json.Unmarshal(b, &kept); err != nil {
		t.Fatal(err)
	}
	kept.Dataset.Dialogues = -7
	b, _ = json.Marshal(kept)
	if err := os.WriteFile(cache, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Collect(ctx, s.runDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Dataset.Dialogues != -7 {
		t.Errorf("kept summary not used: got %d dialogues, want the kept -7", d.Dataset.Dialogues)
	}
	// ... but not for another sample size, which scans again.
	d, err = Collect(ctx, s.runDir, Options{Sample: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Dataset.Dialogues != scanned.Dataset.Dialogues {
		t.Errorf("summary under another key used: got %d dialogues, want %d", d.Dataset.Dialogues, scanned.Dataset.Dialogues)
	}
	os.Remove(cache)
}
