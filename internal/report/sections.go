package report

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// buildSections gives every stage type of the run that has a registered
// section (package section) its part of the report, in pipeline order,
// and the others one generic part ("Other stages"). The report names no
// stage: what a section shows is its stage package's.
func (d *Data) buildSections(ctx context.Context) error {
	var order []section.Spec
	byType := map[string]*Section{}
	other := Section{Type: "other", Title: "Other stages"}
	for i := range d.Manifest.Stages {
		s := &d.Manifest.Stages[i]
		spec, ok := section.For(s.Type)
		if ok && byType[spec.Type] == nil {
			order = append(order, spec)
			byType[spec.Type] = &Section{Type: spec.Type, Title: spec.Title}
		}
		if len(s.Stats) == 0 {
			continue
		}
		in := Instance{Name: s.Name, Status: s.Status, Stats: allStats(s.Stats, spec)}
		in.Notes = skippedNotes(s.Stats)
		out := section.Instance{}
		st := d.sectionStage(s)
		switch {
		case ok && spec.Build != nil:
			if err := spec.Build(ctx, st, &out); err != nil {
				return err
			}
		default:
			section.Generic(st, &out)
		}
		for _, c := range out.Charts {
			in.Charts = append(in.Charts, Chart(c))
		}
		in.Notes = append(in.Notes, out.Notes...)
		d.Leakage = append(d.Leakage, out.Leaks...)
		d.BenchmarksMissing += out.BenchmarksMissing
		if ok {
			byType[spec.Type].Instances = append(byType[spec.Type].Instances, in)
		} else {
			other.Instances = append(other.Instances, in)
		}
	}
	for _, spec := range order {
		sec := byType[spec.Type]
		sec.NotRun = len(sec.Instances) == 0
		d.Sections = append(d.Sections, *sec)
	}
	if len(other.Instances) > 0 {
		d.Sections = append(d.Sections, other)
	}
	return nil
}

// sectionStage is what a section builder reads of stage s.
func (d *Data) sectionStage(s *pipeline.StageRecord) section.Stage {
	st := section.Stage{Name: s.Name, Type: s.Type, Status: s.Status, Stats: s.Stats, RunDir: d.RunDir}
	if s.Output != "" && fileExists(filepath.Join(d.RunDir, s.Output)) {
		st.Dialogues = func(ctx context.Context, each func(schema.Dialogue) error) error {
			return d.dialogues(ctx, s, each)
		}
	}
	return st
}

// allStats lists every statistic of a stage sorted by key, named by its
// section's labels where it has one (the key stays beside it).
func allStats(stats map[string]float64, spec section.Spec) []Stat {
	keys := slices.Sorted(maps.Keys(stats))
	out := make([]Stat, len(keys))
	for i, k := range keys {
		out[i] = Stat{Label: spec.Label(k), Value: stats[k]}
		if out[i].Label != k {
			out[i].Key = k
		}
	}
	return out
}

// skippedNotes states the items a stage passed over for want of a model.
// Stages record them as "skipped/no_model" (older filter runs as
// "skipped_no_model"), a key shared by every stage that can run without one.
func skippedNotes(st map[string]float64) []string {
	var notes []string
	for _, k := range []string{"skipped/no_model", "skipped_no_model"} {
		if n := st[k]; n > 0 {
			notes = append(notes, fmt.Sprintf("%d items passed through unchanged: no model configured for this stage", int(n)))
		}
	}
	return notes
}
