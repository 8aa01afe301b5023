package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bolt is the run directory's store: one bbolt file, one bucket per purpose
// ("items" for stage results, "llm", "exec", ...).
//
// Writes go through a group committer into an append-only write-ahead log
// beside the bbolt file: concurrent Puts share one append and one fsync, so a
// Put returns only once its value is on disk, at the cost of a sequential
// write. The logged entries are applied to bbolt in one sorted transaction
// in the background when they reach checkpointBytes (while new writes go to
// a second log), at Close, and (after a crash) at the next open. Random content-hash keys make small bbolt transactions rewrite most
// of the tree each time; batching them this way keeps writes near the data
// size. Until applied, entries are served from memory (bounded by
// checkpointBytes). Safe for concurrent use.
type Bolt struct {
	db     *bolt.DB
	wals   [2]*os.File // the active log takes appends; the other is being applied or empty
	cur    int
	reqs   chan putReq
	wg     sync.WaitGroup
	mu     sync.RWMutex // guards closed against Put racing Close
	closed bool

	pmu          sync.RWMutex
	pending      map[string][]byte // bucket + "\x00" + key -> value, in the active log, not yet in bbolt
	pendingBytes int
	applying     map[string][]byte // being applied to bbolt by the background checkpoint
	applyDone    chan struct{}     // closed when that checkpoint ends; nil when none ran
	applyErr     error             // sticky: a failed checkpoint fails later writes

	packed bool  // values in bbolt are packed (pack.go)
	dict   dicts // per-bucket compression dictionaries of a packed store (dict.go)
}

// checkpointBytes bounds the logged-but-unapplied data kept in memory. It
// also bounds a checkpoint's transaction: with random keys a large batch
// touches (and bbolt holds in memory) nearly every leaf of the tree, so
// memory would grow with the store instead of with the batch.
const checkpointBytes = 512 << 10

// applyEntries bounds one bbolt transaction of a checkpoint. Each random
// key dirties about one 4 KiB leaf page plus branch pages, all held in memory
// until the commit, so with small values the entry count, not the data size,
// sets a transaction's memory; and when the store falls behind, the commit
// loop hands over as many entries as queued up meanwhile. Applying them in
// sorted chunks keeps each transaction's pages bounded (a chunk covers a
// narrow key range, so it shares branch pages too) whatever the backlog
// and the store's size.
const applyEntries = 1024

// allocSize is the step by which the bbolt file grows.
const allocSize = 1 << 20

type putReq struct {
	bucket, key string
	val         []byte
	done        chan error
}

// maxGroup bounds one group commit, so a transaction stays a few MB.
const maxGroup = 4096

// ErrBusy means another process holds the store (a run writing to it).
var ErrBusy = errors.New("store: in use by another process")

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store: closed")

// OpenBolt opens (creating if needed) the store at path. readOnly opens it
// shared, for merging from another run directory. It fails after timeout if
// another process holds the file.
func OpenBolt(path string, readOnly bool) (*Bolt, error) {
	// The free list is synced with every commit (a page or two: commits are
	// batched): without it, bbolt rebuilds it on open by walking every page
	// of the file, which was a fifth of an unchanged re-run's CPU.
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: readOnly, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("store: open %s: %w", path, ErrBusy)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// bbolt grows its file in steps of AllocSize (16 MiB by default)
	// beyond the data; small steps keep the file near what it holds.
	db.AllocSize = allocSize
	b := &Bolt{db: db, reqs: make(chan putReq, maxGroup), pending: map[string][]byte{}}
	if b.packed, err = readFormat(db, readOnly); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if b.packed {
		if err := b.dict.load(db); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: %s: %w", path, err)
		}
	}
	if err := b.replay([2]string{path + ".wal", path + ".wal.1"}, readOnly); err != nil {
		db.Close()
		return nil, err
	}
	if !readOnly {
		b.wg.Add(1)
		go b.commitLoop()
	}
	return b, nil
}

// replay loads the logs left by a crash. Read-write: applies them to bbolt
// and opens both logs empty. Read-only: serves them from memory.
func (b *Bolt) replay(paths [2]string, readOnly bool) error {
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("store: read log: %w", err)
		}
		// A torn last record (crash mid-append) fails its checksum and ends
		// the replay; its Put never returned, so nothing reported done is lost.
		for len(data) > 0 {
			bucket, key, val, rest, ok := decodeRecord(data)
			if !ok {
				break
			}
			b.pending[bucket+"\x00"+key] = val
			data = rest
		}
	}
	if readOnly {
		return nil
	}
	if err := b.apply(b.pending); err != nil {
		return err
	}
	b.pending = map[string][]byte{}
	for i, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("store: open log: %w", err)
		}
		b.wals[i] = f
	}
	return nil
}

// A log record: uvarint lengths of bucket, key and value, the three byte
// strings, then the CRC-32C of everything before it in the record.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

func appendRecord(buf []byte, bucket, key string, val []byte) []byte {
	start := len(buf)
	buf = binary.AppendUvarint(buf, uint64(len(bucket)))
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = binary.AppendUvarint(buf, uint64(len(val)))
	buf = append(buf, bucket...)
	buf = append(buf, key...)
	buf = append(buf, val...)
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[start:], crcTable))
}

func decodeRecord(data []byte) (bucket, key string, val, rest []byte, ok bool) {
	p := data
	var ls [3]uint64
	for i := range ls {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return "", "", nil, nil, false
		}
		ls[i], p = v, p[n:]
	}
	total := ls[0] + ls[1] + ls[2]
	if total+4 > uint64(len(p)) {
		return "", "", nil, nil, false
	}
	body := len(data) - len(p) + int(total)
	if crc32.Checksum(data[:body], crcTable) != binary.LittleEndian.Uint32(data[body:]) {
		return "", "", nil, nil, false
	}
	bucket = string(p[:ls[0]])
	key = string(p[ls[0] : ls[0]+ls[1]])
	val = append([]byte{}, p[ls[0]+ls[1]:total]...)
	return bucket, key, val, data[body+4:], true
}

// apply writes entries to bbolt in key order (sorted inserts touch each
// page once), in transactions of at most applyEntries entries. A crash
// between them is harmless: the log still holds every entry, and applying
// one twice writes the same value.
func (b *Bolt) apply(m map[string][]byte) error {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if err := b.train(m, keys); err != nil {
		return err
	}
	for len(keys) > 0 {
		chunk := keys[:min(applyEntries, len(keys))]
		keys = keys[len(chunk):]
		err := b.db.Update(func(tx *bolt.Tx) error {
			var bk *bolt.Bucket
			cur := ""
			for _, k := range chunk {
				bucket, key, _ := strings.Cut(k, "\x00")
				if bk == nil || bucket != cur {
					var err error
					if bk, err = tx.CreateBucketIfNotExists([]byte(bucket)); err != nil {
						return err
					}
					cur = bucket
				}
				if err := bk.Put([]byte(key), b.stored(bucket, m[k])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: checkpoint %d entries: %w", len(chunk), err)
		}
	}
	return nil
}

// waitApply waits for the background checkpoint, if any, and returns its
// error.
func (b *Bolt) waitApply() error {
	if b.applyDone != nil {
		<-b.applyDone
	}
	return b.applyErr
}

// rotate hands the active entries to a background checkpoint and switches
// appends to the other log, which is empty once its own checkpoint ended.
// Called from the commit loop only.
func (b *Bolt) rotate() error {
	if err := b.waitApply(); err != nil {
		return err
	}
	b.pmu.Lock()
	m := b.pending
	b.applying = m
	b.pending = map[string][]byte{}
	b.pendingBytes = 0
	b.pmu.Unlock()
	old := b.wals[b.cur]
	b.cur = 1 - b.cur
	done := make(chan struct{})
	b.applyDone = done
	go func() {
		defer close(done)
		err := b.apply(m)
		if err == nil {
			// Only now, with the entries synced in bbolt, may their log go.
			if err = old.Truncate(0); err == nil {
				_, err = old.Seek(0, 0)
			}
		}
		b.pmu.Lock()
		b.applying = nil
		b.pmu.Unlock()
		b.applyErr = err
	}()
	return nil
}

// Get implements Cache.
func (b *Bolt) Get(ctx context.Context, bucket, key string) ([]byte, bool, error) {
	b.pmu.RLock()
	k := bucket + "\x00" + key
	v, ok := b.pending[k]
	if !ok && b.applying != nil {
		v, ok = b.applying[k]
	}
	b.pmu.RUnlock()
	if ok {
		return v, true, nil
	}
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		if v := bk.Get([]byte(key)); v != nil {
			var err error
			if out, err = b.loaded(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: get %s/%s: %w", bucket, key, err)
	}
	return out, out != nil, nil
}

// GetMany looks up keys of one bucket in one read transaction (cheaper than
// a Get per key) and returns their values, nil where absent.
func (b *Bolt) GetMany(ctx context.Context, bucket string, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	missing := 0
	b.pmu.RLock()
	if len(b.pending) > 0 || len(b.applying) > 0 {
		for i, key := range keys {
			k := bucket + "\x00" + key
			v, ok := b.pending[k]
			if !ok && b.applying != nil {
				v, ok = b.applying[k]
			}
			if ok {
				out[i] = v
			} else {
				missing++
			}
		}
	} else {
		missing = len(keys)
	}
	b.pmu.RUnlock()
	if missing == 0 {
		return out, nil
	}
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucket))
		if bk == nil {
			return nil
		}
		for i, key := range keys {
			if out[i] != nil {
				continue
			}
			if v := bk.Get([]byte(key)); v != nil {
				var err error
				if out[i], err = b.loaded(v); err != nil {
					return fmt.Errorf("key %s: %w", key, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: get %d keys of %s: %w", len(keys), bucket, err)
	}
	return out, nil
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
	var buf []byte
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
		buf = buf[:0]
		for _, r := range batch {
			buf = appendRecord(buf, r.bucket, r.key, r.val)
		}
		var err error
		if b.applyDone != nil {
			select {
			case <-b.applyDone: // applyErr is set before done closes
				err = b.applyErr
			default:
			}
		}
		if err == nil {
			_, err = b.wals[b.cur].Write(buf)
		}
		if err == nil {
			err = b.wals[b.cur].Sync()
		}
		if err == nil {
			b.pmu.Lock()
			for _, r := range batch {
				b.pending[r.bucket+"\x00"+r.key] = r.val
				b.pendingBytes += len(r.key) + len(r.val)
			}
			full := b.pendingBytes >= checkpointBytes
			b.pmu.Unlock()
			if full {
				err = b.rotate()
			}
		}
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

// Stats lists every bucket with its size (values as stored: packed values
// count their compressed size).
func (b *Bolt) Stats() ([]BucketStats, error) {
	var out []BucketStats
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			if string(name) == formatBucket {
				return nil
			}
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
			if string(name) == formatBucket {
				return nil
			}
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
			if err == nil {
				err = deleteEach(del, bk.Delete)
			}
			if err != nil {
				return err
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
		return deleteEach(empty, tx.DeleteBucket)
	})
	if err != nil {
		return 0, fmt.Errorf("store: gc: %w", err)
	}
	return deleted, nil
}

// deleteEach deletes each of names with del, stopping at the first error.
// bbolt forbids changing a bucket while iterating over it, so Retain
// collects what to delete first.
func deleteEach(names [][]byte, del func([]byte) error) error {
	for _, n := range names {
		if err := del(n); err != nil {
			return err
		}
	}
	return nil
}

// CopyFrom copies every entry of src into b (existing keys are overwritten
// with src's value, which for content-addressed keys is the same content).
func (b *Bolt) CopyFrom(src *Bolt) (int, error) {
	n := 0
	err := src.db.View(func(stx *bolt.Tx) error {
		return b.db.Update(func(tx *bolt.Tx) error {
			return stx.ForEach(func(name []byte, sb *bolt.Bucket) error {
				if string(name) == formatBucket {
					return nil
				}
				bk, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				return sb.ForEach(func(k, v []byte) error {
					n++
					if src.packed != b.packed || (src.packed && len(v) > 0 && v[0] == valueDict) {
						// The two stores keep values apart (or src's value needs
						// src's dictionary): through the plain value.
						plain, err := src.loaded(v)
						if err != nil {
							return fmt.Errorf("%s/%s: %w", name, k, err)
						}
						v = b.stored(string(name), plain)
					}
					return bk.Put(k, v)
				})
			})
		})
	})
	if err == nil {
		src.pmu.RLock()
		for k, v := range src.pending {
			bucket, key, _ := strings.Cut(k, "\x00")
			b.PutAsync(bucket, key, v)
			n++
		}
		src.pmu.RUnlock()
		err = b.Put(context.Background(), "meta", "merged", []byte(time.Now().UTC().Format(time.RFC3339)))
	}
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
	var err error
	if b.wals[0] != nil {
		err = b.waitApply()
		if err == nil {
			err = b.apply(b.pending)
		}
		for _, f := range b.wals {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			for _, f := range b.wals {
				os.Remove(f.Name())
			}
		}
	}
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	return err
}
