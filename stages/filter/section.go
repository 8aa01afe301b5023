package filter

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// The report's section for filter and dedup, drawn from the keys their
// Observe functions record.
func init() {
	section.Register(section.Spec{Type: "filter", Title: "Filter: difficulty and near-duplicates",
		Stages: []string{"filter", "dedup"}, Labels: statLabels, Build: buildSection})
}

// statLabels name the statistics filter and dedup record.
var statLabels = map[string]string{
	"queries":          "queries read",
	"kept":             "kept",
	"dropped":          "dropped (score below keep)",
	"unrated":          "unrated (no usable rating)",
	"rated":            "rated",
	"skipped_no_model": "passed through (no model)",
	"dropped/exact":    "dropped: exact duplicate",
	"dropped/near":     "dropped: near duplicate",
}

func buildSection(_ context.Context, s section.Stage, in *section.Instance) error {
	st := s.Stats
	if s.Type == "dedup" {
		bars := section.Pick(st, nil, "queries", "kept")
		for _, b := range section.Bars(section.Under(st, "dropped/")) {
			bars = append(bars, section.Bar{Label: "dropped: " + b.Label, Value: b.Value})
		}
		if len(bars) > 0 {
			in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "kept"), Title: "Near-duplicate removal", Bars: bars})
		}
		return nil
	}
	rubrics := map[string]bool{}
	for k := range st {
		if rest, ok := strings.CutPrefix(k, "score/"); ok {
			if r, _, ok := strings.Cut(rest, "/"); ok {
				rubrics[r] = true
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(rubrics)) {
		h := section.Under(st, "score/"+r+"/")
		bars := make([]section.Bar, 0, len(h))
		for _, b := range []string{"1", "2", "3", "4", "5"} {
			bars = append(bars, section.Bar{Label: b, Value: h[b]})
		}
		for _, k := range slices.Sorted(maps.Keys(h)) {
			if n, err := strconv.Atoi(k); err != nil || n < 1 || n > 5 {
				bars = append(bars, section.Bar{Label: k, Value: h[k]})
			}
		}
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "score-"+r), Title: "Difficulty score: " + r, Bars: bars, Histogram: true})
	}
	if bars := section.Pick(st, nil, "kept", "dropped", "unrated", "skipped_no_model"); len(bars) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "kept"), Title: "Kept versus dropped queries", Bars: bars})
	}
	return nil
}
