package report

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// DefaultSample is the number of dialogues the report shows when
// Options.Sample is 0.
const DefaultSample = 100

// maxDeadShown caps the dead letters listed (the count is always complete).
const maxDeadShown = 50

// Options shape a report and its dataset card.
type Options struct {
	// Sample is how many dialogues the report renders (0: DefaultSample,
	// negative: none). The sample is deterministic: the first dialogue of
	// every (stage, method, kind) group, then the rest in output order.
	Sample int
	// License is the card's license field ("" = "unknown").
	License string
	// Now stamps the report; nil means time.Now.
	Now func() time.Time
}

// Data is everything the report shows, computed from a run directory. It is
// embedded in the HTML as JSON (element #report-data) so tests and tools
// can read the numbers the page displays.
type Data struct {
	RunDir    string             `json:"run_dir"`
	Generated time.Time          `json:"generated"`
	Manifest  *pipeline.Manifest `json:"manifest"`
	Seconds   float64            `json:"seconds"`
	Stages    []StageSummary     `json:"stages"`
	Sections  []Section          `json:"sections"`
	Dataset   DatasetStats       `json:"dataset"`
	Leakage   []Leak             `json:"leakage"`
	// InputLicenses is what is known of each input's licence, in the
	// manifest's input order; the card's licence derives from it.
	InputLicenses []InputLicense `json:"input_licenses"`
	// BenchmarksMissing counts benchmarks an audit was told to check but
	// could not find (audit setting missing: skip).
	BenchmarksMissing int          `json:"benchmarks_missing"`
	Dead              []DeadLetter `json:"dead_letters"`
	// Gates are the quality gates' figures per stage (internal/gates).
	Gates     []GateRow `json:"gates"`
	DeadTotal int64     `json:"dead_total"`
	// Tripped are the gates that tripped a stage (from the manifest);
	// Quarantine the first rejections of RUN/quarantine.jsonl.
	Tripped         []TripRow            `json:"gates_tripped"`
	Quarantine      []pipeline.Rejection `json:"quarantine"`
	QuarantineTotal int64                `json:"quarantine_total"`
	QuarantineFile  string               `json:"quarantine_file,omitempty"`
	SampleIDs       []string             `json:"sample_ids"`

	sample  []schema.Dialogue
	options Options
}

// GateRow is one quality gate of one stage: items checked and rejected,
// by reason.
type GateRow struct {
	Stage    string             `json:"stage"`
	Gate     string             `json:"gate"`
	Checked  float64            `json:"checked"`
	Rejected float64            `json:"rejected"`
	Share    float64            `json:"share"`
	Reasons  map[string]float64 `json:"reasons,omitempty"`
}

// TripRow is a tripped gate with its message.
type TripRow struct {
	pipeline.GateTrip
	Message string `json:"message"`
}

// StageSummary is one row of the stage table.
type StageSummary struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Counts  pipeline.Counts `json:"counts"`
	Seconds float64         `json:"seconds"`
	Usage   pipeline.Usage  `json:"usage"`
	// CacheHit is cached / in (0 when nothing came in).
	CacheHit float64 `json:"cache_hit"`
	Error    string  `json:"error,omitempty"`
}

// Section is one stage type's part of the report (element id "section-"+Type).
// NotRun is set when no stage of the type has statistics in this run.
type Section struct {
	Type      string     `json:"type"`
	Title     string     `json:"title"`
	NotRun    bool       `json:"not_run"`
	Instances []Instance `json:"instances,omitempty"`
}

// Instance is one stage instance within a section.
type Instance struct {
	Name   string   `json:"name"`
	Status string   `json:"status"`
	Charts []Chart  `json:"charts"`
	Stats  []Stat   `json:"stats"` // every statistic, sorted by key
	Notes  []string `json:"notes,omitempty"`
}

// Stat is one statistic of a stage: its readable name (the key where its
// section names none), the key, and the value.
type Stat struct {
	Label string  `json:"label"`
	Key   string  `json:"key,omitempty"` // set where Label is not the key
	Value float64 `json:"value"`
}

// DatasetStats are counted from the dialogues of the run's final output.
type DatasetStats struct {
	// From is the stage whose output holds the dataset ("" when none).
	From      string `json:"from"`
	Dialogues int    `json:"dialogues"`
	// Messages counts dialogues by number of messages (turns).
	Messages   map[string]int `json:"messages"`
	Executions int            `json:"executions"`
	// Outcomes are execution outcomes by position of the execution turn
	// in its dialogue (iteration 1, 2, ...).
	Outcomes    []IterationOutcomes `json:"outcomes"`
	Methods     map[string]int      `json:"methods"`
	Stages      map[string]int      `json:"stages"`
	FinalStatus map[string]int      `json:"final_status"`
	// Labels counts dialogues by the value of each label a stage's
	// report section names (section.DatasetLabels), by label key; a
	// Marked label counts under "" the dialogues that carry it.
	Labels   map[string]map[string]int `json:"labels,omitempty"`
	Feedback map[string]int            `json:"feedback,omitempty"`
	Models   map[string]int            `json:"models,omitempty"`
	Prompts  map[string]int            `json:"prompt_versions,omitempty"`
	// Diversity: distinct first and closing turns, template share,
	// repeated openings.
	Diversity schema.DiversitySummary `json:"diversity"`
}

// countLabels counts dl's labels that sections name, and returns the
// values of those the report's sample takes one dialogue of each of.
func (ds *DatasetStats) countLabels(labels []section.DatasetLabel, dl *schema.Dialogue) (sample string) {
	for _, l := range labels {
		v := dl.Labels[l.Key]
		if l.Sample {
			sample += "\x00" + v
		}
		if v == "" {
			continue
		}
		if l.Marked != "" {
			v = ""
		}
		if ds.Labels == nil {
			ds.Labels = map[string]map[string]int{}
		}
		if ds.Labels[l.Key] == nil {
			ds.Labels[l.Key] = map[string]int{}
		}
		ds.Labels[l.Key][v]++
	}
	return sample
}

// labelCounts are the dataset's counts by value of each label a report
// section names with a Title, in section order, after the counts named
// first: what the dataset card lists.
func (ds DatasetStats) labelCounts() []namedCounts {
	var out []namedCounts
	for _, l := range section.DatasetLabels() {
		if l.Title != "" && l.Marked == "" {
			out = append(out, namedCounts{l.Title, ds.Labels[l.Key]})
		}
	}
	return out
}

type namedCounts struct {
	name string
	m    map[string]int
}

// Marked says how many dialogues carry each Marked label ("3 labelled by
// the audit"), for the report's dataset line.
func (ds DatasetStats) Marked() []string {
	var out []string
	for _, l := range section.DatasetLabels() {
		if n := ds.Labels[l.Key][""]; l.Marked != "" && n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, l.Marked))
		}
	}
	return out
}

// IterationOutcomes are the outcome counts of the n-th execution turns.
type IterationOutcomes struct {
	Iteration int            `json:"iteration"`
	Kinds     map[string]int `json:"kinds"`
}

// Leak is one benchmark's leakage result (section.Leak).
type Leak = section.Leak

// DeadLetter is one failed item of the run.
type DeadLetter struct {
	Stage     string `json:"stage"`
	ItemID    string `json:"item_id"`
	Error     string `json:"error"`
	Attempts  int    `json:"attempts"`
	Permanent bool   `json:"permanent,omitempty"`
}

// Outcome names what one execution record shows: "pass" (tests passed),
// "timeout", "oom", the exception type, "fail" (tests failed without an
// exception), "exit-N" (non-zero exit), or "ok" (ran, no tests).
func Outcome(e *schema.Execution) string {
	switch {
	case e.Passed != nil && *e.Passed:
		return "pass"
	case e.TimedOut:
		return "timeout"
	case e.OOM:
		return "oom"
	case e.Exception != "":
		return e.Exception
	case e.Passed != nil:
		return "fail"
	case e.ExitCode != 0:
		return "exit-" + strconv.Itoa(e.ExitCode)
	}
	return "ok"
}

// Collect reads a run directory (manifest, stage outputs, dead letters,
// audit reports) into Data. It fails only when the manifest is missing or
// unreadable, or a stage output the manifest names cannot be read.
func Collect(ctx context.Context, runDir string, o Options) (*Data, error) {
	m, err := pipeline.ReadManifest(runDir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	d := &Data{RunDir: runDir, Generated: now().UTC(), Manifest: m, options: o}
	for _, in := range m.Inputs {
		if !fileExists(in.Path) && !filepath.IsAbs(in.Path) && m.Pipeline != "" {
			// Inputs are relative to the pipeline file.
			if p := filepath.Join(filepath.Dir(m.Pipeline), in.Path); fileExists(p) {
				in.Path = p
			}
		}
		d.InputLicenses = append(d.InputLicenses, inputLicense(in))
	}
	if !m.Finished.IsZero() {
		d.Seconds = m.Finished.Sub(m.Started).Seconds()
	}
	for _, s := range m.Stages {
		ss := StageSummary{Name: s.Name, Type: s.Type, Status: s.Status, Counts: s.Counts, Seconds: s.Seconds, Usage: s.Usage, Error: s.Error}
		if s.Counts.In > 0 {
			ss.CacheHit = float64(s.Counts.Cached) / float64(s.Counts.In)
		}
		d.Stages = append(d.Stages, ss)
		for _, f := range gates.Figures(s.Stats) {
			d.Gates = append(d.Gates, GateRow{Stage: s.Name, Gate: f.Gate, Checked: f.Checked, Rejected: f.Rejected, Share: f.Share(), Reasons: f.Reasons})
		}
		if n := s.Stats["calibration/verdicts"]; n > 0 {
			d.Gates = append(d.Gates, GateRow{Stage: s.Name, Gate: "judge_calibration (disagreements with the tests)", Checked: n,
				Rejected: n - s.Stats["calibration/agree"], Share: 1 - s.Stats["calibration/agree"]/n,
				Reasons: map[string]float64{"false_accept": s.Stats["calibration/false_accept"], "false_reject": s.Stats["calibration/false_reject"]}})
		}
	}
	if err := d.readDead(); err != nil {
		return nil, err
	}
	if err := d.readQuarantine(); err != nil {
		return nil, err
	}
	if err := d.readDataset(ctx); err != nil {
		return nil, err
	}
	if err := d.buildSections(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Data) readDead() error {
	d.DeadTotal = d.Manifest.DeadCount
	var err error
	d.Dead, _, err = readFirst[DeadLetter](d.RunDir, d.Manifest.DeadFile, "dead-letters.jsonl")
	return err
}

// readQuarantine reads the tripped gates and the first rejections.
func (d *Data) readQuarantine() error {
	for _, g := range d.Manifest.Gates {
		d.Tripped = append(d.Tripped, TripRow{GateTrip: g, Message: g.Message()})
	}
	d.QuarantineTotal = d.Manifest.QuarantineCount
	var err error
	d.Quarantine, d.QuarantineFile, err = readFirst[pipeline.Rejection](d.RunDir, d.Manifest.QuarantineFile, "quarantine.jsonl")
	return err
}

// readFirst reads the first maxDeadShown records of a run's side file:
// path as the manifest names it, else name in the run directory (a run
// directory that moved). Lines that do not decode are skipped. It returns
// the file read, "" when there is none.
func readFirst[T any](runDir, path, name string) ([]T, string, error) {
	if path == "" || !fileExists(path) {
		path = filepath.Join(runDir, name)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() && len(out) < maxDeadShown {
		var v T
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			out = append(out, v)
		}
	}
	return out, path, sc.Err()
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// datasetStage picks the stage whose output is the dataset: the source of
// the first published dialogue output, else of the first output, else the
// last stage that has an output.
func (d *Data) datasetStage() *pipeline.StageRecord {
	m := d.Manifest
	find := func(name string) *pipeline.StageRecord {
		for i := range m.Stages {
			if m.Stages[i].Name == name && m.Stages[i].Output != "" {
				return &m.Stages[i]
			}
		}
		return nil
	}
	for _, o := range m.Outputs {
		if o.Kind == pipeline.KindDialogue {
			if s := find(o.From); s != nil {
				return s
			}
		}
	}
	for _, o := range m.Outputs {
		if s := find(o.From); s != nil {
			return s
		}
	}
	for i := len(m.Stages) - 1; i >= 0; i-- {
		if m.Stages[i].Output != "" {
			return &m.Stages[i]
		}
	}
	return nil
}

// dialogues streams the dialogue items of a stage's output in the run dir.
func (d *Data) dialogues(ctx context.Context, s *pipeline.StageRecord, each func(schema.Dialogue) error) error {
	n := 0
	for it, err := range pipeline.ReadOutput(ctx, d.RunDir, s.Output) {
		if err != nil {
			return fmt.Errorf("report: stage %s output: %w", s.Name, err)
		}
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if it.Kind != pipeline.KindDialogue {
			continue
		}
		var dl schema.Dialogue
		if err := it.Decode(&dl); err != nil {
			return fmt.Errorf("report: stage %s output, item %d: %w", s.Name, n, err)
		}
		if err := each(dl); err != nil {
			return err
		}
	}
	return nil
}

func inc(m *map[string]int, k string) {
	if k == "" {
		return
	}
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

func (d *Data) readDataset(ctx context.Context) error {
	s := d.datasetStage()
	ds := &d.Dataset
	ds.Messages, ds.Methods, ds.Stages, ds.FinalStatus = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	if s == nil {
		return nil
	}
	ds.From = s.Name
	want := d.options.Sample
	if want == 0 {
		want = DefaultSample
	}
	// The summary is a function of the output's lines and the sample size:
	// an unchanged re-run takes it from the last report instead of decoding
	// every dialogue again (which was most of such a run's CPU).
	key := datasetKey(d.RunDir, s, want)
	if d.loadDataset(key) {
		return nil
	}
	if err := d.scanDataset(ctx, s, want); err != nil {
		return err
	}
	d.saveDataset(key)
	return nil
}

// datasetCacheFile keeps the last dataset summary in the run directory.
const datasetCacheFile = ".report-dataset.json"

// datasetCacheVersion: bump when scanDataset counts differently.
const datasetCacheVersion = "2"

type datasetCache struct {
	Key     string            `json:"key"`
	Dataset DatasetStats      `json:"dataset"`
	Sample  []schema.Dialogue `json:"sample"`
}

// datasetKey names a stage output's summary: "" (no caching) when the
// output's hash is unknown.
func datasetKey(runDir string, s *pipeline.StageRecord, want int) string {
	h := pipeline.StageOutHash(runDir, s.Name)
	if h == "" {
		return ""
	}
	labels := ""
	for _, l := range section.DatasetLabels() {
		labels += fmt.Sprintf("%+v;", l)
	}
	return strings.Join([]string{datasetCacheVersion, s.Name, s.Output, h, strconv.Itoa(want), labels}, "\t")
}

func (d *Data) loadDataset(key string) bool {
	if key == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(d.RunDir, datasetCacheFile))
	if err != nil {
		return false
	}
	var c datasetCache
	if json.Unmarshal(b, &c) != nil || c.Key != key {
		return false
	}
	d.Dataset, d.sample = c.Dataset, c.Sample
	for _, dl := range d.sample {
		d.SampleIDs = append(d.SampleIDs, dl.ID)
	}
	return true
}

// saveDataset keeps the summary for the next report; failing to is not an
// error (the next report scans again).
func (d *Data) saveDataset(key string) {
	if key == "" {
		return
	}
	b, err := json.Marshal(datasetCache{Key: key, Dataset: d.Dataset, Sample: d.sample})
	if err != nil {
		return
	}
	p := filepath.Join(d.RunDir, datasetCacheFile)
	tmp := p + ".tmp"
	if os.WriteFile(tmp, b, 0o644) != nil || os.Rename(tmp, p) != nil {
		os.Remove(tmp)
	}
}

// scanDataset reads the dataset stage's output into d.Dataset and the sample.
func (d *Data) scanDataset(ctx context.Context, s *pipeline.StageRecord, want int) error {
	ds := &d.Dataset
	labels := section.DatasetLabels()
	var rest []schema.Dialogue
	groups := map[string]bool{}
	var dv schema.Diversity
	defer func() { ds.Diversity = dv.Summary(5) }()
	err := d.dialogues(ctx, s, func(dl schema.Dialogue) error {
		ds.Dialogues++
		dv.Add(&dl)
		ds.Messages[strconv.Itoa(len(dl.Messages))]++
		inc(&ds.Methods, or(dl.Method, "unknown"))
		inc(&ds.Stages, or(dl.Stage, "unknown"))
		inc(&ds.FinalStatus, or(dl.Labels["final_status"], "unlabelled"))
		g := dl.Stage + "\x00" + dl.Method + "\x00" + dl.Labels["final_status"] + ds.countLabels(labels, &dl)
		inc(&ds.Models, dl.Model)
		inc(&ds.Prompts, dl.Prompt)
		n := 0
		for _, msg := range dl.Messages {
			if msg.Feedback != nil {
				inc(&ds.Feedback, msg.Feedback.Category)
			}
			if msg.Role != schema.RoleExecution || msg.Exec == nil {
				continue
			}
			n++
			ds.Executions++
			for len(ds.Outcomes) < n {
				ds.Outcomes = append(ds.Outcomes, IterationOutcomes{Iteration: len(ds.Outcomes) + 1, Kinds: map[string]int{}})
			}
			ds.Outcomes[n-1].Kinds[Outcome(msg.Exec)]++
		}
		if want < 0 {
			return nil
		}
		if !groups[g] && len(d.sample) < want {
			groups[g] = true
			d.sample = append(d.sample, dl)
		} else if len(rest) < want {
			rest = append(rest, dl)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, dl := range rest {
		if len(d.sample) >= want {
			break
		}
		d.sample = append(d.sample, dl)
	}
	for _, dl := range d.sample {
		d.SampleIDs = append(d.SampleIDs, dl.ID)
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sortedBars turns counts into bars: numeric labels in numeric order,
// others by descending count then label.
func sortedBars[N int | float64](m map[string]N) []Bar { return section.Bars(m) }
