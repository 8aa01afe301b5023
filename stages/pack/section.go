package pack

import (
	"context"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// The report's section for pack: its similarity check (mean cosine within
// packed groups against random groups, "cos/within" and "cos/random") and
// its other counters.
func init() {
	section.Register(section.Spec{Type: "pack", Title: "Pack: grouped queries", Labels: statLabels, Build: buildSection})
}

var statLabels = map[string]string{
	"cos/within": "mean cosine within packed groups",
	"cos/random": "mean cosine within random groups",
}

func buildSection(_ context.Context, s section.Stage, in *section.Instance) error {
	if b := section.Pick(s.Stats, statLabels, "cos/within", "cos/random"); len(b) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "similarity"), Title: "Mean cosine similarity: within packed groups vs random groups", Bars: b})
	}
	rest := s
	rest.Stats = map[string]float64{}
	for k, v := range s.Stats {
		if !strings.HasPrefix(k, "cos/") && !strings.HasPrefix(k, "seconds/") && !strings.HasPrefix(k, "skipped") {
			rest.Stats[k] = v
		}
	}
	section.Generic(rest, in)
	return nil
}
