package executors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// SlotsPerBlock is how many sandbox slots (pool slots and sessions) one
// IDBlock names; slot n runs as Base+n%SlotsPerBlock.
const SlotsPerBlock = 1024

// IDBlock is a range of host uids reserved for one executor: no other
// executor on this host (in this process or another) gets the same uids
// while it is held, so per-uid kernel limits (RLIMIT_NPROC) and signal
// permissions never span two executors. The reservation is an flock on a
// file in a shared directory, so a crashed process frees its block.
type IDBlock struct {
	Base int
	f    *os.File
	once sync.Once
}

// UID is the host uid (and gid) of slot.
func (b *IDBlock) UID(slot int) int { return b.Base + slot%SlotsPerBlock }

// Release frees the block. Safe to call more than once.
func (b *IDBlock) Release() {
	b.once.Do(func() {
		if b.f != nil {
			b.f.Close() // drops the flock
		}
	})
}

// slotLockDir holds the block lock files; shared by every user of the host.
func slotLockDir() string {
	if os.Geteuid() == 0 {
		if st, err := os.Stat("/run"); err == nil && st.IsDir() {
			return "/run/codefeedback-slots"
		}
	}
	return filepath.Join(os.TempDir(), "codefeedback-slots")
}

// ReserveIDs takes the first free block of SlotsPerBlock uids starting at
// first (blocks first, first+SlotsPerBlock, ... up to blocks of them).
func ReserveIDs(name string, first, blocks int) (*IDBlock, error) {
	dir := slotLockDir()
	if err := os.MkdirAll(dir, 0o1777); err != nil {
		return nil, fmt.Errorf("executors: slot ids: %w", err)
	}
	_ = os.Chmod(dir, 0o1777) // umask may have narrowed it; others need to create their locks
	for i := 0; i < blocks; i++ {
		base := first + i*SlotsPerBlock
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.lock", name, base))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			if errors.Is(err, os.ErrPermission) {
				continue // another user's lock file: treat the block as taken
			}
			return nil, fmt.Errorf("executors: slot ids: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return &IDBlock{Base: base, f: f}, nil
	}
	return nil, fmt.Errorf("executors: all %d blocks of %s sandbox uids from %d are in use on this host", blocks, name, first)
}
