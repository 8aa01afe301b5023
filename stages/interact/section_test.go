package interact

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// TestSection: the interact section's charts hold the rates computed
// from the stage's counters (hand-computed here).
func TestSection(t *testing.T) {
	s := section.Stage{Name: "interact", Type: "interact", Stats: map[string]float64{
		"episodes/bash": 4, "success/bash": 3, "reward/bash": 3.5, "actions/bash": 8, "failed_actions/bash": 2, "dropped/bash": 1,
		"episodes/sql": 2, "success/sql": 1, "reward/sql": 1.25, "actions/sql": 5, "failed_actions/sql": 0,
		"turns_to_success/1": 3, "turns_to_success/2": 1,
	}}
	var in section.Instance
	if err := buildSection(context.Background(), s, &in); err != nil {
		t.Fatal(err)
	}
	want := map[string][]section.Bar{
		"chart-interact-success": {{Label: "bash", Value: 0.75}, {Label: "sql", Value: 0.5}},
		"chart-interact-reward":  {{Label: "bash", Value: 0.875}, {Label: "sql", Value: 0.625}},
		"chart-interact-errors":  {{Label: "bash", Value: 0.25}, {Label: "sql", Value: 0}},
		"chart-interact-kept":    {{Label: "bash kept", Value: 3}, {Label: "bash dropped", Value: 1}, {Label: "sql kept", Value: 2}, {Label: "sql dropped", Value: 0}},
		"chart-interact-turns":   {{Label: "1", Value: 3}, {Label: "2", Value: 1}},
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
