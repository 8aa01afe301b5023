package llm

import (
	"context"
	"sync"
	"time"
)

// breaker is a circuit breaker shared by all workers of a Client. After
// threshold consecutive endpoint failures it opens: every worker waits for
// the cool-down instead of spending retries on a dead endpoint. Then it is
// half-open: exactly one worker probes; success closes the circuit and
// wakes the others, failure opens it for another cool-down.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	fails     int
	state     breakerState
	openUntil time.Time
	changed   chan struct{} // closed and replaced on every state change
	opened    int           // times the circuit opened, for logs and tests
}

type breakerState int

const (
	closed breakerState = iota
	open
	halfOpen
)

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown, now: time.Now, changed: make(chan struct{})}
}

// outcome of an attempt as the breaker sees it.
type outcome int

const (
	// endpointUp: the endpoint answered (any HTTP answer but 5xx).
	endpointUp outcome = iota
	// endpointDown: 5xx, timeout, refused or reset connection.
	endpointDown
	// unknown: the attempt ended without telling (caller cancelled).
	unknown
)

func (b *breaker) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// acquire waits until a request may go out. probe is true when this caller
// is the half-open probe and must report its outcome with release.
func (b *breaker) acquire(ctx context.Context) (probe bool, err error) {
	for {
		b.mu.Lock()
		switch b.state {
		case closed:
			b.mu.Unlock()
			return false, nil
		case open:
			if wait := b.openUntil.Sub(b.now()); wait > 0 {
				ch := b.changed
				b.mu.Unlock()
				if err := sleepOrWake(ctx, wait, ch); err != nil {
					return false, err
				}
				continue
			}
			b.state = halfOpen
			b.notify()
			b.mu.Unlock()
			return true, nil
		case halfOpen:
			ch := b.changed
			b.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
}

// release reports the outcome of an attempt.
func (b *breaker) release(probe bool, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch o {
	case endpointUp:
		b.fails = 0
		if b.state != closed {
			b.state = closed
			b.notify()
		}
	case endpointDown:
		b.fails++
		if (probe && b.state == halfOpen) || (b.state == closed && b.fails >= b.threshold) {
			b.state = open
			b.openUntil = b.now().Add(b.cooldown)
			b.opened++
			b.notify()
		}
	case unknown:
		if probe && b.state == halfOpen {
			// Let another worker probe.
			b.state = open
			b.openUntil = b.now()
			b.notify()
		}
	}
}

func (b *breaker) timesOpened() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opened
}

// sleepOrWake waits d, or until wake is closed, or ctx is done (error).
func sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
