package executors

import (
	"context"
	"errors"
	"io"
	"os"
)

// Launcher is the part of a driver that differs between sandboxes: it starts
// one long-lived runner process inside a fresh, isolated sandbox instance and
// connects to its stdin and stdout. Everything above it (the in-sandbox runner
// that forks a child per run, the wire protocol, pooling, sessions, parsing of
// results) is shared by all drivers, so both drivers behave the same.
type Launcher interface {
	// Launch starts argv (e.g. python3 -u -c <runner source>) in a new
	// sandbox instance. slot distinguishes concurrent instances (a driver may
	// give each slot its own uid).
	Launch(ctx context.Context, slot int, argv []string) (Conn, error)
	// Info names the driver and image for execution records.
	Info() Info
}

// Conn is the pipe pair to one runner process. Close tears the whole
// sandbox instance down (kills every process in it, removes its scratch).
type Conn interface {
	io.Reader // the runner's stdout
	io.Writer // the runner's stdin
	Close() error
}

// MountLauncher is an optional Launcher capability: start an instance with
// host paths bound in, for sessions opened with SessionOptions.Mounts.
type MountLauncher interface {
	LaunchMounts(ctx context.Context, slot int, argv []string, mounts []Mount) (Conn, error)
	// SlotOwner is the host uid and gid the instance on slot runs as.
	SlotOwner(slot int) (uid, gid int)
}

// Starter is an optional Conn capability: Started is called once the runner
// is ready and idle, before the first run (e.g. to move the instance's
// processes into its cgroup). An error discards the instance.
type Starter interface {
	Started(ctx context.Context) error
}

// RunLimiter is an optional Conn capability: an instance whose memory and
// process limits hold for all its processes together (a cgroup: its
// processes, their IPC objects and tmpfs pages), so they can be one run's
// limits. The pool calls SetRunLimits before every run and every session
// with that run's limits; implementations make it cheap when nothing
// changed. ErrNoRunLimits says the instance has no such limits; the pool
// then asks the runner to account for the run's memory and kill it past the
// limit. Any other error discards the instance.
type RunLimiter interface {
	SetRunLimits(ctx context.Context, lim Limits) error
}

// ErrNoRunLimits is returned by RunLimiter.SetRunLimits where the instance
// has no whole-run limits (cgroups not writable).
var ErrNoRunLimits = errors.New("executors: no whole-run limits on this instance")

// setRunLimits applies lim to conn where it can. It returns whether the
// runner must account for the run's memory itself.
func setRunLimits(ctx context.Context, conn Conn, lim Limits) (fallback bool, err error) {
	rl, ok := conn.(RunLimiter)
	if !ok {
		return true, nil
	}
	err = rl.SetRunLimits(ctx, lim)
	if errors.Is(err, ErrNoRunLimits) {
		return true, nil
	}
	return false, err
}

// KernelChannel is an optional Conn capability (bwrap): a Unix socket into
// the instance, and the instance's cgroup counters, with which a python
// session's cells go from the host straight to the kernel process that
// runs them, without the runner on their path (kernelpath.go).
type KernelChannel interface {
	// Channel is the host's end of the socket and the descriptor number of
	// the other end in the runner.
	Channel() (host *os.File, sandboxFD int)
	// Counters are the instance's cgroup files: its CPU time (cgroup v1
	// cpuacct.usage in ns, or v2 cpu.stat), its OOM kills
	// (memory.oom_control or memory.events) and its processes
	// (cgroup.procs, host pids).
	Counters() (cpu, oom, procs string)
}
