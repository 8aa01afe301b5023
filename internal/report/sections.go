package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// sectionKind is one report section: the stage types it covers and how it
// turns a stage's statistics into charts.
type sectionKind struct {
	typ   string
	title string
	types []string
	build func(ctx context.Context, d *Data, s *pipeline.StageRecord, in *Instance) error
}

// sectionKinds are the stage sections in pipeline order. The keys each
// builder reads are the ones the stage packages write (see their Observe
// functions); a builder draws only what is present.
var sectionKinds = []sectionKind{
	{"filter", "Filter: difficulty and near-duplicates", []string{"filter", "dedup"}, buildFilter},
	{"pack", "Pack: grouped queries", []string{"pack"}, buildPack},
	{"simulate", "Simulate: execution feedback", []string{"simulate"}, buildSimulate},
	{"correct", "Correct: planted bugs", []string{"correct"}, buildCorrect},
	{"interact", "Interact: InterCode episodes", []string{"interact"}, buildInteract},
	{"audit", "Audit: benchmark leakage", []string{"audit"}, buildAudit},
}

func (d *Data) buildSections(ctx context.Context) error {
	covered := map[string]bool{}
	for _, k := range sectionKinds {
		sec := Section{Type: k.typ, Title: k.title}
		for _, t := range k.types {
			covered[t] = true
		}
		for i := range d.Manifest.Stages {
			s := &d.Manifest.Stages[i]
			if !contains(k.types, s.Type) || len(s.Stats) == 0 {
				continue
			}
			in := Instance{Name: s.Name, Status: s.Status, Stats: allStats(s.Stats)}
			in.Notes = skippedNotes(s.Stats)
			if err := k.build(ctx, d, s, &in); err != nil {
				return err
			}
			sec.Instances = append(sec.Instances, in)
		}
		sec.NotRun = len(sec.Instances) == 0
		d.Sections = append(d.Sections, sec)
	}
	other := Section{Type: "other", Title: "Other stages"}
	for i := range d.Manifest.Stages {
		s := &d.Manifest.Stages[i]
		if covered[s.Type] || len(s.Stats) == 0 {
			continue
		}
		in := Instance{Name: s.Name, Status: s.Status, Stats: allStats(s.Stats)}
		if err := buildGeneric(ctx, d, s, &in); err != nil {
			return err
		}
		other.Instances = append(other.Instances, in)
	}
	if len(other.Instances) > 0 {
		d.Sections = append(d.Sections, other)
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func chartID(stage, what string) string {
	r := strings.NewReplacer("/", "-", ".", "-", " ", "-", "_", "-")
	return "chart-" + r.Replace(stage) + "-" + r.Replace(what)
}

// pick returns the bars for the named scalar keys that are present.
func pick(stats map[string]float64, keys ...string) []Bar {
	var out []Bar
	for _, k := range keys {
		if v, ok := stats[k]; ok {
			out = append(out, Bar{Label: k, Value: v})
		}
	}
	return out
}

func buildFilter(_ context.Context, _ *Data, s *pipeline.StageRecord, in *Instance) error {
	st := s.Stats
	if s.Type == "dedup" {
		bars := pick(st, "queries", "kept")
		for _, b := range statBars(withPrefix(st, "dropped/")) {
			bars = append(bars, Bar{Label: "dropped: " + b.Label, Value: b.Value})
		}
		if len(bars) > 0 {
			in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "kept"), Title: "Near-duplicate removal", Bars: bars})
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
	for _, r := range sortedKeys(rubrics) {
		h := withPrefix(st, "score/"+r+"/")
		bars := make([]Bar, 0, len(h))
		for _, b := range []string{"1", "2", "3", "4", "5"} {
			bars = append(bars, Bar{Label: b, Value: h[b]})
		}
		for _, k := range sortedKeys(h) {
			if n, err := strconv.Atoi(k); err != nil || n < 1 || n > 5 {
				bars = append(bars, Bar{Label: k, Value: h[k]})
			}
		}
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "score-"+r), Title: "Difficulty score: " + r, Bars: bars, Histogram: true})
	}
	if bars := pick(st, "kept", "dropped", "unrated", "skipped_no_model"); len(bars) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "kept"), Title: "Kept versus dropped queries", Bars: bars})
	}
	return nil
}

func buildSimulate(_ context.Context, _ *Data, s *pipeline.StageRecord, in *Instance) error {
	st := s.Stats
	if b := statBars(withPrefix(st, "dialogues/")); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "status"), Title: "Dialogues by final status", Bars: b})
	}
	if b := statBars(withPrefix(st, "turns/")); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "turns"), Title: "Messages per dialogue", Bars: b, Histogram: true})
	}
	if rows := outcomeRows(st); len(rows) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "outcomes"), Title: "Execution outcomes per iteration", Rows: rows})
	}
	if b := statBars(withPrefix(st, "feedback/category/")); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "feedback"), Title: "Feedback categories", Bars: b})
	}
	if b := pick(st, "feedback/oracle", "feedback/non_oracle"); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "oracle"), Title: "Feedback with and without the reference solution", Bars: b})
	}
	return nil
}

// outcomeRows reads simulate's "outcome/<iteration>/<kind>" counters into
// one stacked row per iteration: numbered iterations first, in order, then
// the others ("t2.1", "fb1.1") sorted.
func outcomeRows(st map[string]float64) []Series {
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
	var rows []Series
	for _, it := range its {
		r := Series{Label: "iteration " + it}
		for _, b := range statBars(byIt[it]) {
			r.Parts = append(r.Parts, b)
			r.Total += b.Value
		}
		rows = append(rows, r)
	}
	return rows
}

func buildCorrect(ctx context.Context, d *Data, s *pipeline.StageRecord, in *Instance) error {
	st := s.Stats
	kinds := map[string]float64{}
	discarded := map[string]float64{}
	tried, kept := map[string]float64{}, map[string]float64{}
	for k, v := range st {
		if op, ok := strings.CutPrefix(k, "mutants/tried/"); ok {
			tried[op] = v
		}
		if op, ok := strings.CutPrefix(k, "mutants/kept/"); ok {
			kept[op] = v
		}
		if rest, ok := strings.CutPrefix(k, "dialogues."); ok {
			kinds[or(rest, "unlabelled")] = v
		}
		if rest, ok := strings.CutPrefix(k, "discarded."); ok {
			discarded[rest] = v
		}
	}
	if len(kinds) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "kinds"), Title: "Dialogues per bug kind", Bars: statBars(kinds)})
	}
	if len(discarded) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "discarded"), Title: "Model answers discarded per bug kind", Bars: statBars(discarded)})
	}
	// Stages since item statistics count the mutants tried and kept per
	// operator; the yield is their ratio.
	if len(tried) > 0 {
		yield := map[string]float64{}
		for op, n := range tried {
			if n > 0 {
				yield[fmt.Sprintf("%s (%d/%d)", op, int64(kept[op]), int64(n))] = kept[op] / n
			}
		}
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "yield"), Title: "Mutation operator yield (mutants kept / tried per operator)", Bars: statBars(yield), Percent: true})
	}
	// Dialogues carry their operator in a label, so the dialogues kept per
	// operator are counted from the stage's output.
	if s.Output == "" || !fileExists(filepath.Join(d.RunDir, s.Output)) {
		return nil
	}
	ops := map[string]int{}
	err := d.dialogues(ctx, s, func(dl schema.Dialogue) error {
		if dl.Stage == "correct" && dl.Labels["mutation_op"] != "" {
			ops[dl.Labels["mutation_op"]]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(ops) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "operators"), Title: "Dialogues kept per mutation operator", Bars: sortedBars(ops)})
	}
	return nil
}

// auditFile is the part of the audit stage's RUN/<name>.report.json the
// report reads.
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

func buildAudit(_ context.Context, d *Data, s *pipeline.StageRecord, in *Instance) error {
	st := s.Stats
	var rep *auditFile
	b, err := os.ReadFile(filepath.Join(d.RunDir, s.Name+".report.json"))
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
		d.BenchmarksMissing += int(n)
		in.Notes = append(in.Notes, fmt.Sprintf("%d named benchmark(s) were not found: leakage was NOT checked against them", int(n)))
	}
	ratios := withPrefix(st, "line_ratio/")
	flagged := withPrefix(st, "flagged/")
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
	for _, name := range sortedKeys(ratios) {
		d.Leakage = append(d.Leakage, Leak{Stage: s.Name, Benchmark: name, LineRatio: ratios[name],
			Flagged: int(flagged[name]), Dialogues: dialogues, TasksHit: tasksHit[name]})
	}
	if len(ratios) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "ratio"), Title: "Share of code lines also in the benchmark", Bars: statBars(ratios), Percent: true})
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "flagged"), Title: "Dialogues flagged per benchmark", Bars: statBars(flagged)})
	}
	return nil
}

// skippedNotes states the items a stage passed over for want of a model
// ("skipped/no_model" in pack, simulate, explain; "skipped_no_model" in filter).
func skippedNotes(st map[string]float64) []string {
	var notes []string
	for _, k := range []string{"skipped/no_model", "skipped_no_model"} {
		if n := st[k]; n > 0 {
			notes = append(notes, fmt.Sprintf("%d items passed through unchanged: no model configured for this stage", int(n)))
		}
	}
	return notes
}

// buildPack draws pack's similarity check (mean cosine within packed groups
// against random groups: "cos/within", "cos/random") and its other counters.
func buildPack(ctx context.Context, d *Data, s *pipeline.StageRecord, in *Instance) error {
	if b := pick(s.Stats, "cos/within", "cos/random"); len(b) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "similarity"), Title: "Mean cosine similarity: within packed groups vs random groups", Bars: b})
	}
	rest := &pipeline.StageRecord{Name: s.Name, Stats: map[string]float64{}}
	for k, v := range s.Stats {
		if !strings.HasPrefix(k, "cos/") && !strings.HasPrefix(k, "seconds/") && !strings.HasPrefix(k, "skipped") {
			rest.Stats[k] = v
		}
	}
	return buildGeneric(ctx, d, rest, in)
}

// buildGeneric charts stats of a stage the report has no special view for:
// one chart per key prefix ("groups/2", "groups/3" -> "groups"), one for
// the plain counters.
func buildGeneric(_ context.Context, _ *Data, s *pipeline.StageRecord, in *Instance) error {
	groups := map[string]map[string]float64{}
	plain := map[string]float64{}
	for k, v := range s.Stats {
		i := strings.LastIndexAny(k, "/.")
		if i < 0 {
			plain[k] = v
			continue
		}
		if groups[k[:i]] == nil {
			groups[k[:i]] = map[string]float64{}
		}
		groups[k[:i]][k[i+1:]] = v
	}
	if len(plain) > 0 {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, "counters"), Title: "Counters", Bars: statBars(plain)})
	}
	for _, g := range sortedKeys(groups) {
		in.Charts = append(in.Charts, Chart{ID: chartID(s.Name, g), Title: g, Bars: statBars(groups[g])})
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
