package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/store"
	"gopkg.in/yaml.v3"
)

// ItemsBucket is the store bucket of per-item stage results.
const ItemsBucket = "items"

// ErrStopped means the run stopped early on purpose (--max-cost reached):
// finished work is stored and the next run resumes.
var ErrStopped = errors.New("run stopped")

// RunOptions are the command-line choices of one run.
type RunOptions struct {
	Only    []string // run only these stages (their inputs must exist)
	From    string   // run this stage and every stage after it
	Limit   int      // use only the first N input items (after sharding)
	DryRun  bool     // show what would run and what is cached; change nothing
	Force   []string // recompute these stages, ignoring cached results
	Shard   Shard
	MaxCost float64 // stop dispatching new items once model cost reaches this (USD)

	Version          string       // program version for the manifest
	Logger           *slog.Logger // nil: discard
	Progress         io.Writer    // terminal for bars; nil or a non-terminal: log lines
	ProgressInterval time.Duration
}

var discardLogger = slog.New(slog.DiscardHandler)

// marker is a stage's completion record, written after its output.
type marker struct {
	Key       string             `json:"key"`
	InputHash string             `json:"input_hash"`
	OutHash   string             `json:"out_hash"`
	Output    string             `json:"output"` // relative to the run dir
	Counts    Counts             `json:"counts"`
	Stats     map[string]float64 `json:"stats,omitempty"`
}

type runner struct {
	cfg     *Config
	o       RunOptions
	log     *slog.Logger
	db      *store.Bolt
	dir     string // run dir
	outDir  string // where stage outputs go (run dir, or a scratch dir for dry-run)
	budget  *budget
	man     *Manifest
	done    map[string]*marker // completed (this run or before) stage outputs
	model   any
	embed   any
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
		budget: &budget{limit: o.MaxCost}, done: map[string]*marker{}}
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
	if o.Shard.Enabled() {
		r.man.Options.Shard = o.Shard.String()
	} else {
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
		return err
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
	var deadFiles []string
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
		if st.All != nil {
			rec.Kind = "all"
		}
		key := stageKey(s, st)
		rec.Key = key
		blocked := ""
		for _, src := range s.Input {
			if waiting[src] {
				blocked = src
			}
		}
		if (st.All != nil && r.o.Shard.Enabled()) || blocked != "" {
			waiting[s.Name] = true
			rec.Status = "waiting-for-merge"
			r.log.Info("stage waits for merge: whole-set stages run after `codefeedback merge` combines the shards", "stage", s.Name)
			r.man.Stages = append(r.man.Stages, rec)
			closeStage(st)
			continue
		}
		start := time.Now()
		if st.All != nil {
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
		if err != nil {
			rec.Error = err.Error()
			if rec.Status == "" || rec.Status == "ran" {
				rec.Status = "failed"
			}
		}
		r.man.Stages = append(r.man.Stages, rec)
		r.man.Usage = r.man.Usage.Add(rec.Usage)
		r.man.Extra = r.serviceReport()
		r.man.DeadCount += rec.Counts.DeadLettered
		if rec.Counts.DeadLettered > 0 {
			deadFiles = append(deadFiles, filepath.Join(r.outDir, "stages", s.Name, "dead-letters.jsonl"))
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
	if err := r.publishDeadLetters(deadFiles); err != nil {
		return err
	}
	if r.o.Shard.Enabled() {
		r.log.Info("sharded run: outputs are published by the run after `codefeedback merge`", "shard", r.o.Shard.String())
		return nil
	}
	return r.publishOutputs(ctx)
}

func closeStage(st *Stage) {
	if st.Close != nil {
		_ = st.Close()
	}
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

func (r *runner) buildServices() error {
	var err error
	if r.cfg.model != nil {
		if r.model, err = r.buildService("model", r.cfg.model); err != nil {
			return err
		}
	}
	if r.cfg.embedder != nil {
		if r.embed, err = r.buildService("embedder", r.cfg.embedder); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) buildService(section string, n *yaml.Node) (any, error) {
	b, ok := lookupService(section)
	if !ok {
		return nil, fmt.Errorf("no service registered for `%s:`", section)
	}
	l := &errList{file: r.cfg.File}
	v, err := b(strictDecoder(n, l), r.db)
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", section, err)
	}
	return v, nil
}

func (r *runner) services(s *StageSpec) *Services {
	stats := NewStats()
	stats.budget = r.budget
	svc := &Services{
		Logger:   r.log.With("stage", s.Name),
		Cache:    r.db,
		Model:    r.model,
		Embedder: r.embed,
		Stats:    stats,
		RunDir:   r.dir,
		Name:     s.Name,
	}
	if r.cfg.Executor != "" {
		svc.Executor = r.executor
	}
	return svc
}

// executor opens the pipeline's executor once, on first use. Its one-shot
// runs are cached in the run's store (bucket "exec", see
// executors.WithCache), so a forced or resumed stage does not re-run
// identical programs; sessions are not cached.
func (r *runner) executor(ctx context.Context) (executors.Executor, error) {
	r.execMu.Lock()
	defer r.execMu.Unlock()
	if r.exec == nil && r.execErr == nil {
		var ex executors.Executor
		ex, r.execErr = executors.Open(ctx, r.cfg.Executor)
		if r.execErr == nil {
			r.exec = executors.WithCache(ex, r.db)
		}
	}
	return r.exec, r.execErr
}

// stageKey hashes what determines a stage's results besides its input.
func stageKey(s *StageSpec, st *Stage) string {
	return store.Key("stage/v1", s.Type, s.Settings, st.Version)
}

func (r *runner) stageDir(name string) string { return filepath.Join(r.outDir, "stages", name) }

func (r *runner) readMarker(name string) (*marker, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, "stages", name, "done.json"))
	if err != nil {
		return nil, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stage %s: bad completion marker: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, m.Output)); err != nil {
		return nil, fmt.Errorf("stage %s: output missing: %w", name, err)
	}
	return &m, nil
}

func (r *runner) writeMarker(name string, m *marker) error {
	b, _ := json.Marshal(m)
	return writeFileAtomic(filepath.Join(r.stageDir(name), "done.json"), b)
}

// sources returns the output files a stage reads and their combined hash.
func (r *runner) sources(s *StageSpec) ([]string, string, int64, error) {
	h := sha256.New()
	var paths []string
	var n int64
	for _, src := range s.Input {
		m := r.done[src]
		if m == nil {
			return nil, "", 0, fmt.Errorf("input %s has no output", src)
		}
		paths = append(paths, filepath.Join(r.outDir, m.Output))
		if r.o.DryRun && !fileExists(filepath.Join(r.outDir, m.Output)) {
			paths[len(paths)-1] = filepath.Join(r.dir, m.Output)
		}
		h.Write([]byte(m.OutHash))
		n += m.Counts.Out
	}
	return paths, hex.EncodeToString(h.Sum(nil)), n, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// hashWriter hashes and counts lines written to an atomic file.
type hashWriter struct {
	a     *atomicFile
	h     hash.Hash
	lines int64
}

func newHashWriter(path string) (*hashWriter, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	return &hashWriter{a: a, h: sha256.New()}, nil
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return w.a.Write(p)
}

func (w *hashWriter) sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// materializeInputs reads every input through its format, applies the shard
// and --limit, and writes the items as the "inputs" pseudo-stage's output.
func (r *runner) materializeInputs(ctx context.Context) error {
	w, err := newHashWriter(filepath.Join(r.stageDir(InputsName), "out.jsonl"))
	if err != nil {
		return err
	}
	var n int64
	var buf []byte
	for _, in := range r.cfg.Inputs {
		rec := InputRecord{Path: in.Path, Format: in.Format}
		rec.SHA256, rec.Bytes, err = fileSHA256(in.Path)
		if err != nil {
			w.a.Abort()
			return err
		}
		f, _ := lookupFormat(in.Format)
		for it, err := range f(ctx, in.Path) {
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: %w", in.Path, err)
			}
			rec.Items++
			if !r.o.Shard.Has(it.ID) || (r.o.Limit > 0 && n >= int64(r.o.Limit)) {
				continue
			}
			buf, err = appendItem(buf[:0], it)
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: item %s: %w", in.Path, it.ID, err)
			}
			w.Write(append(buf, '\n'))
			n++
		}
		r.man.Inputs = append(r.man.Inputs, rec)
	}
	if err := w.a.Commit(); err != nil {
		return err
	}
	r.done[InputsName] = &marker{OutHash: w.sum(), Output: filepath.Join("stages", InputsName, "out.jsonl"), Counts: Counts{Out: n}}
	return nil
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("pipeline: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("pipeline: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Cached per-item values: 'O' + output lines (+ an optional last line of
// item statistics, see statsPrefix), or 'F' + a permanent error.
const (
	valOK   = 'O'
	valFail = 'F'
)

// slot is one item's place in the stage's output order.
type slot struct {
	done      chan struct{}
	key       string
	id        string
	val       []byte
	cached    bool
	failed    error
	permanent bool
	attempts  int
	aborted   bool // cancelled in flight: neither output nor failure
	missed    bool // dry-run: not cached
	wait      func() error
	// stats records the attempt's item statistics (ItemStats); ictx hands
	// it to Each. Both live here so a call allocates nothing for them.
	stats Stats
	ictx  itemCtx
}

type deadLetter struct {
	Stage     string    `json:"stage"`
	ItemID    string    `json:"item_id"`
	Error     string    `json:"error"`
	Attempts  int       `json:"attempts"`
	Permanent bool      `json:"permanent,omitempty"`
	Cached    bool      `json:"cached,omitempty"`
	Time      time.Time `json:"time"`
}

// keyHasher computes an item's store key, the hash of its stage key and
// its input line, for one stage with one reusable hash state.
// Not safe for concurrent use.
type keyHasher struct {
	stageKey []byte
	h        hash.Hash
	sum      [sha256.Size]byte
}

func newKeyHasher(stageKey string) *keyHasher {
	return &keyHasher{stageKey: append([]byte(stageKey), 0), h: sha256.New()}
}

func (k *keyHasher) key(line []byte) string {
	k.h.Reset()
	k.h.Write(k.stageKey)
	k.h.Write(line)
	return hex.EncodeToString(k.h.Sum(k.sum[:0]))
}

func (r *runner) isForced(name string) bool { return slices.Contains(r.o.Force, name) }

// runEach streams a per-item stage: inputs are read in order, cached results
// are taken from the store, the rest run with bounded concurrency, and
// outputs are written in input order once each result is durable.
func (r *runner) runEach(ctx context.Context, s *StageSpec, st *Stage, key string, svc *Services, rec *StageRecord) error {
	srcs, inHash, total, err := r.sources(s)
	if err != nil {
		return err
	}
	force := r.isForced(s.Name)
	if m, err := r.readMarker(s.Name); err == nil && !force && !r.o.DryRun && m.Key == key && m.InputHash == inHash && m.Counts.Failed == 0 {
		r.done[s.Name] = m
		rec.Status = "unchanged"
		rec.Output = m.Output
		rec.Counts = Counts{In: m.Counts.In, Out: m.Counts.Out, Cached: m.Counts.In}
		r.log.Info("stage unchanged", "stage", s.Name, "items", m.Counts.In)
		return nil
	}
	dir := r.stageDir(s.Name)
	out, err := newHashWriter(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		return err
	}
	dead, err := createAtomic(filepath.Join(dir, "dead-letters.jsonl"))
	if err != nil {
		out.a.Abort()
		return err
	}
	refs, err := createAtomic(filepath.Join(dir, "refs"))
	if err != nil {
		out.a.Abort()
		dead.Abort()
		return err
	}
	abort := func() { out.a.Abort(); dead.Abort(); refs.Abort() }

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := startProgress(s.Name, total, r.o.Progress, r.log, r.o.ProgressInterval)
	conc := s.Concurrency
	// conc long-lived workers rather than a goroutine per item: fresh
	// goroutines regrow their stacks on every item (measurable with instant
	// stages), and the bound on concurrency is the same.
	g, gctx := errgroup.WithContext(sctx)
	type job struct {
		data []byte
		sl   *slot
	}
	jobs := make(chan job, conc)
	var retries int64
	var retryMu sync.Mutex
	for range conc {
		g.Go(func() error {
			for j := range jobs {
				if n := r.process(gctx, s, st, svc.Stats, j.data, j.sl); n > 0 {
					retryMu.Lock()
					retries += int64(n)
					retryMu.Unlock()
				}
			}
			return nil
		})
	}
	// A deep window lets many results await one group commit (fsync)
	// without stalling workers; its memory is bounded, not per-run.
	slots := make(chan *slot, 4096+2*conc)
	var c Counts
	var werr error // fatal: store or file failure
	writerDone := make(chan struct{})
	var refBuf []byte
	go func() {
		defer close(writerDone)
		for sl := range slots {
			<-sl.done
			if werr != nil {
				continue
			}
			if sl.wait != nil {
				if err := sl.wait(); err != nil {
					werr = err
					cancel()
					continue
				}
			}
			if sl.aborted {
				continue
			}
			if sl.missed {
				c.In++
				c.WouldRun++
				p.done.Add(1)
				continue
			}
			c.In++
			p.done.Add(1)
			if sl.cached {
				c.Cached++
				p.cached.Add(1)
			} else {
				c.Fresh++
				p.fresh.Add(1)
			}
			if !sl.aborted && (sl.failed == nil || sl.permanent) {
				refBuf = append(append(append(refBuf[:0], ItemsBucket+"\t"...), sl.key...), '\n')
				refs.Write(refBuf)
			}
			if sl.failed != nil {
				c.Failed++
				c.DeadLettered++
				p.failed.Add(1)
				b, _ := json.Marshal(deadLetter{Stage: s.Name, ItemID: sl.id, Error: sl.failed.Error(),
					Attempts: sl.attempts, Permanent: sl.permanent, Cached: sl.cached, Time: time.Now().UTC()})
				dead.Write(append(b, '\n'))
				continue
			}
			lines, delta := splitDelta(sl.val[1:])
			if delta != nil {
				// Fresh and cached items alike, in input order, so both
				// runs add up the same figures.
				if err := replayDelta(svc.Stats, delta); err != nil {
					r.log.Warn("item statistics ignored", "stage", s.Name, "key", sl.key, "err", err)
				}
			}
			if _, err := out.Write(lines); err != nil {
				werr = err
				cancel()
				continue
			}
			if st.Observe != nil {
				// sl.val is never modified, so items may alias it.
				for l := range bytes.Lines(lines) {
					if it, err := parseItem(l[:len(l)-1]); err == nil {
						st.Observe(it)
					}
				}
			}
		}
	}()

	stopped := false
	var readErr error
	// Lines are read in batches: one store transaction looks up a whole
	// batch, and one buffer holds its lines for the jobs.
	const batchLines = 256
	var (
		arena []byte
		ends  []int
		keys  []string
		kh    = newKeyHasher(key)
	)
	flush := func() bool {
		defer func() { arena, ends, keys = nil, ends[:0], keys[:0] }()
		var vals [][]byte
		if !force && len(keys) > 0 {
			var err error
			if vals, err = r.db.GetMany(gctx, ItemsBucket, keys); err != nil {
				readErr = err
				return false
			}
		}
		from := 0
		for i, k := range keys {
			data := arena[from:ends[i]:ends[i]]
			from = ends[i]
			if gctx.Err() != nil {
				return false
			}
			if r.budget.exceeded() {
				stopped = true
				return false
			}
			sl := &slot{done: make(chan struct{}), key: k}
			if v := vals; v != nil && len(v[i]) > 0 {
				sl.cached = true
				sl.val = v[i]
				if v[i][0] == valFail {
					sl.failed = errors.New(string(v[i][1:]))
					sl.permanent = true
					sl.id = itemID(data)
				}
				close(sl.done)
				slots <- sl
				continue
			}
			if r.o.DryRun {
				sl.missed = true
				close(sl.done)
				slots <- sl
				continue
			}
			slots <- sl
			jobs <- job{data, sl}
		}
		return true
	}
read:
	for _, src := range srcs {
		for ln, err := range readLines(src) {
			if err != nil {
				readErr = err
				break read
			}
			if gctx.Err() != nil {
				break read
			}
			if arena == nil {
				arena = make([]byte, 0, 64<<10)
			}
			arena = append(arena, ln.data...)
			ends = append(ends, len(arena))
			keys = append(keys, kh.key(ln.data))
			if len(keys) == batchLines && !flush() {
				break read
			}
		}
	}
	if readErr == nil && !stopped && gctx.Err() == nil {
		flush()
	}
	close(jobs)
	g.Wait()
	close(slots)
	<-writerDone
	p.finish()
	c.Retries = retries
	c.Out = out.lines
	rec.Counts = c
	if r.o.DryRun && st.Estimate != nil {
		u := st.Estimate(int(c.WouldRun))
		rec.Estimate = &u
	}
	switch {
	case werr != nil:
		abort()
		return werr
	case readErr != nil:
		abort()
		return readErr
	case ctx.Err() != nil:
		abort()
		rec.Status = "stopped"
		return ctx.Err()
	case stopped:
		abort()
		rec.Status = "stopped"
		return fmt.Errorf("%w: --max-cost %.2f USD reached; finished items are stored and the next run resumes", ErrStopped, r.o.MaxCost)
	}
	rec.Status = "ran"
	if r.o.DryRun {
		rec.Status = "dry-run"
	}
	if st.Check != nil && !r.o.DryRun {
		if err := st.Check(); err != nil {
			abort()
			rec.Status = "failed"
			return err
		}
	}
	for _, f := range []*atomicFile{out.a, dead, refs} {
		if err := f.Commit(); err != nil {
			abort()
			return err
		}
	}
	m := &marker{Key: key, InputHash: inHash, OutHash: out.sum(), Output: filepath.Join("stages", s.Name, "out.jsonl"), Counts: c}
	m.Stats, _ = svc.Stats.Snapshot()
	r.done[s.Name] = m
	rec.Output = m.Output
	if r.o.DryRun {
		return nil
	}
	return r.writeMarker(s.Name, m) // last: the marker says everything above is on disk
}

func itemID(line []byte) string {
	var it struct {
		ID string `json:"id"`
	}
	json.Unmarshal(line, &it)
	return it.ID
}

// process runs one item with retries and stores its result. It returns the
// number of retries made.
func (r *runner) process(ctx context.Context, s *StageSpec, st *Stage, stats *Stats, line []byte, sl *slot) (retries int) {
	defer close(sl.done)
	in, err := parseItem(line) // line is ours: in.Data may alias it
	if err != nil {
		sl.failed = fmt.Errorf("decode item: %w", err)
		return 0
	}
	sl.id = in.ID
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		sl.attempts = attempt
		actx, cancel := ctx, context.CancelFunc(func() {})
		if s.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, s.Timeout)
		}
		sl.stats.reset(stats) // a failed attempt's figures are dropped
		sl.ictx = itemCtx{actx, &sl.stats}
		outs, err := callEach(&sl.ictx, st, in)
		cancel()
		if err == nil {
			size := 1
			for _, o := range outs {
				size += len(o.ID) + len(o.Kind) + len(o.Data) + len(`{"id":"","kind":"","data":}`) + 1
			}
			buf := make([]byte, 1, size)
			buf[0] = valOK
			for _, o := range outs {
				if o.ID == "" || o.Kind == "" {
					err = fmt.Errorf("stage returned an item without id or kind (input %s)", in.ID)
					break
				}
				var merr error
				if buf, merr = appendItem(buf, o); merr != nil {
					err = fmt.Errorf("encode output %s: %w", o.ID, merr)
					break
				}
				buf = append(buf, '\n')
			}
			if err == nil {
				buf, err = sl.stats.appendDelta(buf)
			}
			if err == nil {
				sl.val = buf
				sl.wait = r.db.PutAsync(ItemsBucket, sl.key, sl.val)
				return retries
			}
		}
		if ctx.Err() != nil {
			sl.aborted = true
			return retries
		}
		if IsPermanent(err) {
			sl.failed, sl.permanent = err, true
			sl.val = append([]byte{valFail}, err.Error()...)
			sl.wait = r.db.PutAsync(ItemsBucket, sl.key, sl.val)
			return retries
		}
		if !IsTransient(err) || attempt > s.Retries {
			sl.failed = err
			return retries
		}
		retries++
		d := backoff + time.Duration(rand.Int64N(int64(backoff)))
		backoff = min(backoff*2, 10*time.Second)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			sl.aborted = true
			return retries
		case <-t.C:
		}
	}
}

// callEach calls the stage, turning a panic into a failed item rather than a
// crashed run.
func callEach(ctx context.Context, st *Stage, in Item) (outs []Item, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stage panicked: %v", p)
		}
	}()
	return st.Each(ctx, in)
}

// runAll runs a whole-set stage, or reuses its output when the stage key and
// the inputs are unchanged.
func (r *runner) runAll(ctx context.Context, s *StageSpec, st *Stage, key string, svc *Services, rec *StageRecord) error {
	srcs, inHash, total, err := r.sources(s)
	if err != nil {
		return err
	}
	setKey := store.Key(key, inHash)
	rel := filepath.Join("sets", setKey+".jsonl")
	path := filepath.Join(r.dir, rel)
	force := r.isForced(s.Name)
	if !force && fileExists(path) {
		n, outHash, err := observeFile(path, st)
		if err != nil {
			return err
		}
		m := &marker{Key: key, InputHash: inHash, OutHash: outHash, Output: rel, Counts: Counts{In: total, Out: n, Cached: total}}
		m.Stats, _ = svc.Stats.Snapshot()
		// What the stage computed over the whole set (similarities, ratios)
		// is not in its items: take it from when the set was made.
		if saved, err := readSetStats(path); err == nil {
			for k, v := range saved {
				if _, seen := m.Stats[k]; !seen {
					m.Stats[k] = v
				}
			}
		}
		rec.Status, rec.Counts, rec.Output = "unchanged", m.Counts, rel
		r.done[s.Name] = m
		if r.o.DryRun {
			return nil
		}
		if err := r.writeRefs(s.Name, "set\t"+setKey+"\n"); err != nil {
			return err
		}
		return r.writeMarker(s.Name, m)
	}
	if r.o.DryRun {
		rec.Status = "dry-run"
		rec.Counts = Counts{In: total, WouldRun: total}
		if st.Estimate != nil {
			u := st.Estimate(int(total))
			rec.Estimate = &u
		}
		return nil
	}
	w, err := newHashWriter(path)
	if err != nil {
		return err
	}
	p := startProgress(s.Name, total, r.o.Progress, r.log, r.o.ProgressInterval)
	var in int64
	seq := func(yield func(Item, error) bool) {
		for _, src := range srcs {
			for it, err := range readItems(ctx, src) {
				if err == nil {
					in++
					p.done.Add(1)
					p.fresh.Add(1)
				}
				if !yield(it, err) || err != nil {
					return
				}
			}
		}
	}
	emit := func(it Item) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.ID == "" || it.Kind == "" {
			return fmt.Errorf("stage emitted an item without id or kind")
		}
		b, err := appendItem(nil, it)
		if err != nil {
			return fmt.Errorf("encode output %s: %w", it.ID, err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if st.Observe != nil {
			st.Observe(it)
		}
		return nil
	}
	err = st.All(ctx, iter.Seq2[Item, error](seq), emit)
	p.finish()
	rec.Counts = Counts{In: in, Out: w.lines, Fresh: in}
	if err == nil && st.Check != nil {
		err = st.Check()
	}
	if err != nil {
		w.a.Abort()
		return err
	}
	if err := w.a.Commit(); err != nil {
		return err
	}
	m := &marker{Key: key, InputHash: inHash, OutHash: w.sum(), Output: rel, Counts: rec.Counts}
	m.Stats, _ = svc.Stats.Snapshot()
	if err := writeSetStats(path, m.Stats); err != nil {
		return err
	}
	rec.Status, rec.Output = "ran", rel
	r.done[s.Name] = m
	if err := r.writeRefs(s.Name, "set\t"+setKey+"\n"); err != nil {
		return err
	}
	return r.writeMarker(s.Name, m)
}

// serviceReport collects what the shared services report about themselves
// (the model service's per-stage usage and cost) for the manifest.
func (r *runner) serviceReport() json.RawMessage {
	rep := map[string]any{}
	for name, v := range map[string]any{"model": r.model, "embedder": r.embed} {
		if s, ok := v.(interface{ ServiceReport() any }); ok {
			rep[name] = s.ServiceReport()
		}
	}
	if len(rep) == 0 {
		return nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return nil // a report that cannot be encoded is left out, not fatal
	}
	return b
}

// limitedPath names a --limit run's output: out/d.jsonl.gz -> out/d.limit-N.jsonl.gz.
func limitedPath(path string, n int) string {
	dir, base := filepath.Split(path)
	i := strings.IndexByte(base[min(1, len(base)):], '.')
	tag := ".limit-" + strconv.Itoa(n)
	if i < 0 {
		return dir + base + tag
	}
	i += min(1, len(base))
	return dir + base[:i] + tag + base[i:]
}

// setStatsPath is the sidecar holding the statistics a whole-set stage
// computed when it made the set at setPath.
func setStatsPath(setPath string) string {
	return strings.TrimSuffix(setPath, ".jsonl") + ".stats.json"
}

func writeSetStats(setPath string, stats map[string]float64) error {
	b, err := json.Marshal(stats)
	if err != nil {
		return fmt.Errorf("encode stats: %w", err)
	}
	return writeFileAtomic(setStatsPath(setPath), b)
}

func readSetStats(setPath string) (map[string]float64, error) {
	b, err := os.ReadFile(setStatsPath(setPath))
	if err != nil {
		return nil, err
	}
	var m map[string]float64
	return m, json.Unmarshal(b, &m)
}

func (r *runner) writeRefs(name, content string) error {
	return writeFileAtomic(filepath.Join(r.stageDir(name), "refs"), []byte(content))
}

// observeFile counts and hashes an item file, calling st.Observe per item.
func observeFile(path string, st *Stage) (int64, string, error) {
	h := sha256.New()
	var n int64
	for ln, err := range readLines(path) {
		if err != nil {
			return 0, "", err
		}
		h.Write(ln.data)
		h.Write([]byte{'\n'})
		n++
		if st.Observe != nil {
			if it, err := parseItem(bytes.Clone(ln.data)); err == nil {
				st.Observe(it)
			}
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func (r *runner) publishDeadLetters(files []string) error {
	path := filepath.Join(r.dir, "dead-letters.jsonl")
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			a.Abort()
			return fmt.Errorf("pipeline: %w", err)
		}
		a.Write(b)
	}
	if err := a.Commit(); err != nil {
		return err
	}
	r.man.DeadFile = path
	return nil
}

// publishOutputs writes each configured output from its stage's items.
func (r *runner) publishOutputs(ctx context.Context) error {
	for _, o := range r.cfg.Outputs {
		m := r.done[o.From]
		if m == nil {
			r.log.Warn("output not written: its stage has no output in this run directory", "path", o.Path, "from", o.From)
			continue
		}
		f, _ := lookupOutput(o.Format)
		if r.o.Limit > 0 {
			// A trial run must not replace the full dataset under its name.
			o.Path = limitedPath(o.Path, r.o.Limit)
		}
		w, err := f(o.Path)
		if err != nil {
			return fmt.Errorf("output %s: %w", o.Path, err)
		}
		var n int64
		for it, err := range readItems(ctx, filepath.Join(r.dir, m.Output)) {
			if err != nil {
				w.Abort()
				return fmt.Errorf("output %s: %w", o.Path, err)
			}
			if o.Kind != "" && it.Kind != o.Kind {
				continue
			}
			if err := w.Write(it); err != nil {
				w.Abort()
				return fmt.Errorf("output %s: %w", o.Path, err)
			}
			n++
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("output %s: %w", o.Path, err)
		}
		r.man.Outputs = append(r.man.Outputs, OutputRecord{Path: o.Path, Format: o.Format, From: o.From, Kind: o.Kind, Items: n})
	}
	return nil
}
