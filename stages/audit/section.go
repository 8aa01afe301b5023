package audit

// The report's section for audit: leakage per benchmark, from the stage's
// RUN/<name>.report.json.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

func init() {
	section.Register(section.Spec{Type: "audit", Title: "Audit: benchmark leakage", Build: buildAuditSection, Leakage: true,
		DatasetLabels: []section.DatasetLabel{{Key: "audit", Marked: "labelled by the audit"}}})
}

// auditFile is the part of the audit stage's RUN/<name>.report.json the
// section reads.
type auditFile struct {
	Dialogues  int     `json:"dialogues"`
	Flagged    int     `json:"flagged"`
	LineRatio  float64 `json:"line_ratio"`
	Benchmarks []struct {
		Name      string  `json:"name"`
		LineRatio float64 `json:"line_ratio"`
		Flagged   int     `json:"flagged"`
		TasksHit  int     `json:"tasks_hit"`
	} `json:"benchmarks"`
}

func buildAuditSection(_ context.Context, s section.Stage, in *section.Instance) error {
	st := s.Stats
	var rep *auditFile
	b, err := os.ReadFile(filepath.Join(s.RunDir, s.Name+".report.json"))
	switch {
	case err == nil:
		rep = &auditFile{}
		if err := json.Unmarshal(b, rep); err != nil {
			return fmt.Errorf("report: %s.report.json: %w", s.Name, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("report: %w", err)
	}
	if n := st["benchmarks_missing"]; n > 0 {
		in.BenchmarksMissing += int(n)
		in.Notes = append(in.Notes, fmt.Sprintf("%d named benchmark(s) were not found: leakage was NOT checked against them", int(n)))
	}
	ratios := section.Under(st, "line_ratio/")
	flagged := section.Under(st, "flagged/")
	dialogues := int(st["dialogues"])
	_, fromStats := st["dialogues"]
	// An unchanged audit (cached output) records only what Observe counts;
	// its report file from the run that computed it has the rest.
	if !fromStats && rep != nil {
		in.Notes = append(in.Notes, "leakage figures read from "+s.Name+".report.json (the stage's output was reused from an earlier run)")
		dialogues = rep.Dialogues
		for _, b := range rep.Benchmarks {
			ratios[b.Name] = b.LineRatio
			flagged[b.Name] = float64(b.Flagged)
		}
	}
	tasksHit := map[string]int{}
	if rep != nil {
		for _, b := range rep.Benchmarks {
			tasksHit[b.Name] = b.TasksHit
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ratios)) {
		in.Leaks = append(in.Leaks, section.Leak{Stage: s.Name, Benchmark: name, LineRatio: ratios[name],
			Flagged: int(flagged[name]), Dialogues: dialogues, TasksHit: tasksHit[name]})
	}
	if len(ratios) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "ratio"), Title: "Share of code lines also in the benchmark", Bars: section.Bars(ratios), Percent: true})
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "flagged"), Title: "Dialogues flagged per benchmark", Bars: section.Bars(flagged)})
	}
	return nil
}
