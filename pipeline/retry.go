package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy is the run's one retry policy. The engine is the only place
// that retries: a failed item whose error says it is transient (see
// IsTransient) is run again after a wait, up to the stage's `retries`
// (so at most 1 + retries attempts per item per run); every other failure
// is final for this run. Services built for a run (the model client) make
// one attempt per call and leave retrying to this policy (ServiceEnv.
// EngineRetries), so a dead endpoint costs exactly 1 + retries requests per
// item and call site, not a product of two retry loops.
type RetryPolicy struct {
	// Base is the wait before the first retry; each retry doubles it, up to
	// Max. The actual wait is uniform in [d, 2d): jitter spreads retries of
	// items that failed together.
	Base, Max time.Duration
	// MaxRetryAfter caps a server's Retry-After hint (an error's
	// RetryAfter() method), which wins over a shorter backoff.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a run whose RunOptions set none.
var DefaultRetryPolicy = RetryPolicy{Base: 200 * time.Millisecond, Max: 10 * time.Second, MaxRetryAfter: 2 * time.Minute}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = DefaultRetryPolicy.Base
	}
	if p.Max <= 0 {
		p.Max = max(DefaultRetryPolicy.Max, p.Base)
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultRetryPolicy.MaxRetryAfter
	}
	return p
}

// wait returns how long to wait before retry number n (1-based) after err.
func (p RetryPolicy) wait(n int, err error) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	d += time.Duration(rand.Int64N(int64(d)))
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		if hint := min(ra.RetryAfter(), p.MaxRetryAfter); hint > d {
			d = hint
		}
	}
	return d
}

// pause waits d before a retry; it reports false, having waited less, when
// ctx ends first. The engine's per-item loop and Retry share it.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
