package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/store"
)

// ItemsBucket is the store bucket of per-item stage results.
const ItemsBucket = "items"

// ErrStopped means the run stopped early on purpose (--max-cost reached):
// finished work is stored and the next run resumes.
var ErrStopped = errors.New("run stopped")

// ErrUsage is wrapped by errors in the run's options (an unknown stage in
// --only, --from or --force, a stage whose inputs do not exist yet): nothing
// ran.
var ErrUsage = errors.New("bad run options")

// RunOptions are the command-line choices of one run.
type RunOptions struct {
	Only    []string // run only these stages (their inputs must exist)
	From    string   // run this stage and every stage after it
	Limit   int      // use only the first N input items (of the whole input, before sharding)
	DryRun  bool     // show what would run and what is cached; change nothing
	Force   []string // recompute these stages, ignoring cached results
	Shard   Shard
	MaxCost float64     // stop dispatching new items once model cost reaches this (USD)
	Retry   RetryPolicy // zero: DefaultRetryPolicy
	// MaxFailed, when set, fails the run (ErrTooManyFailed, no output
	// published) once a stage's failed share passes it; nil: failed items
	// are only dead-lettered.
	MaxFailed *FailThreshold

	// Phased runs (phase.go) set these. Phase is the phase whose task or
	// merge this run is (nil: not a phased run); PhaseKey identifies what
	// a task's work depends on, so a resubmitted task that completed with
	// the same key is skipped; StageKeys are the stage keys the phase's
	// tasks computed, which its merge takes instead of opening the
	// executor only to identify it (the merge replays the tasks' stored
	// results and needs no sandbox); NoPublish leaves the outputs to the
	// last phase's merge.
	Phase     *int
	PhaseKey  string
	StageKeys map[string]string
	NoPublish bool

	Version          string       // program version for the manifest
	Logger           *slog.Logger // nil: discard
	Progress         io.Writer    // terminal for bars; nil or a non-terminal: log lines
	ProgressInterval time.Duration
}

var discardLogger = slog.New(slog.DiscardHandler)

type runner struct {
	cfg     *Config
	o       RunOptions
	log     *slog.Logger
	db      *store.Bolt
	dir     string // run dir
	outDir  string // where stage outputs go (run dir, or a scratch dir for dry-run)
	budget  *budget
	retry   RetryPolicy
	man     *Manifest
	done    map[string]*marker // completed (this run or before) stage outputs
	shapes  map[string][]Shape // dry-run: predicted output shapes of stages that would run
	model   ModelService
	embed   EmbedService
	trips   []GateTrip // gates that tripped a stage in this run
	execMu  sync.Mutex
	exec    executors.Executor
	execErr error
}

// Run runs a loaded pipeline. It returns the manifest (also written to
// RUN/manifest.json) and an error when the run did not complete: ErrLocked,
// ErrStopped, ctx's error, or a stage or store failure. Failed items are not
// errors: they are counted and dead-lettered.
func Run(ctx context.Context, cfg *Config, o RunOptions) (*Manifest, error) {
	r := &runner{cfg: cfg, o: o, log: o.Logger, dir: cfg.RunDir, outDir: cfg.RunDir,
		budget: &budget{limit: o.MaxCost}, retry: o.Retry.withDefaults(), done: map[string]*marker{},
		shapes: map[string][]Shape{}}
	if r.log == nil {
		r.log = discardLogger
	}
	if r.o.ProgressInterval == 0 {
		r.o.ProgressInterval = 10 * time.Second
	}
	lk, err := lockRunDir(r.dir)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	r.db, err = store.OpenBolt(filepath.Join(r.dir, "store.db"), false)
	if err != nil {
		return nil, err
	}
	defer r.db.Close()
	if o.DryRun {
		r.outDir = filepath.Join(r.dir, ".dry-run")
		os.RemoveAll(r.outDir)
		defer os.RemoveAll(r.outDir)
	}
	defer func() {
		if r.exec != nil {
			r.exec.Close()
		}
	}()
	r.man = &Manifest{Program: "codefeedback", Version: o.Version, Pipeline: cfg.File, RunDir: r.dir,
		Status: "running", Started: time.Now().UTC(), Executor: cfg.Executor,
		Options: RunFlags{Only: o.Only, From: o.From, Limit: o.Limit, Force: o.Force, Shard: o.Shard.String(), MaxCost: o.MaxCost, DryRun: o.DryRun}}
	r.man.Options.Phase, r.man.PhaseKey = o.Phase, o.PhaseKey
	switch {
	case o.Shard.Enabled():
		r.man.Options.Shard = o.Shard.String()
	case o.Phase != nil && o.Shard.Count == 1:
		r.man.Options.Shard = "0/1" // a phase of one task: still one of a shard set
	default:
		r.man.Options.Shard = ""
	}
	err = r.run(ctx)
	r.man.Finished = time.Now().UTC()
	switch {
	case o.DryRun && err == nil:
		r.man.Status = "dry-run"
	case err == nil && r.man.Status == "running":
		r.man.Status = "complete"
	case errors.Is(err, ErrStopped):
		r.man.Status = "stopped"
		r.man.Message = err.Error()
	case errors.Is(err, ErrGateTripped) && !errors.Is(err, ErrUnitsFailed):
		r.man.Status = "gate-tripped"
		r.man.Message = err.Error()
	case err != nil:
		r.man.Status = "failed"
		r.man.Message = err.Error()
	}
	if !o.DryRun {
		if werr := r.man.write(filepath.Join(r.dir, "manifest.json")); werr != nil && err == nil {
			err = werr
		}
	}
	return r.man, err
}

func (r *runner) run(ctx context.Context) error {
	if err := r.buildServices(); err != nil {
		return err
	}
	selected, err := r.selectStages()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	needInputs := false
	for _, s := range r.cfg.Stages {
		if selected[s.Name] && slices.Contains(s.Input, InputsName) {
			needInputs = true
		}
	}
	if needInputs {
		if err := r.materializeInputs(ctx); err != nil {
			return err
		}
	}
	waiting := map[string]bool{}
	var deadFiles, quarFiles, tooMany []string
	failedStages := map[string]bool{} // stages whose units failed (ErrUnitsFailed), and those they block
	var unitErrs []error
	// Dead letters and the quarantine are published whatever ends the run:
	// a failed stage's dead letters are what its user needs most.
	published := false
	publishSide := func() error {
		if published || r.o.DryRun {
			return nil
		}
		published = true
		if err := r.publishDeadLetters(deadFiles); err != nil {
			return err
		}
		return r.publishQuarantine(quarFiles)
	}
	defer publishSide()
	for _, s := range r.cfg.Stages {
		rec := StageRecord{Name: s.Name, Type: s.Type, Input: s.Input, Settings: s.Settings}
		if !selected[s.Name] {
			rec.Status = "not-selected"
			if m, err := r.readMarker(s.Name); err == nil {
				r.done[s.Name] = m
				rec.Output = m.Output
			}
			r.man.Stages = append(r.man.Stages, rec)
			continue
		}
		svc := r.services(s)
		st, err := s.reg.build(s.opts.Interface(), svc)
		if err != nil {
			return fmt.Errorf("stage %s: %w", s.Name, err)
		}
		rec.Kind = "each"
		if st.all != nil {
			rec.Kind = "all"
		}
		var exec *executors.Info
		key, fromTasks := r.o.StageKeys[s.Name]
		if st.executes && r.cfg.Executor != "" && !fromTasks {
			ex, err := r.executor(ctx)
			if err != nil {
				closeStage(st)
				return fmt.Errorf("stage %s: open executor %s: %w", s.Name, r.cfg.Executor, err)
			}
			info := ex.Info()
			exec = &info
		}
		if !fromTasks {
			if key, err = stageKey(s, st, exec); err != nil {
				closeStage(st)
				return err
			}
		}
		rec.Key = key
		blocked, failedIn := "", ""
		for _, src := range s.Input {
			if waiting[src] {
				blocked = src
			}
			if failedStages[src] {
				failedIn = src
			}
		}
		if failedIn != "" {
			// Its input stage failed some units and has no output: the
			// stages that do not depend on it still run.
			failedStages[s.Name] = true
			rec.Status = "blocked"
			rec.Error = "input stage " + failedIn + " failed"
			r.man.Stages = append(r.man.Stages, rec)
			closeStage(st)
			continue
		}
		if (st.all != nil && r.o.Shard.Enabled()) || blocked != "" {
			waiting[s.Name] = true
			rec.Status = "waiting-for-merge"
			r.log.Info("stage waits for merge: whole-set stages run after `codefeedback merge` combines the shards", "stage", s.Name)
			r.man.Stages = append(r.man.Stages, rec)
			closeStage(st)
			continue
		}
		if r.o.DryRun && !r.inputsReady(s) {
			// An input stage would run first: this one is estimated from
			// the shapes that stage predicts (when it can).
			rec.Status = "dry-run"
			if in, _, ok := r.inputShapes(s); ok {
				rec.Counts = Counts{In: int64(len(in)), WouldRun: int64(len(in))}
				r.estimate(s, st, &rec, in, in, true)
			}
			r.man.Stages = append(r.man.Stages, rec)
			r.man.Estimate = r.man.Estimate.add(rec.Estimate)
			closeStage(st)
			continue
		}
		start := time.Now()
		if st.all != nil {
			err = r.runAll(ctx, s, st, key, svc, &rec)
		} else {
			err = r.runEach(ctx, s, st, key, svc, &rec)
		}
		closeStage(st)
		rec.Seconds = time.Since(start).Seconds()
		rec.Stats, rec.Usage = svc.Stats.Snapshot()
		if m := r.done[s.Name]; m != nil && rec.Status == "unchanged" {
			rec.Stats = m.Stats
		}
		if errors.Is(err, ErrBudgetExceeded) && !errors.Is(err, ErrStopped) {
			// A whole-set stage whose model calls ran out of budget.
			err = fmt.Errorf("%w: --max-cost %.2f USD reached: %w", ErrStopped, r.o.MaxCost, err)
			rec.Status = "stopped"
		}
		if err != nil {
			rec.Error = err.Error()
			if rec.Status == "" || rec.Status == "ran" {
				rec.Status = "failed"
			}
		}
		if errors.Is(err, ErrUnitsFailed) && ctx.Err() == nil {
			// Units of a whole-set stage failed after their retries: they
			// are its dead letters, its output is not cached, and the run
			// goes on without it (the stages after it are blocked).
			n := int64(rec.Stats["failed"])
			rec.Counts.Failed, rec.Counts.DeadLettered = n, n
			failedStages[s.Name] = true
			unitErrs = append(unitErrs, fmt.Errorf("stage %s: %w", s.Name, err))
			err = nil
		}
		r.man.Stages = append(r.man.Stages, rec)
		r.man.Usage = r.man.Usage.Add(rec.Usage)
		r.man.Estimate = r.man.Estimate.add(rec.Estimate)
		r.man.Extra = r.serviceReport()
		r.man.DeadCount += rec.Counts.DeadLettered
		if q := filepath.Join(r.outDir, "stages", s.Name, quarantineFile); rec.Status != "not-selected" && fileSize(q) > 0 {
			quarFiles = append(quarFiles, q)
		}
		if rec.Counts.DeadLettered > 0 {
			deadFiles = append(deadFiles, filepath.Join(r.outDir, "stages", s.Name, "dead-letters.jsonl"))
			if msg := r.tooManyFailed(s.Name, st.usesModel, rec.Counts); msg != "" && !r.o.DryRun {
				tooMany = append(tooMany, msg)
			}
		}
		if !r.o.DryRun {
			if werr := r.man.write(filepath.Join(r.dir, "manifest.json")); werr != nil {
				return werr
			}
		}
		if err != nil {
			return fmt.Errorf("stage %s: %w", s.Name, err)
		}
	}
	if r.o.DryRun {
		return nil
	}
	if err := publishSide(); err != nil {
		return err
	}
	if len(tooMany) > 0 {
		return fmt.Errorf("%w: %s; all dead letters in %s; outputs not published (--max-failed)",
			ErrTooManyFailed, strings.Join(tooMany, "; "), r.man.DeadFile)
	}
	if r.o.Shard.Enabled() && r.o.Phase == nil {
		r.log.Info("sharded run: outputs are published by the run after `codefeedback merge`", "shard", r.o.Shard.String())
		return errors.Join(append(unitErrs, r.tripError())...)
	}
	if r.o.NoPublish || (r.o.Phase != nil && r.o.Shard.Count > 0) {
		// A phase's task, or a merge before the last phase.
		return errors.Join(append(unitErrs, r.tripError())...)
	}
	if err := r.publishOutputs(ctx); err != nil {
		return err
	}
	if len(unitErrs) > 0 {
		// Outputs of the stages that completed are published; the failed
		// stage's units are retried by the next run.
		return errors.Join(append(unitErrs, r.tripError())...)
	}
	return r.tripError()
}

// tripError is the run's error when gates tripped: what was published is
// what passed every gate; the rest is in the quarantine.
func (r *runner) tripError() error {
	if len(r.trips) == 0 {
		return nil
	}
	r.man.Gates = r.trips
	msgs := make([]string, len(r.trips))
	for i, t := range r.trips {
		msgs[i] = t.Message() + quarantineSamples(filepath.Join(r.stageDir(t.Stage), quarantineFile), t.Gate, 3)
	}
	return fmt.Errorf("%w: %s; published only what passed every gate; rejected answers and unprocessed items with their reasons: %s",
		ErrGateTripped, strings.Join(msgs, "; "), r.man.QuarantineFile)
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func closeStage(st *stageCaps) {
	if st.closer != nil {
		_ = st.closer.Close()
	}
}

// inputsReady reports whether every input stage of s has an output.
func (r *runner) inputsReady(s *StageSpec) bool {
	for _, src := range s.Input {
		if r.done[src] == nil {
			return false
		}
	}
	return true
}

// selectStages applies --only and --from and checks that every selected
// stage's inputs will exist.
func (r *runner) selectStages() (map[string]bool, error) {
	sel := map[string]bool{}
	idx := map[string]int{}
	for i, s := range r.cfg.Stages {
		idx[s.Name] = i
	}
	known := func(n string) error {
		if _, ok := idx[n]; !ok {
			return fmt.Errorf("unknown stage %q%s", n, didYouMean(n, names(r.cfg.Stages)))
		}
		return nil
	}
	for _, n := range append(slices.Clone(r.o.Only), r.o.Force...) {
		if err := known(n); err != nil {
			return nil, err
		}
	}
	from := 0
	if r.o.From != "" {
		if err := known(r.o.From); err != nil {
			return nil, err
		}
		from = idx[r.o.From]
	}
	for i, s := range r.cfg.Stages {
		sel[s.Name] = i >= from && (len(r.o.Only) == 0 || slices.Contains(r.o.Only, s.Name))
	}
	for _, s := range r.cfg.Stages {
		if !sel[s.Name] {
			continue
		}
		for _, src := range s.Input {
			if src == InputsName || sel[src] {
				continue
			}
			if _, err := r.readMarker(src); err != nil {
				return nil, fmt.Errorf("stage %s reads the output of stage %s, which has not completed in %s; run it first (without --only/--from)", s.Name, src, r.dir)
			}
		}
	}
	return sel, nil
}
