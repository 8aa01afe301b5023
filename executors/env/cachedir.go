package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CompleteMarker is the file a finished cache directory holds.
const CompleteMarker = ".complete"

// BuildOnce makes dir hold what build writes, once across processes: the
// first caller builds into a private temporary sibling of dir and renames it
// into place when complete; callers that come meanwhile wait on a lock
// (flock on dir+".lock") and then find it done. A finished dir is never
// removed or replaced, so a reader that saw it complete can go on using it.
// build must fill the directory it is given; it runs at most once per
// missing dir.
func BuildOnce(dir string, build func(tmp string) error) error {
	if Complete(dir) {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("cache lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("cache lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if Complete(dir) { // built while we waited
		return nil
	}
	tmp, err := os.MkdirTemp(parent, filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after a successful rename
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := build(tmp); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, CompleteMarker), nil, 0o644); err != nil {
		return err
	}
	// An incomplete dir is a crashed build (we hold the lock): replace it.
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, dir)
}

// Complete reports whether dir is a finished cache directory.
func Complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, CompleteMarker))
	return err == nil
}
