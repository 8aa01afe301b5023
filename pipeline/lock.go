package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrLocked means another process is running on the same run directory.
var ErrLocked = errors.New("run directory is in use by another run")

// runLock is an exclusive flock on RUN/lock. The kernel drops it when the
// process dies, so a kill -9 never leaves a stale lock behind.
type runLock struct{ f *os.File }

func lockRunDir(dir string) (*runLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pipeline: create run directory: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pipeline: open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (held by %s); wait for it to finish or use another --run-dir",
				ErrLocked, dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("pipeline: lock %s: %w", path, err)
	}
	// Who holds it, for the message above; informational only.
	host, _ := os.Hostname()
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().Format(time.RFC3339))), 0)
	return &runLock{f: f}, nil
}

// withRunLock runs fn holding dir's lock.
func withRunLock(dir string, fn func() error) error {
	lk, err := lockRunDir(dir)
	if err != nil {
		return err
	}
	defer lk.unlock()
	return fn()
}

func (l *runLock) unlock() error {
	// Closing the descriptor releases the flock.
	return l.f.Close()
}
