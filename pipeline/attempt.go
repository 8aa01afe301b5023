package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Cached per-item values: 'O' + output lines (+ an optional last line of
// item statistics, see statsPrefix), 'F' + a permanent error, or 'S' (+ the
// optional statistics line): the output is the input line itself, which
// the item's key already stands for, so the store keeps no copy of it (the
// stage's keys file holds the line: keysMagicV2).
const (
	valOK   = 'O'
	valFail = 'F'
	valSame = 'S'
)

// sameValue returns the stored form of an 'O' value whose only output is
// the input line itself ('S' and the statistics line), and whether it is
// one.
func sameValue(val, in []byte) ([]byte, bool) {
	lines := val[1:]
	if len(lines) <= len(in) || lines[len(in)] != '\n' || !bytes.Equal(lines[:len(in)], in) {
		return nil, false
	}
	rest := lines[len(in)+1:]
	if len(rest) > 0 && !bytes.HasPrefix(rest, []byte(statsPrefix)) {
		return nil, false // more output lines
	}
	return append([]byte{valSame}, rest...), true
}

// expandSame turns a stored 'S' value back into the 'O' value it stands
// for, given the item's input line.
func expandSame(v, in []byte) []byte {
	out := make([]byte, 0, 2+len(in)+len(v))
	out = append(append(append(out, valOK), in...), '\n')
	return append(out, v[1:]...)
}

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
				stored := buf
				if len(outs) == 1 {
					// Passed through unchanged: the store says so in a byte
					// and the keys file keeps the line (line is unchanged:
					// stages never modify their input's bytes).
					stored, sl.same = sameValue(buf, line)
					if !sl.same {
						stored = buf
					}
				}
				sl.wait = r.db.PutAsync(ItemsBucket, sl.key, stored)
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
		if !pause(ctx, wait) {
			sl.aborted = true
			return retries
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
