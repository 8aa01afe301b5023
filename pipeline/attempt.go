package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Cached per-item values: 'O' + output lines (+ an optional last line of
// item statistics, see statsPrefix), or 'F' + a permanent error.
const (
	valOK   = 'O'
	valFail = 'F'
)

func itemID(line []byte) string {
	var it struct {
		ID string `json:"id"`
	}
	json.Unmarshal(line, &it)
	return it.ID
}

// process runs one item with retries and stores its result. It returns the
// number of retries made.
func (r *runner) process(ctx context.Context, s *StageSpec, st *stageCaps, stats *Stats, line []byte, sl *slot) (retries int) {
	defer close(sl.done)
	in, err := parseItem(line) // line is ours: in.Data may alias it
	if err != nil {
		sl.failed = fmt.Errorf("decode item: %w", err)
		return 0
	}
	sl.id = in.ID
	for attempt := 1; ; attempt++ {
		sl.attempts = attempt
		actx, cancel := ctx, context.CancelFunc(func() {})
		if s.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, s.Timeout)
		}
		sl.stats.reset(stats) // a failed attempt's figures are dropped
		sl.ictx = itemCtx{actx, &sl.stats}
		outs, err := callEach(&sl.ictx, st, in)
		cancel()
		if err == nil {
			size := 1
			for _, o := range outs {
				size += len(o.ID) + len(o.Kind) + len(o.Data) + len(`{"id":"","kind":"","data":}`) + 1
			}
			buf := make([]byte, 1, size)
			buf[0] = valOK
			for _, o := range outs {
				if o.ID == "" || o.Kind == "" {
					err = fmt.Errorf("stage returned an item without id or kind (input %s)", in.ID)
					break
				}
				var merr error
				if buf, merr = appendItem(buf, o); merr != nil {
					err = fmt.Errorf("encode output %s: %w", o.ID, merr)
					break
				}
				buf = append(buf, '\n')
			}
			if err == nil {
				buf, err = sl.stats.appendDelta(buf, s.Name, in.ID)
			}
			if err == nil {
				sl.val = buf
				sl.wait = r.db.PutAsync(ItemsBucket, sl.key, sl.val)
				return retries
			}
		}
		if ctx.Err() != nil {
			sl.aborted = true
			return retries
		}
		if errors.Is(err, ErrBudgetExceeded) {
			// Not the item's failure: the run's money is spent. Neither
			// output nor dead letter; the next run does it.
			r.budget.stop()
			sl.aborted = true
			return retries
		}
		if IsPermanent(err) {
			sl.failed, sl.permanent = err, true
			sl.val = append([]byte{valFail}, err.Error()...)
			sl.wait = r.db.PutAsync(ItemsBucket, sl.key, sl.val)
			return retries
		}
		if !IsTransient(err) || attempt > s.Retries {
			sl.failed = err
			return retries
		}
		retries++
		wait := r.retry.wait(attempt, err)
		r.log.Warn("item failed, retrying", "stage", s.Name, "item", in.ID, "attempt", attempt,
			"of", 1+s.Retries, "wait", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			sl.aborted = true
			return retries
		case <-t.C:
		}
	}
}

// callEach calls the stage, turning a panic into a failed item rather than a
// crashed run.
func callEach(ctx context.Context, st *stageCaps, in Item) (outs []Item, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stage panicked: %v", p)
		}
	}()
	return st.each.Each(ctx, in)
}
