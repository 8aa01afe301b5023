package executors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// PoolOptions configure NewPool.
type PoolOptions struct {
	// Size is the number of warm sandbox instances for one-shot runs, and so
	// the number of runs in flight. Zero means DefaultPoolSize().
	Size int
	// Limits are the defaults for requests that leave a limit at zero; their
	// own zero fields take DefaultLimits.
	Limits Limits
	// MaxRuns recycles an instance after this many runs. Zero means 1000.
	MaxRuns int
	// StartTimeout bounds starting one instance. Zero means 30s.
	StartTimeout time.Duration
}

// grace is how long past a run's timeout the pool waits for the runner,
// which enforces the deadline itself, before it kills the instance.
const grace = 5 * time.Second

// cleanupWait bounds the runner's cleanup after a run (killing leftovers,
// removing the scratch, checking for taint). It is not charged to the run:
// the result is already in hand; an instance that misses it is replaced.
const cleanupWait = 30 * time.Second

var errClosed = errors.New("executors: executor is closed")

// NewPool returns an Executor over a Launcher: it keeps opts.Size runner
// instances warm (starting them in the background now), gives each run to an
// idle instance, and replaces an instance when the runner reports tampering,
// dies, misses its deadline or has served MaxRuns runs. Each session gets a
// dedicated instance on its own slot (numbered from Size upwards). Launch is
// called with RunnerArgv().
func NewPool(l Launcher, opts PoolOptions) Executor {
	if opts.Size <= 0 {
		opts.Size = DefaultPoolSize()
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = 1000
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	defaults := opts.Limits.WithDefaults(DefaultLimits)
	info := l.Info()
	info.Limits = defaults
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{
		l: l, opts: opts, defaults: defaults, info: info, ctx: ctx, cancel: cancel,
		free:     make(chan int, opts.Size),
		insts:    make([]*instance, opts.Size),
		sessSlot: map[int]bool{},
		sessions: map[*session]bool{},
		arts:     newArtifactCache(256 << 20),
	}
	for slot := 0; slot < opts.Size; slot++ {
		p.warm(slot)
	}
	return p
}

type pool struct {
	l        Launcher
	opts     PoolOptions
	defaults Limits
	info     Info
	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	free     chan int // idle slots

	mu       sync.Mutex
	insts    []*instance // by slot; nil when not started
	sessSlot map[int]bool
	sessions map[*session]bool
	closed   bool
	arts     *artifactCache // compiled programs by source (compilecache.go)
	settling sync.WaitGroup // cleanups in flight (settle)
}

func (p *pool) Info() Info { return p.info }

// warm starts slot's instance in the background, then makes the slot idle.
// A failed start leaves the slot empty: the next run retries and reports it.
func (p *pool) warm(slot int) {
	go func() {
		inst, err := startInstance(p.ctx, p.l, slot, p.opts.StartTimeout)
		if err != nil {
			inst = nil
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			if inst != nil {
				inst.close()
			}
			return
		}
		p.insts[slot] = inst
		p.mu.Unlock()
		p.free <- slot
	}()
}

func (p *pool) acquire(ctx context.Context) (int, error) {
	select {
	case slot := <-p.free:
		return slot, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-p.ctx.Done():
		return 0, errClosed
	}
}

// release returns slot; recycle replaces its instance first.
func (p *pool) release(slot int, inst *instance, recycle bool) {
	if recycle && inst != nil {
		inst.close()
		inst = nil
	}
	p.mu.Lock()
	closed := p.closed
	p.insts[slot] = inst
	p.mu.Unlock()
	switch {
	case closed:
		if inst != nil {
			inst.close()
		}
	case inst == nil && recycle:
		p.warm(slot)
	default:
		p.free <- slot
	}
}

// Run implements Executor.
func (p *pool) Run(ctx context.Context, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	lim := req.Limits.WithDefaults(p.defaults)
	var artKey string
	if req.Language.Compiled() {
		artKey = p.artifactKey(ctx, req) // before acquire: it may run a probe
	}
	slot, err := p.acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	p.mu.Lock()
	inst := p.insts[slot]
	p.mu.Unlock()
	if inst != nil && inst.dead() {
		inst.close()
		inst = nil
	}
	if inst == nil {
		inst, err = startInstance(ctx, p.l, slot, p.opts.StartTimeout)
		if err != nil {
			p.release(slot, nil, false)
			return Result{}, fmt.Errorf("executors: %s: %w", p.info.Driver, err)
		}
	}
	wl := toWire(lim)
	fallback, err := setRunLimits(ctx, inst.conn, lim)
	if err != nil {
		p.release(slot, inst, true)
		return Result{}, fmt.Errorf("executors: %s: setting the run's limits: %w", p.info.Driver, err)
	}
	if fallback {
		wl.RunMemoryBytes = lim.MemoryBytes
	} else {
		wl.CgroupMemory = true
	}
	start := time.Now()
	inst.runs++
	wreq := wireRequest{
		Op: "run", Lang: req.Language, Code: req.Code, Stdin: req.Stdin, Files: req.Files, Limits: wl,
	}
	wait := lim.WallCap() + grace
	if req.Language.Compiled() {
		clim := req.CompileLimits.WithDefaults(DefaultCompileLimits)
		wreq.CompileLimits, wreq.Artifact = toWire(clim), p.arts.get(artKey)
		if wreq.Artifact == nil {
			wait += clim.Timeout
		}
	}
	resp, err := inst.call(ctx, wreq, wait)
	if err == nil && resp.Artifact != nil {
		p.arts.put(artKey, resp.Artifact)
	}
	var res Result
	switch {
	case err == nil && resp.MissingToolchain:
		p.release(slot, inst, false)
		return Result{}, fmt.Errorf("executors: %s: %w: %s", p.info.Driver, ErrNoToolchain, resp.Error)
	case err == nil && resp.Error != "":
		p.release(slot, inst, resp.Tainted)
		return Result{}, fmt.Errorf("executors: %s runner: %s", p.info.Driver, resp.Error)
	case err == nil:
		res = resp.result()
		// The slot comes back once the runner's cleanup says the instance
		// is clean; the caller has its result already.
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.release(slot, inst, true)
		} else {
			p.settling.Add(1) // under mu: Close waits only after it set closed
			p.mu.Unlock()
			go p.settle(slot, inst, resp.ID)
		}
	case errors.Is(err, errDeadline):
		p.release(slot, inst, true)
		res = Result{ExitCode: -1, TimedOut: true, TimeLimit: TimeLimitWall, Killed: true, Duration: time.Since(start),
			Stderr: "[sandbox: the runner missed the deadline; the sandbox instance was killed]\n"}
	case errors.Is(err, errDied):
		// The program killed its own runner (kill -9 of its parent, kill -1):
		// a result about the program, not a sandbox failure.
		p.release(slot, inst, true)
		res = Result{ExitCode: 137, Signal: "SIGKILL", Killed: true, Duration: time.Since(start),
			Stderr: "[sandbox: the run ended its sandbox instance]\n"}
	default:
		p.release(slot, inst, true)
		return Result{}, fmt.Errorf("executors: %s: %w", p.info.Driver, err)
	}
	p.finish(&res, req.Language)
	return res, nil
}

// settle waits for the runner's cleanup after run id and releases the slot,
// replacing the instance when the run left something behind, the cleanup
// failed, or the instance has served MaxRuns runs.
func (p *pool) settle(slot int, inst *instance, id uint64) {
	defer p.settling.Done()
	done, err := inst.await(p.ctx, id, cleanupWait, nil)
	recycle := err != nil || !done.Done || done.Tainted || inst.runs >= p.opts.MaxRuns
	p.release(slot, inst, recycle)
}

func (p *pool) finish(res *Result, lang Language) {
	res.Driver, res.Image = p.info.Driver, p.info.Image
	if lang == Python && res.ExitCode != 0 && !res.TimedOut {
		res.Exception, res.ErrorLine = ParseTraceback(res.Stderr)
		if res.Exception == "MemoryError" {
			res.OOM = true
		}
	}
	if lang != Python && lang != Bash && lang != SQL {
		scrubScratch(res) // lang.go
	}
	if lang != Python && lang != Bash && lang != SQL && (res.ExitCode != 0 || res.Phase != "") && !res.TimedOut {
		res.Exception, res.ErrorLine, res.Line = ParseDiagnostics(lang, res.Phase, res.Stderr)
		res.OOM = res.OOM || outOfMemory(lang, *res)
	}
}

// Open implements Executor: the session runs on a dedicated instance.
func (p *pool) Open(ctx context.Context, lang Language, opts SessionOptions) (Session, error) {
	if !lang.Valid() {
		return nil, fmt.Errorf("executors: unknown language %q (want one of %s)", lang, LanguageNames())
	}
	if !lang.Sessions() {
		return nil, fmt.Errorf("executors: no sessions for %s (sessions: python, bash, sql, javascript)", lang)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := validateFiles(opts.Files); err != nil {
		return nil, err
	}
	for _, m := range opts.Mounts {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	if _, ok := p.l.(MountLauncher); len(opts.Mounts) > 0 && !ok {
		return nil, ErrNoMounts
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	slot := p.opts.Size
	for p.sessSlot[slot] {
		slot++
	}
	p.sessSlot[slot] = true
	s := &session{p: p, lang: lang, files: opts.Files, mounts: opts.Mounts, lim: opts.Limits.WithDefaults(p.defaults), slot: slot}
	p.sessions[s] = true
	p.mu.Unlock()
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close implements Executor: it ends every instance and session. Runs in
// flight finish with an error or a killed result.
func (p *pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	var sessions []*session
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	p.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	// Cleanups in flight end at once (p.ctx is done) and close their instances.
	p.settling.Wait()
	for {
		select {
		case slot := <-p.free:
			p.mu.Lock()
			inst := p.insts[slot]
			p.insts[slot] = nil
			p.mu.Unlock()
			if inst != nil {
				inst.close()
			}
		default:
			return nil
		}
	}
}

// session is a stateful interpreter on a dedicated instance. After a cell
// misses its deadline or kills its runner, the instance is replaced and the
// session starts again empty (with its files).
type session struct {
	p      *pool
	lang   Language
	files  map[string][]byte
	mounts []Mount
	lim    Limits
	slot   int

	mu     sync.Mutex
	inst   *instance
	direct *kernelPath // python cells from the host to the kernel (kernelpath.go), or nil
	closed bool
}

func (s *session) start(ctx context.Context) error {
	inst, err := startInstance(ctx, s.p.l, s.slot, s.p.opts.StartTimeout, s.mounts...)
	if err != nil {
		return fmt.Errorf("executors: %s session: %w", s.p.info.Driver, err)
	}
	// A session's cells share one instance: its whole-instance limits are
	// the session's (no accounting fallback: cells keep their rlimits).
	fallback, err := setRunLimits(ctx, inst.conn, s.lim)
	if err != nil {
		inst.close()
		return fmt.Errorf("executors: %s session: setting limits: %w", s.p.info.Driver, err)
	}
	wl := toWire(s.lim)
	wl.CgroupMemory = !fallback
	var direct *kernelPath
	if s.lang == Python && !fallback {
		if direct, err = newKernelPath(inst.conn); err != nil {
			inst.close()
			return fmt.Errorf("executors: %s session: %w", s.p.info.Driver, err)
		}
	}
	wreq := wireRequest{Op: "session", Lang: s.lang, Files: s.files, Limits: wl}
	if direct != nil {
		wreq.ChannelFD = direct.chFD
	}
	resp, err := inst.call(ctx, wreq, s.p.opts.StartTimeout)
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err == nil && direct != nil {
		err = direct.takeKernel()
	}
	if err != nil {
		if direct != nil {
			direct.close()
		}
		inst.close()
		return fmt.Errorf("executors: %s: opening %s session: %w", s.p.info.Driver, s.lang, err)
	}
	s.inst, s.direct = inst, direct
	return nil
}

func (s *session) kill() {
	if s.direct != nil {
		s.direct.close()
		s.direct = nil
	}
	if s.inst != nil {
		s.inst.close()
		s.inst = nil
	}
}

// Exec implements Session.
func (s *session) Exec(ctx context.Context, code string) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Result{}, errors.New("executors: session is closed")
	}
	if strings.TrimSpace(code) == "" {
		return Result{}, errors.New("executors: empty code")
	}
	if s.inst == nil || s.inst.dead() {
		s.kill()
		if err := s.start(ctx); err != nil {
			return Result{}, err
		}
	}
	start := time.Now()
	// The runner stops a cell past its CPU-time limit or its wall-clock cap
	// (and restarts the session); this wait is only the guard against a
	// runner that hangs, with room for a bash cell's state save.
	var resp wireResponse
	var err error
	if s.direct != nil {
		resp, err = s.direct.exec(ctx, s.inst, code, s.lim)
	} else {
		resp, err = s.inst.call(ctx, wireRequest{Op: "cell", Code: code}, s.lim.WallCap()+grace)
	}
	var res Result
	switch {
	case err == nil && resp.Error != "":
		return Result{}, fmt.Errorf("executors: %s runner: %s", s.p.info.Driver, resp.Error)
	case err == nil:
		res = resp.result()
	case errors.Is(err, errDeadline):
		s.kill()
		res = Result{ExitCode: -1, TimedOut: true, TimeLimit: TimeLimitWall, Killed: true, Duration: time.Since(start),
			Stderr: fmt.Sprintf("[sandbox: the session's runner did not answer within %v; the session was restarted and its state is lost]\n", s.lim.WallCap()+grace)}
	case errors.Is(err, errDied):
		s.kill()
		res = Result{ExitCode: 137, Signal: "SIGKILL", Killed: true, Duration: time.Since(start),
			Stderr: "[sandbox: the cell ended its sandbox instance; the session was restarted and its state is lost]\n"}
	default:
		s.kill()
		return Result{}, fmt.Errorf("executors: %s session: %w", s.p.info.Driver, err)
	}
	if s.inst == nil {
		// Restart now so the next cell finds a ready session; a failure here
		// is retried by the next Exec.
		_ = s.start(ctx)
	}
	s.p.finish(&res, s.lang)
	return res, nil
}

// KernelPathCells says how many of the session's cells went from the host
// straight to its python kernel, with no runner on their path
// (kernelpath.go), since its instance started: tests and perfbench read it
// (through an interface of their own).
func (s *session) KernelPathCells() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.direct == nil {
		return 0
	}
	return s.direct.served
}

// Reset implements Session: state and files go back to how Open left them.
func (s *session) Reset(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("executors: session is closed")
	}
	if s.inst != nil && !s.inst.dead() {
		resp, err := s.inst.call(ctx, wireRequest{Op: "reset"}, s.p.opts.StartTimeout)
		if err == nil && resp.Error == "" && s.direct != nil {
			err = s.direct.takeKernel() // the runner started a fresh kernel
		}
		if err == nil && resp.Error == "" {
			return nil
		}
	}
	s.kill()
	return s.start(ctx)
}

// SandboxOwner implements SandboxOwner where the launcher knows its uids.
func (s *session) SandboxOwner() (uid, gid int) {
	if ml, ok := s.p.l.(MountLauncher); ok {
		return ml.SlotOwner(s.slot)
	}
	return os.Getuid(), os.Getgid()
}

// Close implements Session.
func (s *session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.kill()
	s.p.mu.Lock()
	delete(s.p.sessSlot, s.slot)
	delete(s.p.sessions, s)
	s.p.mu.Unlock()
	return nil
}
