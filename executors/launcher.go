package executors

import (
	"context"
	"io"
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
