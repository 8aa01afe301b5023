package executors

import (
	"context"
	"fmt"

	"github.com/codefeedback/codefeedback/internal/store"
)

// ExecBucket is the store bucket of cached one-shot runs.
const ExecBucket = "exec"

// execKeyVersion changes whenever the key's parts or the stored value's
// meaning change, so old entries are simply never found again.
const execKeyVersion = "exec-v1"

// WithCache wraps ex so that an identical one-shot run executes once: Run
// looks the request up in c (bucket "exec") under a hash of ex.Info()
// (driver, image with digest, default limits), the language, code, stdin,
// files and the effective limits, and returns the stored Result on a hit.
//
// Only results that do not depend on the machine's load are stored: runs
// that timed out, ran out of memory or were killed run again next time.
// A program whose output depends on time, randomness or the network is
// still served from the cache: callers that must re-run (verification)
// use the executor unwrapped. Sessions (Open) are stateful and pass
// through uncached; Info and Close delegate to ex.
func WithCache(ex Executor, c store.Cache) Executor {
	return &cachingExecutor{ex: ex, c: c}
}

type cachingExecutor struct {
	ex       Executor
	c        store.Cache
	versions toolchainVersions // lang.go
}

// cacheKey hashes everything that determines a run's result, including the
// toolchain's version for languages beyond Python, Bash and SQL (lang.go's
// ToolchainVersion), so no result survives a compiler upgrade.
func (ce *cachingExecutor) cacheKey(ctx context.Context, req Request) (string, error) {
	info := ce.ex.Info()
	tc, err := ce.versions.get(req.Language, func() (string, error) { return ToolchainVersion(ctx, ce.ex, req.Language) })
	if err != nil {
		return "", err
	}
	if tc == "" { // Python, Bash, SQL: keys as before toolchain versions
		return store.Key(execKeyVersion, info, req.Language, req.Code, req.Stdin, req.Files, req.Limits.WithDefaults(info.Limits)), nil
	}
	if req.Language.Compiled() {
		return store.Key(execKeyVersion, info, tc, req.Language, req.Code, req.Stdin, req.Files, req.Limits.WithDefaults(info.Limits),
			req.CompileLimits.WithDefaults(DefaultCompileLimits)), nil
	}
	return store.Key(execKeyVersion, info, tc, req.Language, req.Code, req.Stdin, req.Files, req.Limits.WithDefaults(info.Limits)), nil
}

// Run implements Executor.
func (ce *cachingExecutor) Run(ctx context.Context, req Request) (Result, error) {
	key, err := ce.cacheKey(ctx, req)
	if err != nil {
		// No version (a missing toolchain, a failed probe): run uncached;
		// the run reports what is wrong.
		return ce.ex.Run(ctx, req)
	}
	// An undecodable entry (a torn or foreign value) is a miss; the run
	// below overwrites it.
	if res, ok, err := store.GetJSON[Result](ctx, ce.c, ExecBucket, key); err != nil {
		return Result{}, fmt.Errorf("executors: exec cache get: %w", err)
	} else if ok {
		return res, nil
	}
	res, err := ce.ex.Run(ctx, req)
	if err != nil {
		return res, err
	}
	if res.TimedOut || res.OOM || res.Killed {
		return res, nil
	}
	if err := store.PutJSON(ctx, ce.c, ExecBucket, key, res); err != nil {
		return Result{}, fmt.Errorf("executors: exec cache put: %w", err)
	}
	return res, nil
}

// Open implements Executor; sessions are not cached.
func (ce *cachingExecutor) Open(ctx context.Context, lang Language, opts SessionOptions) (Session, error) {
	return ce.ex.Open(ctx, lang, opts)
}

// Info implements Executor.
func (ce *cachingExecutor) Info() Info { return ce.ex.Info() }

// Close implements Executor; it closes ex.
func (ce *cachingExecutor) Close() error { return ce.ex.Close() }
