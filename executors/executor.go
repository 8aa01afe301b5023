// Package executors runs untrusted, model-written code and reports what
// happened. It holds the portable types and a small driver contract; drivers
// (executors/bwrap, executors/docker) register a URL scheme in init and are
// opened with Open("bwrap://?memory=512MiB") or Open("docker://python:3.12-slim?pool=4").
//
// A failing program is data, not an error: exit status, timeout and OOM are
// fields of Result. A non-nil error means the sandbox itself failed or the
// request was invalid.
package executors

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/internal/registry"
)

// Language is a runner inside the sandbox, not a driver.
type Language string

const (
	Python Language = "python"
	Bash   Language = "bash"
	SQL    Language = "sql" // SQLite; rows printed as a table
)

// Limits bound one run. Zero fields take the driver's defaults.
type Limits struct {
	// Timeout is the run's time limit, counted in CPU time of all its
	// processes together: a loaded machine stretches wall time, and a
	// correct program must not time out for it. WallTimeout caps the wall
	// clock (a program that sleeps or waits spends no CPU); zero means
	// WallCap's generous default.
	Timeout     time.Duration `json:"timeout"`
	WallTimeout time.Duration `json:"wall_timeout,omitempty"`
	MemoryBytes int64         `json:"memory_bytes"` // address space / cgroup memory
	CPUTime     time.Duration `json:"cpu_time"`
	Processes   int           `json:"processes"`
	FileBytes   int64         `json:"file_bytes"`   // largest file a run may write
	OpenFiles   int           `json:"open_files"`   //
	OutputBytes int           `json:"output_bytes"` // per stream; beyond it output is cut with a marker
}

// WallCap is the run's wall-clock limit: WallTimeout, else four times
// Timeout plus 10 s. A run that computes is ended by its CPU time long
// before; the cap ends one that waits, and leaves a CPU-bound program
// a fourfold slowdown from load and more for short limits.
func (l Limits) WallCap() time.Duration {
	if l.WallTimeout > 0 {
		return max(l.WallTimeout, l.Timeout)
	}
	return 4*l.Timeout + 10*time.Second
}

// DefaultLimits are used where a request leaves a limit at zero.
var DefaultLimits = Limits{
	Timeout:     10 * time.Second,
	MemoryBytes: 512 << 20,
	CPUTime:     10 * time.Second,
	Processes:   64,
	FileBytes:   64 << 20,
	OpenFiles:   256,
	OutputBytes: 64 << 10,
}

// Request is one program to run.
type Request struct {
	Language Language
	Code     string
	Stdin    string
	// Files are written into the run's private scratch directory before the
	// run (e.g. a SQLite database for SQL).
	Files  map[string][]byte
	Limits Limits
	// CompileLimits bound the compile step of compiled languages, apart
	// from the run's Limits; zero fields take DefaultCompileLimits.
	CompileLimits Limits
}

// Result is what happened. Python runs also get the exception type and the
// traceback's last line, parsed from stderr.
type Result struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out"`
	// TimeLimit names the limit a timed-out run or cell passed: TimeLimitCPU
	// (its processes' CPU time together, Limits.Timeout) or TimeLimitWall
	// (the wall-clock cap, Limits.WallCap, for one that waited).
	TimeLimit string `json:"time_limit,omitempty"`
	// OOM: the run died for memory, by its address-space rlimit (MemoryError
	// and the like on stderr) or by the sandbox's cgroup memory limit (its
	// oom_kill counter moved during the run: Docker; bwrap has no cgroup).
	OOM             bool          `json:"oom"`
	Killed          bool          `json:"killed"`
	StdoutTruncated bool          `json:"stdout_truncated"`
	StderrTruncated bool          `json:"stderr_truncated"`
	Exception       string        `json:"exception,omitempty"`
	ErrorLine       string        `json:"error_line,omitempty"`
	Duration        time.Duration `json:"duration"`
	// Compiled languages: Phase is "compile" when the compiler failed (the
	// program never ran; Stderr holds the compiler's output, Exception is
	// "CompileError" and ErrorLine its first error); CompileDuration is the
	// compiler's wall time, zero when the artifact came from the compile
	// cache (CompileCached).
	Phase           string        `json:"phase,omitempty"`
	CompileDuration time.Duration `json:"compile_duration,omitempty"`
	CompileCached   bool          `json:"compile_cached,omitempty"`
	// Line is the program's source line of the compile error or of the
	// innermost frame of the uncaught error, when the language reports one.
	Line   int    `json:"line,omitempty"`
	Driver string `json:"driver"`
	Image  string `json:"image,omitempty"`
}

// Values of Result.TimeLimit.
const (
	TimeLimitCPU  = "cpu"
	TimeLimitWall = "wall"
)

// OK reports whether the program ran to a zero exit within its limits.
func (r Result) OK() bool { return r.ExitCode == 0 && !r.TimedOut && !r.OOM && !r.Killed }

// Info describes an opened executor, for execution records and cache keys.
type Info struct {
	Driver string `json:"driver"`
	Image  string `json:"image,omitempty"` // image name and digest; for bwrap "host:python3.X@size-mtime" of the host interpreter
	Limits Limits `json:"limits"`
	// DiskBytes is the scratch room each run and session gets (bwrap
	// disk=, docker tmp=). Declared here, not through a method of the
	// driver's own type, so every wrapper (WithCache) passes it on:
	// InterCode's bash environment bounds an episode's writes by it.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// SyscallFilter: the driver runs code under a seccomp denylist of its
	// own (bwrap on amd64); without one, the engine's profile applies.
	SyscallFilter bool `json:"syscall_filter,omitempty"`
}

// Executor runs programs. Implementations are safe for concurrent use.
type Executor interface {
	// Run executes one program in a fresh, isolated scratch space.
	Run(ctx context.Context, req Request) (Result, error)
	// Open starts a stateful session (like a notebook kernel): state and
	// files persist between cells until Reset or Close.
	Open(ctx context.Context, lang Language, opts SessionOptions) (Session, error)
	Info() Info
	Close() error
}

// SessionOptions configure a session.
type SessionOptions struct {
	Files  map[string][]byte // placed in the session's scratch at open and at Reset
	Limits Limits            // per cell
	// Mounts bind host directories into the session's sandbox (e.g. a
	// task's prepared /testbed). Drivers whose launcher is not a
	// MountLauncher refuse them with ErrNoMounts.
	Mounts []Mount
}

// Mount binds a host file or directory into a sandbox at an absolute path.
// The host side stays owned by the caller; a writable mount's files must
// belong to the sandbox's user (see SandboxOwner) for it to write them.
//
// Target "/" makes a host directory the sandbox's root file system (an
// InterCode task that writes into / must leave its changes where the host
// can compare them): the driver still mounts its own /usr, /proc, /dev,
// /etc, /sys and /tmp over it, creating those mount points (and the /bin,
// /sbin, /lib links into /usr) in the directory. Drivers that cannot
// refuse it with ErrNoRootMount.
//
// System (Target "/") names a root file system (a debootstrap, an exported
// image) whose /usr, /etc and /var the sandbox gets, read-only, instead of
// the driver's own: an InterCode task must see its image's tools, not the
// host's. Drivers whose system comes from an image refuse it with
// ErrNoRootMount.
type Mount struct {
	Source   string // absolute host path
	Target   string // absolute path in the sandbox, outside its system directories and /tmp
	ReadOnly bool
	System   bool
}

// ErrNoMounts: the driver cannot bind host directories into a session.
var ErrNoMounts = errors.New("executors: this driver cannot mount host directories into a session")

// ErrNoRootMount: the driver cannot make a host directory the sandbox's
// root (a Mount with Target "/").
var ErrNoRootMount = errors.New("executors: this driver cannot mount a host directory as the sandbox's root")

// SandboxOwner is implemented by sessions that know the host uid and gid
// their sandbox runs as: files under a writable mount must belong to them.
type SandboxOwner interface {
	SandboxOwner() (uid, gid int)
}

// reservedTargets may not be mount targets: the sandbox's system and
// scratch directories.
var reservedTargets = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/sys", "/tmp", "/run", "/var/tmp"}

// Validate checks a mount's paths.
func (m Mount) Validate() error {
	if !path.IsAbs(m.Source) || !path.IsAbs(m.Target) || path.Clean(m.Target) != m.Target || m.Source == "/" {
		return fmt.Errorf("executors: bad mount %s -> %s (want absolute paths, a clean target, a source other than /)", m.Source, m.Target)
	}
	if m.Target == "/" {
		return nil
	}
	if m.System {
		return fmt.Errorf("executors: system mount %s -> %s: want target /", m.Source, m.Target)
	}
	for _, r := range reservedTargets {
		if m.Target == r || strings.HasPrefix(m.Target, r+"/") {
			return fmt.Errorf("executors: mount target %s is inside the sandbox's own %s", m.Target, r)
		}
	}
	return nil
}

// Session is a stateful interpreter. Not safe for concurrent use.
type Session interface {
	// Exec runs one cell. A cell that times out ends the session's state:
	// the result says TimedOut and the session restarts empty.
	Exec(ctx context.Context, code string) (Result, error)
	Reset(ctx context.Context) error
	Close() error
}

// Opener opens an executor from a URL such as bwrap://?memory=512MiB.
type Opener func(ctx context.Context, u *url.URL) (Executor, error)

var (
	drivers  = registry.Named[Opener]{Kind: "executors: driver"}
	checkers = registry.Named[Checker]{Kind: "executors: checker"}
)

// Register makes a driver available by URL scheme. Duplicate schemes panic:
// two drivers claiming one scheme is a programming error.
func Register(scheme string, o Opener) { drivers.Add(scheme, o) }

// Drivers lists registered schemes, sorted.
func Drivers() []string { return drivers.Names() }

// Open opens an executor by URL (see ParseURL). The URL is checked first
// (Check), so a bad option fails here and not on the first run; then a
// trivial program must run under the URL's limits (Preflight), so a
// sandbox that cannot run anything fails here too, naming the cause.
func Open(ctx context.Context, rawURL string) (Executor, error) {
	ex, err := OpenUnchecked(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	if err := Preflight(ctx, ex); err != nil {
		ex.Close()
		return nil, err
	}
	return ex, nil
}

// OpenUnchecked is Open without the pre-flight run, for a caller that runs
// one program and calls Preflight only when that program fails (`codefeedback
// exec`): a working sandbox then costs one run instead of two.
func OpenUnchecked(ctx context.Context, rawURL string) (Executor, error) {
	if err := Check(rawURL); err != nil {
		return nil, err
	}
	u, _ := ParseURL(rawURL)
	o, _ := drivers.Get(u.Scheme) // Check found it
	return o(ctx, u)
}
