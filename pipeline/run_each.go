package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/codefeedback/codefeedback/internal/store"
	"golang.org/x/sync/errgroup"
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
	// skipped: not processed because a gate tripped; bypassKey, when the
	// stage passed it on (Bypasser), is where that output is stored.
	skipped   bool
	bypassKey string
	windowed  bool // holds a place in the gated stage's window
	same      bool // the output is the input line, stored as valSame
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

// runEach streams a per-item stage: inputs are read in order, cached results
// are taken from the store, the rest run with bounded concurrency, and
// outputs are written in input order once each result is durable.
func (r *runner) runEach(ctx context.Context, s *StageSpec, st *stageCaps, key string, svc *Services, rec *StageRecord) error {
	srcs, inHash, total, err := r.sources(s)
	if err != nil {
		return err
	}
	force := r.isForced(s.Name)
	if m, err := r.readMarker(s.Name); err == nil && !force && !r.o.DryRun && m.Key == key && m.InputHash == inHash && m.Counts.Failed == 0 && !m.Tripped {
		r.done[s.Name] = m
		rec.Status = "unchanged"
		rec.Output = m.Output
		rec.Counts = Counts{In: m.Counts.In, Out: m.Counts.Out, Cached: m.Counts.In}
		r.log.Info("stage unchanged", "stage", s.Name, "items", m.Counts.In)
		return nil
	}
	if force && !r.o.DryRun {
		// A forced run overwrites results in place, and the old output is
		// those results: if this run stops, no marker may vouch for them.
		if err := os.Remove(filepath.Join(r.stageDir(s.Name), "done.json")); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("stage %s: %w", s.Name, err)
		}
	}
	e, err := r.newEachRun(s, st, svc)
	if err != nil {
		return err
	}
	workers := r.workers(s, st, total)
	e.watch = newGateWatch(s.Name, st.gated, s.GateMinChecks)
	if e.watch != nil {
		// A gated stage's work may run only this far ahead of the writer,
		// which judges the gates in input order: when a gate trips, at
		// most this many more items were sent to the model.
		e.window = make(chan struct{}, 2*workers)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.cancel = cancel
	e.p = startProgress(s.Name, total, r.o.Progress, r.log, r.o.ProgressInterval)
	// s.Concurrency long-lived workers rather than a goroutine per item:
	// fresh goroutines regrow their stacks on every item (measurable with
	// instant stages), and the bound on concurrency is the same.
	g, gctx := errgroup.WithContext(sctx)
	e.jobs = make(chan job, workers)
	for range workers {
		g.Go(func() error {
			for j := range e.jobs {
				if e.tripped.Load() {
					// A gate tripped while this job waited: no model call.
					e.skip(j.sl, j.data)
					close(j.sl.done)
					continue
				}
				if n := r.process(gctx, s, st, svc.Stats, j.data, j.sl); n > 0 {
					e.retries.Add(int64(n))
				}
			}
			return nil
		})
	}
	// A deep window lets many results await one group commit (fsync)
	// without stalling workers; its memory is bounded, not per-run.
	e.slots = make(chan *slot, 4096+2*workers)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for sl := range e.slots {
			e.write(sl)
		}
	}()
	e.dispatch(gctx, srcs, key, force)
	close(e.jobs)
	g.Wait()
	close(e.slots)
	<-writerDone
	e.p.finish()
	if e.aborted > 0 && r.budget.exceeded() {
		e.stopped = true // items in flight were refused for lack of budget
	}
	e.c.Retries = e.retries.Load()
	e.c.Out = e.sum.lines
	rec.Counts = e.c
	if r.o.DryRun {
		all, predicted, ok := r.inputShapes(s)
		todo := e.missed
		if predicted {
			todo = all // an input stage would run first: none of its items is cached
		}
		if ok && len(todo) > 0 {
			r.estimate(s, st, rec, all, todo, predicted)
		}
		if ok && predicted {
			rec.Counts.In, rec.Counts.WouldRun = int64(len(all)), int64(len(all))-rec.Counts.Cached
		}
	}
	switch {
	case e.werr != nil:
		e.abort()
		return e.werr
	case e.readErr != nil:
		e.abort()
		return e.readErr
	case ctx.Err() != nil:
		e.abort()
		rec.Status = "stopped"
		return ctx.Err()
	case e.stopped:
		e.abort()
		rec.Status = "stopped"
		return fmt.Errorf("%w: --max-cost %.2f USD reached; finished items are stored and the next run resumes", ErrStopped, r.o.MaxCost)
	}
	rec.Status = "ran"
	if r.o.DryRun {
		rec.Status = "dry-run"
	}
	if st.check != nil && !r.o.DryRun {
		// A check over the whole output: no marker when it fails.
		if err := st.check.Check(); err != nil {
			e.abort()
			rec.Status = "failed"
			return err
		}
	}
	trip := e.finalTrip()
	for _, f := range []*atomicFile{e.keys.a, e.dead, e.quar} {
		if err := f.Commit(); err != nil {
			e.abort()
			return err
		}
	}
	m := &marker{Key: key, InputHash: inHash, OutHash: e.sum.sum(), Output: filepath.Join("stages", s.Name, keysFile), Counts: e.c}
	m.Stats, _ = svc.Stats.Snapshot()
	if trip != nil && !r.o.DryRun {
		m.Tripped = true
		rec.Status, rec.Gate = "gate-tripped", trip
		r.trips = append(r.trips, *trip)
	}
	r.done[s.Name] = m
	rec.Output = m.Output
	if r.o.DryRun {
		return nil
	}
	if err := r.writeMarker(s.Name, m); err != nil { // last: the marker says everything above is on disk
		return err
	}
	// An earlier version's copies of the output: the keys replace both.
	for _, old := range []string{"out.jsonl", "refs"} {
		os.Remove(filepath.Join(r.stageDir(s.Name), old))
	}
	return nil
}

// job is one uncached item handed to a worker.
type job struct {
	data []byte
	sl   *slot
}

// eachRun is the state of one per-item stage run shared by its dispatcher
// (reads inputs, looks up the store, hands out jobs), its workers and its
// writer (writes results in input order).
type eachRun struct {
	r   *runner
	s   *StageSpec
	st  *stageCaps
	svc *Services
	p   *progress

	missed  []Shape     // dry-run: the shapes of the uncached items
	keys    *keysWriter // the output: its items' keys in input order
	sum     *lineSum    // the output lines' hash and count
	dead    *atomicFile
	quar    *atomicFile // what gates rejected, in input order
	watch   *gateWatch  // nil: the stage has no gates
	trip    *GateTrip   // writer's: the gate that tripped the stage
	tripped atomic.Bool // set by the writer once trip is: no new work
	window  chan struct{}
	jobs    chan job
	slots   chan *slot
	cancel  context.CancelFunc
	retries atomic.Int64
	c       Counts // writer's
	werr    error  // writer's: fatal store or file failure
	readErr error  // dispatcher's
	stopped bool   // dispatcher's: --max-cost reached
	aborted int    // writer's: items cancelled in flight
}

func (r *runner) newEachRun(s *StageSpec, st *stageCaps, svc *Services) (*eachRun, error) {
	dir := r.stageDir(s.Name)
	keys, err := newKeysWriter(filepath.Join(dir, keysFile))
	if err != nil {
		return nil, err
	}
	dead, err := createAtomic(filepath.Join(dir, "dead-letters.jsonl"))
	if err != nil {
		keys.a.Abort()
		return nil, err
	}
	quar, err := createAtomic(filepath.Join(dir, quarantineFile))
	if err != nil {
		keys.a.Abort()
		dead.Abort()
		return nil, err
	}
	return &eachRun{r: r, s: s, st: st, svc: svc, keys: keys, sum: newLineSum(), dead: dead, quar: quar}, nil
}

// abort drops the unfinished output; what failed and what gates rejected
// so far are kept, whatever ended the stage.
func (e *eachRun) abort() {
	e.keys.a.Abort()
	if err := e.dead.Commit(); err != nil {
		e.r.log.Warn("dead letters not written", "stage", e.s.Name, "err", err)
	}
	if err := e.quar.Commit(); err != nil {
		e.r.log.Warn("quarantine not written", "stage", e.s.Name, "err", err)
	}
}

// skip handles an item the stage will not process because a gate tripped:
// a Bypasser's outputs for it (stored under a key of their own, so the
// next run still does the work), else nothing: the writer quarantines it.
func (e *eachRun) skip(sl *slot, data []byte) {
	sl.skipped = true
	sl.id = itemID(data)
	if e.st.bypass == nil {
		return
	}
	in, err := parseItem(bytes.Clone(data))
	if err != nil {
		sl.failed = fmt.Errorf("decode item: %w", err)
		return
	}
	outs, err := e.st.bypass.Bypass(in)
	if err != nil {
		sl.failed = fmt.Errorf("pass on after gate tripped: %w", err)
		return
	}
	buf := []byte{valOK}
	for _, o := range outs {
		if buf, err = appendItem(buf, o); err != nil {
			sl.failed = fmt.Errorf("encode output %s: %w", o.ID, err)
			return
		}
		buf = append(buf, '\n')
	}
	sl.val = buf
	sl.bypassKey = store.Key("bypass/v1", sl.key)
	sl.wait = e.r.db.PutAsync(ItemsBucket, sl.bypassKey, buf)
}

// quarantine writes one rejection.
func (e *eachRun) quarantine(rj Rejection) {
	if rj.Stage == "" {
		rj.Stage = e.s.Name
	}
	if r, ok := e.watch.rule(rj.Gate); ok && rj.Setting == "" {
		rj.Setting = r.Setting
	}
	b, err := json.Marshal(rj)
	if err != nil {
		return
	}
	e.quar.Write(append(b, '\n'))
	e.c.Quarantined++
}

// watchGates trips the stage when a gate is clearly over its rule.
func (e *eachRun) watchGates() {
	if e.watch == nil || e.trip != nil {
		return
	}
	if t := e.watch.check(e.svc.Stats.gateSnapshot(), true); t != nil {
		e.trip = t
		e.tripped.Store(true)
		e.r.log.Warn("QUALITY GATE TRIPPED: the stage stops calling the model; work in flight finishes, the rest is "+
			map[bool]string{true: "passed on without this stage's work", false: "quarantined"}[e.st.bypass != nil],
			"stage", e.s.Name, "gate", t.Gate, "rejected", t.Rejected, "checked", t.Checked, "allowed", t.MaxShare, "setting", t.Setting)
	}
}

// finalTrip settles the stage's gates once every item is written: an early
// trip with the final figures, or a gate over its rule at the end.
func (e *eachRun) finalTrip() *GateTrip {
	if e.watch == nil {
		return nil
	}
	stats := e.svc.Stats.gateSnapshot()
	if e.trip == nil {
		e.trip = e.watch.check(stats, false)
		if e.trip == nil {
			return nil
		}
	} else {
		for _, f := range gateFigures(stats) {
			if f.gate == e.trip.Gate {
				e.trip.Checked, e.trip.Rejected, e.trip.Reasons = f.checked, f.rejected, f.reasons
			}
		}
	}
	e.trip.Skipped = e.c.Skipped
	e.trip.Bypassed = e.st.bypass != nil && e.c.Skipped > 0
	return e.trip
}

// write takes one slot's result, in input order, once it is durable: counts,
// output keys, dead letters, item statistics, output lines and Observe.
func (e *eachRun) write(sl *slot) {
	<-sl.done
	if sl.windowed {
		<-e.window
	}
	if e.werr != nil {
		return
	}
	if sl.wait != nil {
		if err := sl.wait(); err != nil {
			e.werr = err
			e.cancel()
			return
		}
	}
	if sl.aborted {
		e.aborted++
		return
	}
	c, p := &e.c, e.p
	if sl.skipped {
		c.In++
		c.Skipped++
		p.done.Add(1)
		switch {
		case sl.failed != nil:
			c.Failed++
			c.DeadLettered++
			p.failed.Add(1)
			b, _ := json.Marshal(deadLetter{Stage: e.s.Name, ItemID: sl.id, Error: sl.failed.Error(), Time: time.Now().UTC()})
			e.dead.Write(append(b, '\n'))
		case sl.bypassKey != "":
			if err := e.keys.add(sl.bypassKey); err != nil {
				e.werr = err
				e.cancel()
				return
			}
			e.addLines(sl.val[1:])
		default:
			gate := ""
			if e.trip != nil {
				gate = e.trip.Gate
			}
			e.quarantine(Rejection{ItemID: sl.id, Gate: gate, Reason: "not_processed",
				Detail: "the stage stopped calling the model after gate " + gate + " tripped; the next run processes this item"})
		}
		return
	}
	if sl.missed {
		c.In++
		c.WouldRun++
		p.done.Add(1)
		return
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
	if sl.same {
		lines, _ := splitDelta(sl.val[1:])
		if err := e.keys.addLine(sl.key, lines[:len(lines)-1]); err != nil {
			e.werr = err
			e.cancel()
			return
		}
	} else if sl.failed == nil || sl.permanent {
		// Permanent failures too: their stored result must outlive gc.
		if err := e.keys.add(sl.key); err != nil {
			e.werr = err
			e.cancel()
			return
		}
	}
	if sl.failed != nil {
		c.Failed++
		c.DeadLettered++
		p.failed.Add(1)
		b, _ := json.Marshal(deadLetter{Stage: e.s.Name, ItemID: sl.id, Error: sl.failed.Error(),
			Attempts: sl.attempts, Permanent: sl.permanent, Cached: sl.cached, Time: time.Now().UTC()})
		e.dead.Write(append(b, '\n'))
		return
	}
	lines, delta := splitDelta(sl.val[1:])
	if delta != nil {
		// Fresh and cached items alike, in input order, so both runs add
		// up the same figures.
		rejects, err := replayDelta(e.svc.Stats, delta)
		if err != nil {
			e.r.log.Warn("item statistics ignored", "stage", e.s.Name, "key", sl.key, "err", err)
		}
		for _, rj := range rejects {
			e.quarantine(rj)
		}
	}
	e.addLines(lines)
	e.watchGates()
}

// addLines adds output lines to the output's hash and observes them.
func (e *eachRun) addLines(lines []byte) {
	e.sum.add(lines)
	if e.st.observe != nil {
		// sl.val is never modified, so items may alias it.
		for l := range bytes.Lines(lines) {
			if it, err := parseItem(l[:len(l)-1]); err == nil {
				e.st.observe.Observe(it)
				// Gates recorded from Observe (on the stage's statistics)
				// quarantine what they reject with the item observed.
				for _, rj := range e.svc.Stats.takeRejects() {
					if rj.ItemID == "" {
						rj.ItemID = it.ID
					}
					e.quarantine(rj)
				}
			}
		}
	}
}

// batchLines is how many input lines one store transaction looks up; one
// buffer holds a batch's lines for the jobs.
const batchLines = 256

// dispatch reads the inputs in order, in batches, and queues a slot per item:
// resolved from the store when cached, else a job for the workers.
func (e *eachRun) dispatch(ctx context.Context, srcs []string, key string, force bool) {
	var (
		arena []byte
		ends  []int
		keys  []string
		kh    = newKeyHasher(key)
	)
	flush := func() bool {
		defer func() { arena, ends, keys = nil, ends[:0], keys[:0] }()
		return e.flush(ctx, arena, ends, keys, force)
	}
	for _, src := range srcs {
		for ln, err := range outputLines(ctx, e.r.db, src) {
			if err != nil {
				e.readErr = err
				return
			}
			if ctx.Err() != nil {
				return
			}
			if arena == nil {
				arena = make([]byte, 0, 64<<10)
			}
			arena = append(arena, ln.data...)
			ends = append(ends, len(arena))
			keys = append(keys, kh.key(ln.data))
			if len(keys) == batchLines && !flush() {
				return
			}
		}
	}
	if ctx.Err() == nil {
		flush()
	}
}

// flush looks one batch up in the store and queues its slots; it returns
// false when dispatching must stop.
func (e *eachRun) flush(ctx context.Context, arena []byte, ends []int, keys []string, force bool) bool {
	var vals [][]byte
	if !force && len(keys) > 0 {
		var err error
		if vals, err = e.r.db.GetMany(ctx, ItemsBucket, keys); err != nil {
			e.readErr = err
			return false
		}
	}
	from := 0
	for i, k := range keys {
		data := arena[from:ends[i]:ends[i]]
		from = ends[i]
		if ctx.Err() != nil {
			return false
		}
		if e.r.budget.exceeded() {
			e.stopped = true
			return false
		}
		sl := &slot{done: make(chan struct{}), key: k}
		if v := vals; v != nil && len(v[i]) > 0 {
			sl.cached = true
			sl.val = v[i]
			if v[i][0] == valSame {
				sl.val, sl.same = expandSame(v[i], data), true
			}
			if v[i][0] == valFail {
				sl.failed = errors.New(string(v[i][1:]))
				sl.permanent = true
				sl.id = itemID(data)
			}
			close(sl.done)
			e.slots <- sl
			continue
		}
		if e.r.o.DryRun {
			e.missed = append(e.missed, shapeOfLine(data))
			sl.missed = true
			close(sl.done)
			e.slots <- sl
			continue
		}
		if e.window != nil {
			select {
			case e.window <- struct{}{}:
				sl.windowed = true
			case <-ctx.Done():
				return false
			}
		}
		if e.tripped.Load() {
			e.skip(sl, data)
			close(sl.done)
			e.slots <- sl
			continue
		}
		e.slots <- sl
		e.jobs <- job{data, sl}
	}
	return true
}
