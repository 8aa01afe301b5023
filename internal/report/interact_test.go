package report

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
)

// TestBuildInteract: the interact section's charts hold the rates computed
// from the stage's counters (hand-computed here).
func TestBuildInteract(t *testing.T) {
	s := &pipeline.StageRecord{Name: "interact", Type: "interact", Stats: map[string]float64{
		"episodes/bash": 4, "success/bash": 3, "reward/bash": 3.5, "actions/bash": 8, "failed_actions/bash": 2, "dropped/bash": 1,
		"episodes/sql": 2, "success/sql": 1, "reward/sql": 1.25, "actions/sql": 5, "failed_actions/sql": 0,
		"turns_to_success/1": 3, "turns_to_success/2": 1,
	}}
	var in Instance
	if err := buildInteract(context.Background(), nil, s, &in); err != nil {
		t.Fatal(err)
	}
	want := map[string][]Bar{
		"chart-interact-success": {{"bash", 0.75}, {"sql", 0.5}},
		"chart-interact-reward":  {{"bash", 0.875}, {"sql", 0.625}},
		"chart-interact-errors":  {{"bash", 0.25}, {"sql", 0}},
		"chart-interact-kept":    {{"bash kept", 3}, {"bash dropped", 1}, {"sql kept", 2}, {"sql dropped", 0}},
		"chart-interact-turns":   {{"1", 3}, {"2", 1}},
	}
	if len(in.Charts) != len(want) {
		t.Fatalf("%d charts, want %d: %+v", len(in.Charts), len(want), in.Charts)
	}
	for _, c := range in.Charts {
		w := want[c.ID]
		if len(c.Bars) != len(w) {
			t.Errorf("%s: bars %v, want %v", c.ID, c.Bars, w)
			continue
		}
		for i := range w {
			if c.Bars[i] != w[i] {
				t.Errorf("%s bar %d = %v, want %v", c.ID, i, c.Bars[i], w[i])
			}
		}
	}
}
