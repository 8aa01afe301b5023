package llm

import (
	"context"
	"sync"
	"time"
)

// bucket is a token bucket in the reservation style: take subtracts now and
// returns how long the caller must wait for the balance to be non-negative,
// so a single request larger than the burst is still admitted (after its
// share of time). It is written here rather than taken from x/time/rate
// because tokens-per-minute needs after-the-fact correction (adjust) with
// the usage the server reports, which rate.Limiter does not offer.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // units per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

// newBucket returns a bucket refilled at perMinute/60 per second holding at
// most 10 seconds' worth (at least 1), or nil for perMinute <= 0 (no limit).
func newBucket(perMinute float64) *bucket {
	if perMinute <= 0 {
		return nil
	}
	rate := perMinute / 60
	burst := max(rate*10, 1)
	return &bucket{rate: rate, burst: burst, tokens: burst, now: time.Now, last: time.Now()}
}

func (b *bucket) refill(now time.Time) {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
}

// take reserves n units and returns the wait before using them.
func (b *bucket) take(n float64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.refill(now)
	b.tokens -= n
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// adjust adds delta units back (negative delta takes more); used to refund a
// cancelled reservation and to correct a token estimate with real usage.
func (b *bucket) adjust(delta float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.now())
	b.tokens = min(b.burst, b.tokens+delta)
}

// wait reserves n units and sleeps until they are available, refunding them
// if ctx ends first. A nil bucket never waits.
func (b *bucket) wait(ctx context.Context, n float64) error {
	if b == nil {
		return nil
	}
	d := b.take(n)
	if d <= 0 {
		return nil
	}
	if err := sleepOrWake(ctx, d, nil); err != nil {
		b.adjust(n)
		return err
	}
	return nil
}
