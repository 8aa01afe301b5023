// Package store defines the content-addressed key/value store the engine keeps
// in a run directory. Stage results, model requests and sandbox executions are
// all cached through it, keyed by a hash of everything that determines them.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Cache is the small interface services (model client, executor cache) need.
// Implementations are safe for concurrent use.
type Cache interface {
	// Get returns the value for key; ok is false when absent.
	Get(ctx context.Context, bucket, key string) (val []byte, ok bool, err error)
	// Put stores val under key durably enough that a crash after Put returns
	// does not lose it.
	Put(ctx context.Context, bucket, key string, val []byte) error
}

// Key hashes any JSON-encodable parts into a hex key. Map keys are sorted by
// encoding/json, so equal content gives equal keys.
func Key(parts ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, p := range parts {
		_ = enc.Encode(p) // values are plain data; an encode error would mean a programming bug
	}
	return hex.EncodeToString(h.Sum(nil))
}

// GetJSON decodes the JSON value under key. ok is false when it is absent
// or does not decode (a torn or foreign value is a miss: the caller
// computes it again and overwrites it).
func GetJSON[T any](ctx context.Context, c Cache, bucket, key string) (v T, ok bool, err error) {
	raw, ok, err := c.Get(ctx, bucket, key)
	if err != nil || !ok {
		return v, false, err
	}
	if json.Unmarshal(raw, &v) != nil {
		var zero T
		return zero, false, nil
	}
	return v, true, nil
}

// PutJSON stores v under key as JSON.
func PutJSON(ctx context.Context, c Cache, bucket, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s value: %w", bucket, err)
	}
	return c.Put(ctx, bucket, key, b)
}

// Memo returns the value under key when c holds one (hit is true), or
// computes it and, when keep accepts it, stores it for the next run (a
// value recording a failure is worth computing again). A nil c computes
// every time. compute's errors come back as they are; the store's name
// the bucket.
func Memo[T any](ctx context.Context, c Cache, bucket, key string, keep func(T) bool, compute func() (T, error)) (v T, hit bool, err error) {
	if c != nil {
		if v, ok, err := GetJSON[T](ctx, c, bucket, key); err != nil {
			return v, false, fmt.Errorf("store: get %s: %w", bucket, err)
		} else if ok {
			return v, true, nil
		}
	}
	if v, err = compute(); err != nil {
		return v, false, err
	}
	if c != nil && keep(v) {
		if err := PutJSON(ctx, c, bucket, key, v); err != nil {
			return v, false, fmt.Errorf("store: put %s: %w", bucket, err)
		}
	}
	return v, false, nil
}
