package executors

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// RunnerSource is the in-sandbox runner (runner.py): a long-lived python3
// process that speaks line-delimited JSON on stdin/stdout.
//
//go:embed runner.py
var runnerPy string

// langsPy holds the languages beyond python, bash and sql (a table and a
// compile step); it comes first so runner.py's main() finds its functions.
//
//go:embed langs.py
var langsPy string

// RunnerSource is langs.py followed by runner.py: one program.
var RunnerSource = langsPy + "\n" + runnerPy

// RunnerArgv is the argv the pool passes to Launcher.Launch:
//
//	python3 -u -s -c <runnerBoot>
//
// runnerBoot reads RunnerSource from stdin (RunnerInput, which the pool
// writes first) and runs it, rather than the source riding in argv: argv is
// /proc/1/cmdline, and `ps aux` in a sandbox printed the whole runner, a
// hundred kilobytes of harness, into the dialogue (InterCode's fs_4 #5).
// It needs only python3 on PATH inside the sandbox and nothing written into
// the image. Launchers start it with RunnerEnv and nothing else from the
// host (not -I: isolated mode would ignore PYTHONHASHSEED). The runner keeps its scratch under /tmp/cf, so /tmp must be a
// private writable tmpfs; it treats pid 1 and its own ancestors as the
// sandbox and SIGKILLs every other process after each run.
func RunnerArgv() []string {
	return []string{"python3", "-u", "-s", "-c", runnerBoot}
}

// runnerBoot reads a decimal length line and that many bytes from fd 0,
// unbuffered, so that the protocol lines after them stay in the pipe for
// the runner, and runs them as __main__.
const runnerBoot = `import os
n = b""
while not n.endswith(b"\n"):
    c = os.read(0, 1)
    if not c:
        raise SystemExit("runner: no source on stdin")
    n += c
n, src = int(n), []
while n > 0:
    c = os.read(0, min(n, 1 << 16))
    if not c:
        raise SystemExit("runner: source cut short")
    src.append(c)
    n -= len(c)
del n, c
exec(compile(b"".join(src), "runner", "exec"))
`

// RunnerInput is what a launched runner must read first on its stdin: the
// length of RunnerSource, a newline, and the source.
func RunnerInput() []byte {
	return []byte(fmt.Sprintf("%d\n%s", len(RunnerSource), RunnerSource))
}

// RunnerEnv is the runner's whole environment, as NAME=VALUE. A fixed hash
// seed makes set and dict orders, and so outputs, the same on every run.
func RunnerEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "PYTHONHASHSEED=0"}
}

// maxLine bounds one protocol line from the runner (results carry at most
// two capped streams, JSON-escaped).
const maxLine = 64 << 20

type wireLimits struct {
	// TimeoutSeconds is the run's time limit in CPU-seconds of all its
	// processes (a timeout, not SIGXCPU); WallSeconds caps its wall time.
	TimeoutSeconds float64 `json:"timeout_seconds"`
	WallSeconds    float64 `json:"wall_seconds,omitempty"`
	MemoryBytes    int64   `json:"memory_bytes"`
	CPUSeconds     int64   `json:"cpu_seconds"`
	Processes      int     `json:"processes"`
	FileBytes      int64   `json:"file_bytes"`
	OpenFiles      int     `json:"open_files"`
	OutputBytes    int     `json:"output_bytes"`
	// RunMemoryBytes > 0 asks the runner to add up the run's memory (all its
	// processes, tmpfs and SysV shared memory) and kill the run past it: the
	// fallback where no cgroup bounds the instance.
	RunMemoryBytes int64 `json:"run_memory_bytes,omitempty"`
	// RunCPUSeconds bounds the CPU time of all the run's processes
	// together (the instance's cgroup counter, else the runner adds up
	// /proc); CPUSeconds stays each process's RLIMIT_CPU.
	RunCPUSeconds float64 `json:"run_cpu_seconds,omitempty"`
	// Inodes bounds the files and directories a run creates on its tmpfs
	// mounts; past it the run is killed.
	Inodes int `json:"inodes,omitempty"`
	// CgroupMemory says the instance's memory cgroup holds the run's
	// memory limit, so no process gets an address-space rlimit.
	CgroupMemory bool `json:"cgroup_memory,omitempty"`
}

// RunInodes is how many files and directories one run may create on the
// sandbox's tmpfs mounts (its scratch, /tmp, /dev/shm). Far more than
// programs under test write; it stops a run that fills the tmpfs with
// empty directories, whose removal held up the next run by half a minute.
const RunInodes = 16384

func toWire(l Limits) *wireLimits {
	cpu := int64((l.CPUTime + time.Second - 1) / time.Second)
	return &wireLimits{
		TimeoutSeconds: l.Timeout.Seconds(), WallSeconds: l.WallCap().Seconds(), MemoryBytes: l.MemoryBytes, CPUSeconds: cpu,
		Processes: l.Processes, FileBytes: l.FileBytes, OpenFiles: l.OpenFiles, OutputBytes: l.OutputBytes,
		RunCPUSeconds: l.CPUTime.Seconds(), Inodes: RunInodes,
	}
}

type wireRequest struct {
	Op     string            `json:"op"`
	ID     uint64            `json:"id"`
	Lang   Language          `json:"lang,omitempty"`
	Code   string            `json:"code,omitempty"`
	Stdin  string            `json:"stdin,omitempty"`
	Files  map[string][]byte `json:"files,omitempty"`
	Limits *wireLimits       `json:"limits,omitempty"`
	// Compiled languages: limits of the compile step, and the artifact of
	// an earlier identical compile (the runner then skips the compiler).
	CompileLimits *wireLimits       `json:"compile_limits,omitempty"`
	Artifact      map[string][]byte `json:"artifact,omitempty"`
	// A python session whose cells the host runs on the kernel itself
	// (kernelpath.go): the channel's descriptor in the runner (op
	// session); the cell's number, whether the kernel handed it back to
	// be compiled with the AST (op cell); how a cell the host ran ended
	// and what it read before it (op cell_end).
	ChannelFD  int     `json:"channel_fd,omitempty"`
	N          int     `json:"n,omitempty"`
	AST        bool    `json:"ast,omitempty"`
	What       string  `json:"what,omitempty"`
	Begin      []int64 `json:"begin,omitempty"`
	OOMs       *int64  `json:"ooms,omitempty"`
	DurationNS int64   `json:"duration_ns,omitempty"`
}

type wireResponse struct {
	Ready    bool   `json:"ready"`
	PID      int    `json:"pid"`
	Python   string `json:"python"`
	HashSeed string `json:"hash_seed"`

	ID    uint64 `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`

	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	TimedOut        bool   `json:"timed_out"`
	TimeLimit       string `json:"time_limit"`
	OOM             bool   `json:"oom"`
	Killed          bool   `json:"killed"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	DurationNS      int64  `json:"duration_ns"`
	// Done marks the line after a run's result: the cleanup finished, and
	// Tainted says the instance must be replaced (Taint says why).
	Done    bool   `json:"done"`
	Tainted bool   `json:"tainted"`
	Taint   string `json:"taint"`

	// Compiled languages (langs.py).
	Phase            string            `json:"phase"`
	CompileNS        int64             `json:"compile_ns"`
	CompileCached    bool              `json:"compile_cached"`
	Artifact         map[string][]byte `json:"artifact"`
	MissingToolchain bool              `json:"missing_toolchain"`
	Langs            []LanguageStatus  `json:"langs"`
}

func (w wireResponse) result() Result {
	return Result{
		Stdout: strings.ToValidUTF8(w.Stdout, "\uFFFD"), Stderr: strings.ToValidUTF8(w.Stderr, "\uFFFD"),
		ExitCode: w.ExitCode, Signal: w.Signal, TimedOut: w.TimedOut, TimeLimit: w.TimeLimit, OOM: w.OOM, Killed: w.Killed,
		StdoutTruncated: w.StdoutTruncated, StderrTruncated: w.StderrTruncated,
		Duration: time.Duration(w.DurationNS),
		Phase:    w.Phase, CompileDuration: time.Duration(w.CompileNS), CompileCached: w.CompileCached,
	}
}

// Errors from instance.call.
var (
	errDeadline = errors.New("runner did not answer before the deadline")
	errDied     = errors.New("sandbox instance ended")
)

// PipeConn is an optional Conn capability: the runner's stdout is a pipe
// the pool may read directly. The pool then reads each answer on the
// calling goroutine, bounded by a read deadline, rather than through a
// reader goroutine that hands every line over: that hand-off (a netpoll
// wake-up and a goroutine switch per line) was about half the host's CPU
// for a session cell. Reads other than the runner's answers (the reason
// the sandbox ended) still go through the Conn.
type PipeConn interface {
	Conn
	StdoutPipe() *os.File
	StdinPipe() *os.File
}

// instance is one runner process in one sandbox instance. It serves one
// request at a time; the pool guarantees that.
type instance struct {
	conn Conn
	slot int
	// pipe and br: the direct reads of a PipeConn (nil otherwise).
	pipe *os.File
	br   *bufio.Reader
	// w takes the requests: the raw stdin pipe of a PipeConn, else conn.
	w io.Writer
	// lines: the reader goroutine's lines, for other Conns.
	lines  chan []byte
	readEr error // set before lines is closed
	nextID uint64
	runs   int
	done   chan struct{}
	once   sync.Once
}

// startInstance launches a runner and waits for its ready line.
func startInstance(ctx context.Context, l Launcher, slot int, wait time.Duration, mounts ...Mount) (*instance, error) {
	var conn Conn
	var err error
	if len(mounts) > 0 {
		ml, ok := l.(MountLauncher)
		if !ok {
			return nil, ErrNoMounts
		}
		conn, err = ml.LaunchMounts(ctx, slot, RunnerArgv(), mounts)
	} else {
		conn, err = l.Launch(ctx, slot, RunnerArgv())
	}
	if err != nil {
		return nil, fmt.Errorf("launching sandbox instance %d: %w", slot, err)
	}
	in := &instance{conn: conn, slot: slot, done: make(chan struct{}), w: conn}
	if pc, ok := conn.(PipeConn); ok {
		in.usePipes(pc)
	} else {
		in.lines = make(chan []byte, 1)
		go in.readLoop()
	}
	// In the background: a runner that never reads ends as "not ready"
	// (the wait below), and a failed write as the runner's early exit.
	go func() { _, _ = conn.Write(RunnerInput()) }()
	line, err := in.next(ctx, wait, nil)
	switch {
	case errors.Is(err, errDied):
		in.close()
		return nil, fmt.Errorf("sandbox instance %d: runner exited before it was ready: %w", slot, err)
	case errors.Is(err, errDeadline):
		in.close()
		return nil, fmt.Errorf("sandbox instance %d: runner not ready after %v", slot, wait)
	case err != nil:
		in.close()
		return nil, fmt.Errorf("sandbox instance %d: waiting for runner: %w", slot, err)
	default:
		var w wireResponse
		if err := json.Unmarshal(line, &w); err != nil || !w.Ready {
			in.close()
			return nil, fmt.Errorf("sandbox instance %d: runner sent %q instead of its ready line", slot, truncate(line, 200))
		}
		if w.HashSeed != "0" {
			in.close()
			return nil, fmt.Errorf("sandbox instance %d: runner started with PYTHONHASHSEED=%q, want 0 (the launcher must pass RunnerEnv)", slot, w.HashSeed)
		}
		if s, ok := conn.(Starter); ok {
			if err := s.Started(ctx); err != nil {
				in.close()
				return nil, fmt.Errorf("sandbox instance %d: %w", slot, err)
			}
		}
		return in, nil
	}
}

// usePipes makes the instance read answers from pc's stdout pipe and
// write requests into its stdin pipe directly, with raw system calls
// where the pipes allow them (rawPipe).
func (in *instance) usePipes(pc PipeConn) {
	in.pipe = pc.StdoutPipe()
	in.br = newLineReader(in.pipe)
	if rp := newRawPipe(in.pipe); rp != nil {
		in.br = newLineReader(rp)
	}
	if rp := newRawPipe(pc.StdinPipe()); rp != nil {
		in.w = rp
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

func newLineReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 1<<16) }

// readLine reads one protocol line (at most maxLine bytes).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(line) > maxLine {
			return nil, fmt.Errorf("runner line longer than %d bytes", maxLine)
		}
	}
}

func (in *instance) readLoop() {
	r := newLineReader(in.conn)
	defer close(in.lines)
	for {
		line, err := readLine(r)
		if err != nil {
			in.readEr = err
			return
		}
		select {
		case in.lines <- line:
		case <-in.done:
			return
		}
	}
}

// call sends one request and waits up to wait for its answer. On any error
// the instance is unusable and the caller must close it.
func (in *instance) call(ctx context.Context, req wireRequest, wait time.Duration) (wireResponse, error) {
	in.nextID++
	req.ID = in.nextID
	data, err := json.Marshal(req)
	if err != nil {
		return wireResponse{}, fmt.Errorf("encoding request: %w", err)
	}
	data = append(data, '\n')
	wrote := make(chan error, 1)
	if len(data) <= 4096 {
		// Fits the pipe buffer of an idle runner: no goroutine needed.
		_, err := in.w.Write(data)
		wrote <- err
	} else {
		go func() {
			_, err := in.w.Write(data)
			wrote <- err
		}()
	}
	return in.await(ctx, req.ID, wait, wrote)
}

// await reads the next line, which must answer request id, waiting up to
// wait; wrote, if not nil, reports the request's write.
func (in *instance) await(ctx context.Context, id uint64, wait time.Duration, wrote chan error) (wireResponse, error) {
	line, err := in.next(ctx, wait, wrote)
	if err != nil {
		return wireResponse{}, err
	}
	var w wireResponse
	if err := decodeResponse(line, &w); err != nil {
		return wireResponse{}, fmt.Errorf("%w: runner sent a bad line %q", errDied, truncate(line, 200))
	}
	if w.ID != id {
		return wireResponse{}, fmt.Errorf("%w: runner answered request %d, want %d", errDied, w.ID, id)
	}
	return w, nil
}

// next returns the runner's next line, waiting up to wait. Errors:
// errDeadline, errDied (wrapped, with the reason), or ctx's. wrote, if
// not nil, reports the request's write.
func (in *instance) next(ctx context.Context, wait time.Duration, wrote chan error) ([]byte, error) {
	if in.pipe != nil {
		return in.nextPipe(ctx, wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case err := <-wrote:
			if err != nil {
				return nil, fmt.Errorf("%w: writing request: %v", errDied, err)
			}
			wrote = nil
		case line, ok := <-in.lines:
			if !ok {
				return nil, fmt.Errorf("%w: %v", errDied, in.readEr)
			}
			return line, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, errDeadline
		}
	}
}

// longAgo is a read deadline that has passed: it stops a read at once.
var longAgo = time.Unix(1, 0)

// nextPipe is next on a PipeConn: a read on this goroutine, stopped by
// its deadline or by ctx. A request's failed write needs no watching: the
// runner then has ended (its output too) or stopped reading (the
// deadline).
func (in *instance) nextPipe(ctx context.Context, wait time.Duration) ([]byte, error) {
	if err := in.pipe.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return nil, fmt.Errorf("%w: %v", errDied, err)
	}
	defer stopReadsAtCancel(ctx, in.pipe)()
	line, err := readLine(in.br)
	switch {
	case err == nil:
		return line, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errDeadline
	case errors.Is(err, io.EOF):
		// The Conn says why the sandbox ended where it knows.
		if _, cerr := in.conn.Read(make([]byte, 1)); cerr != nil {
			err = cerr
		}
	}
	return nil, fmt.Errorf("%w: %v", errDied, err)
}

// stopReadsAtCancel makes f's reads stop when ctx ends (a read deadline in
// the past) until the returned func is called.
func stopReadsAtCancel(ctx context.Context, f *os.File) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = f.SetReadDeadline(longAgo)
		close(fired)
	})
	return func() {
		// A cancellation racing a finished read must not leave its past
		// deadline for the next read: wait until it is set (the next read
		// sets its own).
		if !stop() {
			<-fired
		}
	}
}

// dead reports whether the runner's output has ended (or holds a line no
// request asked for: the protocol is out of step).
func (in *instance) dead() bool {
	if in.pipe != nil {
		if in.br.Buffered() > 0 {
			return true
		}
		rc, err := in.pipe.SyscallConn()
		if err != nil {
			return true
		}
		ready := false
		if err := rc.Control(func(fd uintptr) { ready = readable(fd) }); err != nil {
			return true
		}
		return ready
	}
	select {
	case line, ok := <-in.lines:
		if ok {
			// An unsolicited line: the protocol is out of step.
			_ = line
			return true
		}
		return true
	default:
		return false
	}
}

func (in *instance) close() {
	in.once.Do(func() {
		close(in.done)
		in.conn.Close()
	})
}
