package pipeline

import (
	"path/filepath"
	"testing"
	"time"
)

// TestManifestHistory: each run's manifest keeps the earlier runs of its
// directory and a total, so a free re-run does not erase a costly one.
func TestManifestHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.json")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(i int, cost float64, retries int64) *Manifest {
		m := &Manifest{Status: "complete", Started: t0.Add(time.Duration(i) * time.Hour), Usage: Usage{Requests: int64(cost * 100), CostUSD: cost},
			Stages: []StageRecord{{Name: "simulate", Counts: Counts{Retries: retries, Fresh: retries * 10}}}}
		// Written several times during a run, as the engine does.
		for range 3 {
			if err := m.write(path); err != nil {
				t.Fatal(err)
			}
		}
		got, err := ReadManifest(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	run(0, 22.5, 7)
	m := run(1, 0, 0)
	if len(m.History) != 1 || m.History[0].Usage.CostUSD != 22.5 || m.History[0].Retries != 7 {
		t.Fatalf("history %+v, want the first run's $22.5 and 7 retries", m.History)
	}
	if m.Total.Runs != 2 || m.Total.Usage.CostUSD != 22.5 || m.Total.Retries != 7 || m.Total.Usage.Requests != 2250 {
		t.Errorf("total %+v, want 2 runs, $22.5, 7 retries, 2250 requests", m.Total)
	}
	m = run(2, 1.25, 1)
	if len(m.History) != 2 || m.Total.Runs != 3 || m.Total.Usage.CostUSD != 23.75 || m.Total.Retries != 8 || m.Usage.CostUSD != 1.25 {
		t.Errorf("third run: history %d entries, total %+v, this run %+v", len(m.History), m.Total, m.Usage)
	}
}
