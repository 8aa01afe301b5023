package simulate

import (
	"context"
	"github.com/codefeedback/codefeedback/internal/feedbackloop"
	"sort"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// The report's section for simulate, drawn from the keys its Observe
// records.
func init() {
	section.Register(section.Spec{Type: "simulate", Title: "Simulate: execution feedback", Labels: statLabels, Build: buildSection})
}

var statLabels = map[string]string{
	"feedback/oracle":                            "feedback that saw the reference solution",
	"feedback/non_oracle":                        "feedback without the reference solution",
	"silent/" + feedbackloop.LabelDemonstrated:   "asked again, now printing a result",
	"silent/" + feedbackloop.LabelSilent:         "kept silent",
	"claims/" + feedbackloop.LabelClaimsRepaired: "answered again without it",
	"claims/" + feedbackloop.LabelClaimsCut:      "the claim cut out",
}

func buildSection(_ context.Context, s section.Stage, in *section.Instance) error {
	st := s.Stats
	chart := func(what, title string, bars []section.Bar, histogram bool) {
		if len(bars) > 0 {
			in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, what), Title: title, Bars: bars, Histogram: histogram})
		}
	}
	chart("status", "Dialogues by final status", section.Bars(section.Under(st, "dialogues/")), false)
	chart("turns", "Messages per dialogue", section.Bars(section.Under(st, "turns/")), true)
	if rows := outcomeRows(st); len(rows) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "outcomes"), Title: "Execution outcomes per iteration", Rows: rows})
	}
	chart("feedback", "Feedback categories", section.Bars(section.Under(st, "feedback/category/")), false)
	chart("oracle", "Feedback with and without the reference solution", section.Pick(st, statLabels, "feedback/oracle", "feedback/non_oracle"), false)
	chart("silent", "Test-less answers whose run printed nothing", section.Pick(st, statLabels, "silent/"+feedbackloop.LabelDemonstrated, "silent/"+feedbackloop.LabelSilent), false)
	chart("claims", "Answers that said, falsely, that empty or one-element input is handled", section.Pick(st, statLabels, "claims/"+feedbackloop.LabelClaimsRepaired, "claims/"+feedbackloop.LabelClaimsCut), false)
	return nil
}

// outcomeRows reads the "outcome/<iteration>/<kind>" counters into one
// stacked row per iteration: numbered iterations first, in order, then the
// others sorted. An iteration "t2.1" is the first run of a packed
// dialogue's second turn, "fb1.1" the first run of feedback round 1.
func outcomeRows(st map[string]float64) []section.Series {
	byIt := map[string]map[string]float64{}
	for k, v := range st {
		rest, ok := strings.CutPrefix(k, "outcome/")
		if !ok {
			continue
		}
		it, kind, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if byIt[it] == nil {
			byIt[it] = map[string]float64{}
		}
		byIt[it][kind] += v
	}
	its := make([]string, 0, len(byIt))
	for it := range byIt {
		its = append(its, it)
	}
	sort.Slice(its, func(i, j int) bool {
		a, ea := strconv.Atoi(its[i])
		b, eb := strconv.Atoi(its[j])
		switch {
		case ea == nil && eb == nil:
			return a < b
		case (ea == nil) != (eb == nil):
			return ea == nil
		}
		return its[i] < its[j]
	})
	var rows []section.Series
	for _, it := range its {
		r := section.Series{Label: iterationLabel(it)}
		for _, b := range section.Bars(byIt[it]) {
			r.Parts = append(r.Parts, b)
			r.Total += b.Value
		}
		rows = append(rows, r)
	}
	return rows
}

// iterationLabel names an iteration key for a reader: "run 2", "turn 2,
// run 1", "feedback round 1, run 1".
func iterationLabel(it string) string {
	if _, err := strconv.Atoi(it); err == nil {
		return "run " + it
	}
	for _, p := range []struct{ prefix, name string }{{"fb", "feedback round "}, {"t", "turn "}} {
		if rest, ok := strings.CutPrefix(it, p.prefix); ok {
			if n, run, ok := strings.Cut(rest, "."); ok {
				return p.name + n + ", run " + run
			}
		}
	}
	return "iteration " + it
}
