package store

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// Values of one bucket are alike (stage results, model answers, executions)
// and mostly small, so compressed one by one they keep most of their size:
// zstd has nothing to refer back to. A dictionary made from the bucket's own
// first values gives it that context; on stage results it takes values to
// about 40% of their size without one. Each packed store trains one
// dictionary per bucket, once, from the first checkpoint that holds enough
// of the bucket's values, and keeps it in the format bucket; values written
// after it use it (codec valueDict), those before stay as they are.
const (
	valueDict = 2 // zstd with the store's dictionary for the value's bucket

	formatDict = "zstd2" // a packed store with at least one dictionary
	dictPrefix = "dict/" // format bucket: dict/BUCKET -> the bucket's dictionary

	dictHistory    = 64 << 10 // dictionary content: enough context, little memory
	dictMinValues  = 64       // values (of at least packMin bytes) needed to train
	dictMinBytes   = 32 << 10
	dictMaxSamples = 512
	dictBaseID     = 1 << 16 // dictionary IDs: dictBaseID + index, unique in a store
)

// dicts holds a store's dictionaries: an encoder per bucket that has one
// and a decoder that knows them all.
type dicts struct {
	mu    sync.RWMutex
	enc   map[string]*zstd.Encoder
	raw   [][]byte
	dec   *zstd.Decoder
	tried map[string]bool // buckets whose training failed in this process
}

// load reads the dictionaries kept in the format bucket.
func (d *dicts) load(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(formatBucket))
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		for k, v := c.Seek([]byte(dictPrefix)); k != nil && len(k) > len(dictPrefix) && string(k[:len(dictPrefix)]) == dictPrefix; k, v = c.Next() {
			if err := d.add(string(k[len(dictPrefix):]), append([]byte{}, v...)); err != nil {
				return err
			}
		}
		return nil
	})
}

// add makes a dictionary usable for bucket.
func (d *dicts) add(bucket string, dict []byte) error {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true), zstd.WithEncoderDict(dict))
	if err != nil {
		return fmt.Errorf("store: dictionary of %s: %w", bucket, err)
	}
	raw := append(append([][]byte{}, d.raw...), dict)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true), zstd.WithDecoderDicts(raw...))
	if err != nil {
		return fmt.Errorf("store: dictionary of %s: %w", bucket, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.enc == nil {
		d.enc = map[string]*zstd.Encoder{}
	}
	d.enc[bucket] = enc
	d.raw = raw
	if d.dec != nil {
		d.dec.Close()
	}
	d.dec = dec
	return nil
}

func (d *dicts) encoder(bucket string) *zstd.Encoder {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.enc[bucket]
}

// decode decompresses a valueDict value (without its codec byte).
func (d *dicts) decode(v []byte) ([]byte, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.dec == nil {
		return nil, fmt.Errorf("value needs a dictionary this store does not have")
	}
	out, err := d.dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress value: %w", err)
	}
	return out, nil
}

// train builds a dictionary for each bucket of the checkpoint m (keys
// bucket + "\x00" + key) that has none and enough values, and stores it
// before any value uses it. A bucket whose training fails keeps packing
// without one.
func (b *Bolt) train(m map[string][]byte, keys []string) error {
	if !b.packed {
		return nil
	}
	samples := map[string][][]byte{}
	size := map[string]int{}
	for _, k := range keys { // sorted: the same checkpoint trains the same dictionary
		bucket := k[:indexZero(k)]
		if b.dict.encoder(bucket) != nil || b.dict.tried[bucket] {
			continue
		}
		if v := m[k]; len(v) >= packMin && len(samples[bucket]) < 2*dictMaxSamples {
			samples[bucket] = append(samples[bucket], v)
			size[bucket] += len(v)
		}
	}
	for bucket, vs := range samples {
		if len(vs) < dictMinValues || size[bucket] < dictMinBytes {
			continue
		}
		// History from every other value, statistics from the rest: values
		// already in the history would leave nothing to count.
		var hist []byte
		var contents [][]byte
		for i, v := range vs {
			if i%2 == 0 && len(hist) < dictHistory {
				hist = append(hist, v...)
			} else if i%2 == 1 {
				contents = append(contents, v)
			}
		}
		if len(hist) > dictHistory {
			hist = hist[len(hist)-dictHistory:]
		}
		id := uint32(dictBaseID + len(b.dict.raw))
		dict, err := zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: contents, History: hist, Offsets: [3]int{1, 4, 8}, Level: zstd.SpeedDefault})
		if err != nil {
			if b.dict.tried == nil {
				b.dict.tried = map[string]bool{}
			}
			b.dict.tried[bucket] = true
			continue
		}
		err = b.db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte(formatBucket))
			if err != nil {
				return err
			}
			if err := bk.Put([]byte(formatKey), []byte(formatDict)); err != nil {
				return err
			}
			return bk.Put([]byte(dictPrefix+bucket), dict)
		})
		if err != nil {
			return fmt.Errorf("store: keep dictionary of %s: %w", bucket, err)
		}
		if err := b.dict.add(bucket, dict); err != nil {
			return err
		}
	}
	return nil
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return len(s)
}
