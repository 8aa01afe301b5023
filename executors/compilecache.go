package executors

import (
	"container/list"
	"context"
	"sync"

	"github.com/codefeedback/codefeedback/internal/store"
)

// artifactCache keeps compiled programs (the runner's build outputs) by a
// hash of the language, the source and the files, least recently used
// first out past maxBytes. It lives in one pool, so one driver and image:
// an artifact never crosses toolchains. Only successful compiles are
// stored; the runner compiled them in a run's scratch before the program
// started, so no program can have altered them. Safe for concurrent use.
type artifactCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	ll       *list.List // of *artifactEntry, front = most recent
	m        map[string]*list.Element
	hits     uint64
	misses   uint64
	versions toolchainVersions // the pool's toolchains, part of every key
}

type artifactEntry struct {
	key   string
	files map[string][]byte
	size  int
}

func newArtifactCache(maxBytes int) *artifactCache {
	return &artifactCache{maxBytes: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

// artifactKey is what a compile's output depends on: the toolchain (its
// version and binary, so an upgraded compiler compiles again), the
// language, the source and the files.
func artifactKey(toolchain string, req Request) string {
	return store.Key("artifact-v2", toolchain, req.Language, req.Code, req.Files)
}

// artifactKey is "" when the toolchain's version is unknown: the request
// then compiles and its output is not cached.
func (p *pool) artifactKey(ctx context.Context, req Request) string {
	v, err := p.ToolchainVersion(ctx, req.Language)
	if err != nil {
		return ""
	}
	return artifactKey(v, req)
}

// ToolchainVersion implements ToolchainVersioner, probing once per
// language and pool.
func (p *pool) ToolchainVersion(ctx context.Context, lang Language) (string, error) {
	return p.arts.versions.get(lang, func() (string, error) { return probeToolchain(ctx, p, lang) })
}

func (c *artifactCache) get(key string) map[string][]byte {
	if key == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.ll.MoveToFront(e)
		c.hits++
		return e.Value.(*artifactEntry).files
	}
	c.misses++
	return nil
}

func (c *artifactCache) put(key string, files map[string][]byte) {
	if key == "" {
		return
	}
	size := 0
	for name, b := range files {
		size += len(name) + len(b)
	}
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.m[key] = c.ll.PushFront(&artifactEntry{key: key, files: files, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes {
		e := c.ll.Back()
		ent := e.Value.(*artifactEntry)
		c.ll.Remove(e)
		delete(c.m, ent.key)
		c.bytes -= ent.size
	}
}

// CompileCacheStats are the compile cache's counters (see CompileCacher).
type CompileCacheStats struct {
	Hits, Misses uint64
	Entries      int
	Bytes        int
}

// CompileCacher is an optional capability: executors with a compile cache
// report its counters and can drop it (benchmarks measure misses that way).
type CompileCacher interface {
	CompileCacheStats() CompileCacheStats
	ResetCompileCache()
}

// CompileCacheStats implements CompileCacher.
func (p *pool) CompileCacheStats() CompileCacheStats {
	c := p.arts
	c.mu.Lock()
	defer c.mu.Unlock()
	return CompileCacheStats{Hits: c.hits, Misses: c.misses, Entries: len(c.m), Bytes: c.bytes}
}

// ResetCompileCache implements CompileCacher.
func (p *pool) ResetCompileCache() {
	c := p.arts
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	c.m = map[string]*list.Element{}
	c.bytes = 0
}
