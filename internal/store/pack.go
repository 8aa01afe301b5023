package store

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// Values are stored packed in stores created since format "zstd1": one
// byte of codec (valueRaw or valueZstd) and the value, zstd-compressed when
// that saves space. A stage result is its output lines, which the run also
// keeps as a file, so its copy in the store is the one that costs disk; the
// engine only ever reads one value at a time, which fits per-value
// compression. Stores made before keep raw values (no format entry) and are
// read and written as they are.
const (
	formatBucket = "_format"
	formatKey    = "values"
	formatPacked = "zstd1"

	valueRaw  = 0
	valueZstd = 1

	// packMin: shorter values are stored raw (zstd's frame costs more than
	// it saves).
	packMin = 96
)

var (
	codecOnce sync.Once
	zenc      *zstd.Encoder
	zdec      *zstd.Decoder
)

// codecs are shared by every store: EncodeAll and DecodeAll are safe for
// concurrent use.
func codecs() (*zstd.Encoder, *zstd.Decoder) {
	codecOnce.Do(func() {
		var err error
		zenc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // fixed, valid options
		}
		zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderLowmem(true))
		if err != nil {
			panic(err)
		}
	})
	return zenc, zdec
}

// pack encodes a value for bbolt (packed stores only).
func pack(v []byte) []byte {
	if len(v) >= packMin {
		enc, _ := codecs()
		out := make([]byte, 1, len(v)/2+16)
		out[0] = valueZstd
		out = enc.EncodeAll(v, out)
		if len(out) < len(v)+1 {
			return out
		}
	}
	out := make([]byte, 1+len(v))
	out[0] = valueRaw
	copy(out[1:], v)
	return out
}

// unpack decodes a stored value into memory of its own (bbolt's is valid
// only inside the transaction).
func unpack(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("empty packed value")
	}
	switch v[0] {
	case valueRaw:
		return append([]byte{}, v[1:]...), nil
	case valueZstd:
		_, dec := codecs()
		out, err := dec.DecodeAll(v[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("decompress value: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown value codec %d", v[0])
}

// readFormat tells whether the store packs values; a read-write open of a
// store without any bucket makes it a packed one.
func readFormat(db *bolt.DB, readOnly bool) (bool, error) {
	packed, fresh := false, true
	err := db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket([]byte(formatBucket)); bk != nil {
			f := string(bk.Get([]byte(formatKey)))
			if f != formatPacked && f != formatDict {
				return fmt.Errorf("store: value format %q unknown to this version", f)
			}
			packed = true
		}
		return tx.ForEach(func([]byte, *bolt.Bucket) error { fresh = false; return nil })
	})
	if err != nil || packed || !fresh || readOnly {
		return packed, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte(formatBucket))
		if err != nil {
			return err
		}
		return bk.Put([]byte(formatKey), []byte(formatPacked))
	})
	return err == nil, err
}

// stored is v, a value of bucket, as this store keeps it in bbolt.
func (b *Bolt) stored(bucket string, v []byte) []byte {
	if !b.packed {
		return v
	}
	if enc := b.dict.encoder(bucket); enc != nil && len(v) >= packMin {
		out := make([]byte, 1, len(v)/2+16)
		out[0] = valueDict
		if out = enc.EncodeAll(v, out); len(out) < len(v)+1 {
			return out
		}
	}
	return pack(v)
}

// loaded is a value read from bbolt, in memory of its own.
func (b *Bolt) loaded(v []byte) ([]byte, error) {
	if b.packed && len(v) > 0 && v[0] == valueDict {
		return b.dict.decode(v[1:])
	}
	if b.packed {
		return unpack(v)
	}
	return append([]byte{}, v...), nil
}
