// Package section is what a stage gives the run report: the title, the
// charts and the readable names of the statistics of its part of the
// report. The report (internal/report) renders what stages register here
// and names none of them.
//
// A stage with a report section registers it in its own package, in one
// line of an init function:
//
//	func init() { section.Register(section.Spec{Type: "upper", Title: "Upper: shouted queries", Build: buildSection}) }
//
// The report reads a finished run's manifest without building any stage,
// so sections are found by the stage type recorded there. A stage type
// without a section gets the generic charts (Generic).
package section

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/schema"
)

// Bar is one labelled value of a chart.
type Bar struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

// Series is one row of a stacked chart: a label and its parts in legend order.
type Series struct {
	Label string  `json:"label"`
	Parts []Bar   `json:"parts"`
	Total float64 `json:"total"`
}

// Chart is one figure of the report. Exactly one of Bars and Rows is used:
// Bars draws a bar chart (vertical when Histogram is set), Rows a stacked
// horizontal chart with a legend. Percent formats values as percentages.
type Chart struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Bars      []Bar    `json:"bars,omitempty"`
	Rows      []Series `json:"rows,omitempty"`
	Histogram bool     `json:"histogram,omitempty"`
	Percent   bool     `json:"percent,omitempty"`
}

// Leak is one benchmark's leakage result: the report's leakage table and
// the dataset card's contamination paragraph show them.
type Leak struct {
	Stage     string  `json:"stage"`
	Benchmark string  `json:"benchmark"`
	LineRatio float64 `json:"line_ratio"`
	Flagged   int     `json:"flagged"`
	Dialogues int     `json:"dialogues"`
	TasksHit  int     `json:"tasks_hit,omitempty"`
}

// Stage is one stage instance of a finished run, as a builder reads it.
type Stage struct {
	Name   string
	Type   string
	Status string
	// Stats are the statistics the stage recorded (manifest "stats").
	Stats map[string]float64
	// RunDir is the run directory, for side files the stage wrote there.
	RunDir string
	// Dialogues streams the dialogues of the stage's output; nil when the
	// output is not on disk (a stage that was not run, a pruned run).
	Dialogues func(ctx context.Context, each func(schema.Dialogue) error) error
}

// Instance is what a builder gives for one stage instance.
type Instance struct {
	Charts []Chart
	Notes  []string
	// Leaks and BenchmarksMissing feed the report's leakage table and the
	// dataset card: benchmarks checked, and benchmarks named but not found.
	Leaks             []Leak
	BenchmarksMissing int
}

// Spec is one section of the report.
type Spec struct {
	// Type names the section (HTML element id "section-"+Type).
	Type  string
	Title string
	// Stages are the stage types the section covers; empty means Type.
	Stages []string
	// Labels are readable names of statistic keys, for the report's
	// statistics tables and the bars Pick draws.
	Labels map[string]string
	// Build draws the charts of one stage instance; nil means Generic.
	Build func(ctx context.Context, s Stage, in *Instance) error
	// Leakage marks a stage that checks the data against benchmarks: the
	// dataset card names its instances where it says whether the data
	// was checked for leakage.
	Leakage bool
	// DatasetLabels are dialogue labels the stage writes that the dataset
	// summary counts, wherever in the pipeline the dataset comes from.
	DatasetLabels []DatasetLabel
}

// DatasetLabel is a dialogue label (schema.Dialogue.Labels) the dataset
// summary counts.
type DatasetLabel struct {
	Key string
	// Title names the counts by value in the dataset card ("bug kinds");
	// Chart, when set, is the title of the report's chart of them.
	Title, Chart string
	// Marked, instead of counts by value, counts the dialogues that carry
	// the label and says what that means ("labelled by the audit").
	Marked string
	// Sample: the report's sample of dialogues takes one of each value.
	Sample bool
}

// DatasetLabels lists every registered section's dataset labels, the
// sections in order of type, so the summary reads the same whatever order
// the stage packages were initialised in.
func DatasetLabels() []DatasetLabel {
	mu.Lock()
	defer mu.Unlock()
	sorted := slices.Clone(specs)
	slices.SortFunc(sorted, func(a, b Spec) int { return strings.Compare(a.Type, b.Type) })
	var out []DatasetLabel
	for _, s := range sorted {
		out = append(out, s.DatasetLabels...)
	}
	return out
}

var (
	mu    sync.Mutex
	specs []Spec
)

// Register adds a section; call it from the stage package's init. A stage
// type covered twice panics: two sections cannot share a stage.
func Register(s Spec) {
	if len(s.Stages) == 0 {
		s.Stages = []string{s.Type}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, o := range specs {
		for _, t := range s.Stages {
			if o.Type == s.Type || slices.Contains(o.Stages, t) {
				panic(fmt.Sprintf("section: stage type %s registered twice (sections %s and %s)", t, o.Type, s.Type))
			}
		}
	}
	specs = append(specs, s)
}

// For returns the section that covers stageType.
func For(stageType string) (Spec, bool) {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range specs {
		if slices.Contains(s.Stages, stageType) {
			return s, true
		}
	}
	return Spec{}, false
}

// Label is the readable name of a statistic key: the section's own, else
// the key.
func (s Spec) Label(key string) string {
	if l := s.Labels[key]; l != "" {
		return l
	}
	return key
}

// ChartID is a chart's HTML id, unique per stage instance and figure.
func ChartID(stage, what string) string {
	r := strings.NewReplacer("/", "-", ".", "-", " ", "-", "_", "-")
	return "chart-" + r.Replace(stage) + "-" + r.Replace(what)
}

// Pick returns the bars for the named keys that are present, labelled
// with labels (nil: the keys).
func Pick(stats map[string]float64, labels map[string]string, keys ...string) []Bar {
	var out []Bar
	for _, k := range keys {
		if v, ok := stats[k]; ok {
			l := labels[k]
			if l == "" {
				l = k
			}
			out = append(out, Bar{Label: l, Value: v})
		}
	}
	return out
}

// Under returns the statistics directly under prefix, keyed by the rest
// of their key ("score/x/3" is not under "score/").
func Under(stats map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range stats {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			out[rest] = v
		}
	}
	return out
}

// Bars turns counts into bars: numeric labels in numeric order, others by
// descending count then label.
func Bars[N int | float64](m map[string]N) []Bar {
	bars := make([]Bar, 0, len(m))
	numeric := true
	for k, v := range m {
		bars = append(bars, Bar{Label: k, Value: float64(v)})
		if _, err := strconv.ParseFloat(k, 64); err != nil {
			numeric = false
		}
	}
	sort.Slice(bars, func(i, j int) bool {
		if numeric {
			a, _ := strconv.ParseFloat(bars[i].Label, 64)
			b, _ := strconv.ParseFloat(bars[j].Label, 64)
			return a < b
		}
		if bars[i].Value != bars[j].Value {
			return bars[i].Value > bars[j].Value
		}
		return bars[i].Label < bars[j].Label
	})
	return bars
}

// Generic charts the statistics of a stage with no section of its own:
// one chart per key prefix ("groups/2", "groups/3" -> "groups"), one for
// the plain counters.
func Generic(s Stage, in *Instance) {
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
		in.Charts = append(in.Charts, Chart{ID: ChartID(s.Name, "counters"), Title: "Counters", Bars: Bars(plain)})
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		in.Charts = append(in.Charts, Chart{ID: ChartID(s.Name, g), Title: g, Bars: Bars(groups[g])})
	}
}
