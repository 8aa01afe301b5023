package llmtest

import (
	"context"
	"sync"

	"github.com/codefeedback/codefeedback/internal/store"
)

// MemCache is an in-memory store.Cache for tests. It is safe for concurrent
// use and counts Gets, hits and Puts.
type MemCache struct {
	mu               sync.Mutex
	m                map[string][]byte
	gets, hits, puts int
}

var _ store.Cache = (*MemCache)(nil)

// NewMemCache returns an empty cache.
func NewMemCache() *MemCache { return &MemCache{m: map[string][]byte{}} }

// Get implements store.Cache.
func (c *MemCache) Get(_ context.Context, bucket, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	v, ok := c.m[bucket+"/"+key]
	if ok {
		c.hits++
	}
	return append([]byte(nil), v...), ok, nil
}

// Put implements store.Cache; it copies val.
func (c *MemCache) Put(_ context.Context, bucket, key string, val []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	c.m[bucket+"/"+key] = append([]byte(nil), val...)
	return nil
}

// Len returns the number of entries.
func (c *MemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Stats returns the number of Gets, hits and Puts so far.
func (c *MemCache) Stats() (gets, hits, puts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets, c.hits, c.puts
}

// Dump returns every key and value, "bucket/key" -> value, for assertions
// such as "no secret was ever stored".
func (c *MemCache) Dump() map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]byte, len(c.m))
	for k, v := range c.m {
		out[k] = append([]byte(nil), v...)
	}
	return out
}
