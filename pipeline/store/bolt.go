package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt is the run directory's store: one bbolt file, one bucket per purpose
// ("items" for stage results, "llm", "exec", ...). Writes go through a group
// committer: concurrent Puts share one transaction and one fsync, so
// throughput grows with concurrency while every Put still returns only after
// its value is on disk. Safe for concurrent use.
type Bolt struct {
	db     *bolt.DB
	reqs   chan putReq
	wg     sync.WaitGroup
	mu     sync.RWMutex // guards closed against Put racing Close
	closed bool
}

type putReq struct {
	bucket, key string
	val         []byte
	done        chan error
}

// maxGroup bounds one group commit, so a transaction stays a few MB.
const maxGroup = 4096

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store: closed")

// OpenBolt opens (creating if needed) the store at path. readOnly opens it
// shared, for merging from another run directory. It fails after timeout if
// another process holds the file.
func OpenBolt(path string, readOnly bool) (*Bolt, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: readOnly, FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	b := &Bolt{db: db, reqs: make(chan putReq, maxGroup)}
	if !readOnly {
		b.wg.Add(1)
		go b.commitLoop()
	}
	return b, nil
}

// Get implements Cache.
func (b *Bolt) Get(ctx context.Context, bucket, key string) ([]byte, bool, error) {
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		if v := bk.Get([]byte(key)); v != nil {
			out = append([]byte{}, v...) // bbolt memory is valid only inside the transaction
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: get %s/%s: %w", bucket, key, err)
	}
	return out, out != nil, nil
}

// Put implements Cache: it returns once val is committed and synced.
func (b *Bolt) Put(ctx context.Context, bucket, key string, val []byte) error {
	wait := b.PutAsync(bucket, key, val)
	return wait()
}

// PutAsync queues a write and returns a function that waits until it is
// durable and reports its error. The engine uses it to overlap stage work
// with commits; val must not be modified afterwards.
func (b *Bolt) PutAsync(bucket, key string, val []byte) (wait func() error) {
	done := make(chan error, 1)
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return func() error { return ErrClosed }
	}
	b.reqs <- putReq{bucket, key, val, done}
	b.mu.RUnlock()
	return func() error { return <-done }
}

func (b *Bolt) commitLoop() {
	defer b.wg.Done()
	batch := make([]putReq, 0, maxGroup)
	for first := range b.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxGroup {
			select {
			case r, ok := <-b.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		err := b.db.Update(func(tx *bolt.Tx) error {
			for _, r := range batch {
				bk, err := tx.CreateBucketIfNotExists([]byte(r.bucket))
				if err != nil {
					return err
				}
				if err := bk.Put([]byte(r.key), r.val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			err = fmt.Errorf("store: commit %d writes: %w", len(batch), err)
		}
		for _, r := range batch {
			r.done <- err
		}
	}
}

// BucketStats describes one bucket.
type BucketStats struct {
	Name    string `json:"name"`
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"` // keys + values
}

// Stats lists every bucket with its size.
func (b *Bolt) Stats() ([]BucketStats, error) {
	var out []BucketStats
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			s := BucketStats{Name: string(name)}
			err := bk.ForEach(func(k, v []byte) error {
				s.Entries++
				s.Bytes += int64(len(k) + len(v))
				return nil
			})
			out = append(out, s)
			return err
		})
	})
	return out, err
}

// FileSize returns the store file's size on disk.
func (b *Bolt) FileSize() (int64, error) {
	st, err := os.Stat(b.db.Path())
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Retain deletes every entry for which keep returns false and reports how
// many entries were deleted. Buckets left empty are dropped.
func (b *Bolt) Retain(keep func(bucket, key string) bool) (int, error) {
	deleted := 0
	err := b.db.Update(func(tx *bolt.Tx) error {
		var empty [][]byte
		err := tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			var del [][]byte
			left := 0
			err := bk.ForEach(func(k, _ []byte) error {
				if keep(string(name), string(k)) {
					left++
				} else {
					del = append(del, append([]byte{}, k...))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, k := range del {
				if err := bk.Delete(k); err != nil {
					return err
				}
			}
			deleted += len(del)
			if left == 0 {
				empty = append(empty, append([]byte{}, name...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, n := range empty {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: gc: %w", err)
	}
	return deleted, nil
}

// CopyFrom copies every entry of src into b (existing keys are overwritten
// with src's value, which for content-addressed keys is the same content).
func (b *Bolt) CopyFrom(src *Bolt) (int, error) {
	n := 0
	err := src.db.View(func(stx *bolt.Tx) error {
		return b.db.Update(func(tx *bolt.Tx) error {
			return stx.ForEach(func(name []byte, sb *bolt.Bucket) error {
				bk, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				return sb.ForEach(func(k, v []byte) error {
					n++
					return bk.Put(k, v)
				})
			})
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store: merge from %s: %w", src.db.Path(), err)
	}
	return n, nil
}

// Close waits for queued writes and closes the file.
func (b *Bolt) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if !b.db.IsReadOnly() {
		close(b.reqs)
	}
	b.mu.Unlock()
	b.wg.Wait()
	return b.db.Close()
}
