package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// Manifest is the run's record, RUN/manifest.json, rewritten atomically after
// every stage. The report reads it.
type Manifest struct {
	Program   string         `json:"program"`
	Version   string         `json:"version"`
	Pipeline  string         `json:"pipeline"`
	RunDir    string         `json:"run_dir"`
	Status    string         `json:"status"` // running, complete, partial, stopped, failed, dry-run
	Message   string         `json:"message,omitempty"`
	Started   time.Time      `json:"started"`
	Finished  time.Time      `json:"finished,omitzero"`
	Options   RunFlags       `json:"options"`
	PhaseKey  string         `json:"phase_key,omitempty"` // a phase task's inputs and settings (phase.go)
	Executor  string         `json:"executor,omitempty"`
	Inputs    []InputRecord  `json:"inputs"`
	Stages    []StageRecord  `json:"stages"`
	Outputs   []OutputRecord `json:"outputs,omitempty"`
	Usage     Usage          `json:"usage"`
	Estimate  *Estimate      `json:"estimate,omitempty"` // dry-run: the stages' estimates summed
	DeadCount int64          `json:"dead_lettered"`
	DeadFile  string         `json:"dead_letters,omitempty"`
	// Quarantine is what quality gates rejected (QuarantineFile, one
	// Rejection a line) and Gates the gates that tripped a stage.
	QuarantineCount int64           `json:"quarantined"`
	QuarantineFile  string          `json:"quarantine,omitempty"`
	Gates           []GateTrip      `json:"gates_tripped,omitempty"`
	Extra           json.RawMessage `json:"extra,omitempty"`
	// History lists the earlier runs on this run directory, oldest first
	// (at most historyKeep); Total adds every earlier run and this one, so
	// an unchanged re-run that costs nothing does not erase what the
	// generation cost.
	History []RunSummary `json:"history,omitempty"`
	Total   RunTotal     `json:"total"`

	priorRead bool
	prior     RunTotal // every earlier run
}

// RunFlags are the command-line choices that shaped the run.
type RunFlags struct {
	Only    []string `json:"only,omitempty"`
	From    string   `json:"from,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Force   []string `json:"force,omitempty"`
	Shard   string   `json:"shard,omitempty"`
	Phase   *int     `json:"phase,omitempty"` // a phased run's task or merge (phase.go)
	MaxCost float64  `json:"max_cost,omitempty"`
	DryRun  bool     `json:"dry_run,omitempty"`
}

// InputRecord identifies one input file by content.
type InputRecord struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	// URL and Local, for an hf:// or http(s) input: what it resolved to
	// and the cached copy that was read (SHA256 is that copy's).
	URL    string `json:"url,omitempty"`
	Local  string `json:"local,omitempty"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	Items  int64  `json:"items"` // items read (before shard and limit)
}

// StageRecord is one stage's outcome in this run.
type StageRecord struct {
	Name     string             `json:"name"`
	Type     string             `json:"type"`
	Kind     string             `json:"kind"` // "each" or "all"
	Input    []string           `json:"input"`
	Settings json.RawMessage    `json:"settings"`
	Key      string             `json:"key"`    // hash of type, settings, version
	Status   string             `json:"status"` // ran, unchanged, gate-tripped, not-selected, waiting-for-merge, stopped, failed, dry-run
	Counts   Counts             `json:"counts"`
	Seconds  float64            `json:"seconds"`
	Usage    Usage              `json:"usage"`
	Stats    map[string]float64 `json:"stats,omitempty"`
	Output   string             `json:"output,omitempty"`
	Error    string             `json:"error,omitempty"`
	Estimate *Estimate          `json:"estimate,omitempty"` // dry-run: predicted usage of uncached items
	Gate     *GateTrip          `json:"gate,omitempty"`     // the gate that tripped the stage
}

// Counts are a stage's item counts. In = Cached + Fresh + Failed (+ items
// not reached when stopped); DeadLettered = Failed.
type Counts struct {
	In           int64 `json:"in"`
	Out          int64 `json:"out"`
	Cached       int64 `json:"cached"`
	Fresh        int64 `json:"fresh"`
	Failed       int64 `json:"failed"`
	DeadLettered int64 `json:"dead_lettered"`
	Retries      int64 `json:"retries"`
	WouldRun     int64 `json:"would_run,omitempty"` // dry-run: uncached items
	// Skipped items were not processed because a gate tripped (passed on
	// unchanged by a Bypasser, else quarantined); the next run does them.
	Skipped int64 `json:"skipped,omitempty"`
	// Quarantined counts the rejections written to the quarantine.
	Quarantined int64 `json:"quarantined,omitempty"`
}

// OutputRecord is one published output.
type OutputRecord struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	From   string `json:"from"`
	Kind   string `json:"kind,omitempty"`
	Items  int64  `json:"items"`
}

// ReadManifest reads RUN/manifest.json.
func ReadManifest(runDir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("pipeline: manifest: %w", err)
	}
	return &m, nil
}

func (m *Manifest) write(path string) error {
	m.carryHistory(path)
	m.Total = m.prior.add(m.Summary())
	if err := schema.WriteJSONAtomic(path, m); err != nil {
		return fmt.Errorf("pipeline: manifest: %w", err)
	}
	return nil
}

// RunSummary is one earlier run of a run directory, as its manifest ended.
type RunSummary struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Version  string    `json:"version,omitempty"`
	Status   string    `json:"status"`
	Usage    Usage     `json:"usage"`
	Retries  int64     `json:"retries"`
	Fresh    int64     `json:"fresh"` // items computed (not from the store)
	Failed   int64     `json:"failed"`
}

// RunTotal sums runs of a run directory.
type RunTotal struct {
	Runs    int64 `json:"runs"`
	Usage   Usage `json:"usage"`
	Retries int64 `json:"retries"`
	Fresh   int64 `json:"fresh"`
	Failed  int64 `json:"failed"`
}

func (t RunTotal) add(s RunSummary) RunTotal {
	return RunTotal{Runs: t.Runs + 1, Usage: t.Usage.Add(s.Usage), Retries: t.Retries + s.Retries, Fresh: t.Fresh + s.Fresh, Failed: t.Failed + s.Failed}
}

// historyKeep bounds History; Total still counts every run.
const historyKeep = 200

// Summary is this run as a history entry.
func (m *Manifest) Summary() RunSummary {
	s := RunSummary{Started: m.Started, Finished: m.Finished, Version: m.Version, Status: m.Status, Usage: m.Usage}
	for _, st := range m.Stages {
		s.Retries += st.Counts.Retries
		s.Fresh += st.Counts.Fresh
		s.Failed += st.Counts.Failed
	}
	return s
}

// carryHistory takes the history of the manifest a previous run left at
// path (once per run, at the run's first write): its history and itself,
// and its total.
func (m *Manifest) carryHistory(path string) {
	if m.priorRead {
		return
	}
	m.priorRead = true
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var prev Manifest
	if json.Unmarshal(b, &prev) != nil || prev.Started.IsZero() || prev.Started.Equal(m.Started) {
		return
	}
	m.History = append(prev.History, prev.Summary())
	if n := len(m.History); n > historyKeep {
		m.History = m.History[n-historyKeep:]
	}
	// prev.Total includes prev itself; a manifest written before totals
	// existed has none: it counts as one run.
	m.prior = prev.Total
	if m.prior.Runs == 0 {
		m.prior = RunTotal{}.add(prev.Summary())
	}
}
