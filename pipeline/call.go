package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// Whole-set stages (pack with answer: true, leetcode with a model) make
// model calls inside All, where the engine's per-item retry does not reach:
// one 429 used to leave a dialogue unanswered, and the set, gap included,
// was cached. Retry and Failures give such a unit of work (one dialogue)
// the rules the engine applies to a per-item stage's items.

// ErrUnitsFailed is wrapped by the error Failures.Err returns: some units of
// a whole-set stage failed after their retries, so its output would lack
// them. The stage fails rather than cache that gap; the units are in its
// dead letters and the next run computes them again (the model answers and
// sandbox runs that succeeded come from the run's cache).
var ErrUnitsFailed = errors.New("units failed after their retries")

// unitRules are the engine's per-item rules of one stage instance, found
// from its Services by Retry.
type unitRules struct {
	retries int
	policy  RetryPolicy
	log     *slog.Logger
	dir     string // the stage's directory (dead letters)
}

// bindUnits gives svc s's retry settings and directory, for Retry and
// Failures.Err.
func (r *runner) bindUnits(svc *Services, s *StageSpec) {
	svc.units = &unitRules{retries: s.Retries, policy: r.retry, log: r.log, dir: r.stageDir(s.Name)}
}

// rulesOf returns svc's rules; outside a run (unit tests calling a stage
// directly) the defaults of a stage and of a run, and no directory.
func rulesOf(svc *Services) *unitRules {
	if svc != nil && svc.units != nil {
		return svc.units
	}
	return &unitRules{retries: DefaultStageOptions.Retries, policy: DefaultRetryPolicy}
}

// Retry runs fn, one unit of a whole-set stage's work, under the engine's
// per-item rules: an error that says it is transient (IsTransient: a 429,
// a 5xx, a timeout) is retried after the run's backoff (RetryPolicy, which
// honours a server's Retry-After) up to the stage's `retries`; any other
// error, a spent budget (ErrBudgetExceeded) or a cancelled run returns at
// once. It returns the attempts made and fn's last error. unit names the
// work in the log. Safe for concurrent use.
func Retry(ctx context.Context, svc *Services, unit string, fn func(context.Context) error) (attempts int, err error) {
	ru := rulesOf(svc)
	for attempt := 1; ; attempt++ {
		err = fn(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, ErrBudgetExceeded) || IsPermanent(err) ||
			!IsTransient(err) || attempt > ru.retries {
			return attempt, err
		}
		wait := ru.policy.wait(attempt, err)
		if svc != nil {
			svc.Stats.Add("retries", 1)
		}
		if l := logOf(svc, ru); l != nil {
			l.Warn("unit failed, retrying", "unit", unit, "attempt", attempt, "of", 1+ru.retries,
				"wait", wait.Round(time.Millisecond), "err", err)
		}
		if !pause(ctx, wait) {
			return attempt, err
		}
	}
}

func logOf(svc *Services, ru *unitRules) *slog.Logger {
	if svc != nil && svc.Logger != nil {
		return svc.Logger
	}
	return ru.log
}

// Failures collects the units of a whole-set stage that failed after their
// retries. Safe for concurrent use; the zero value is ready.
type Failures struct {
	mu   sync.Mutex
	list []deadLetter
}

// Add records that unit failed with err after attempts attempts.
func (f *Failures) Add(unit string, attempts int, err error) {
	f.mu.Lock()
	f.list = append(f.list, deadLetter{ItemID: unit, Error: err.Error(), Attempts: attempts, Time: time.Now().UTC()})
	f.mu.Unlock()
}

// Err returns nil when no unit failed (and removes the dead letters an
// earlier run of the stage left: they were computed again). Otherwise it
// writes the failed units
// to the stage's dead letters (RUN/stages/NAME/dead-letters.jsonl, in the
// per-item stages' format, sorted by unit), counts them in the stage's
// statistics ("failed"), and returns an error wrapping ErrUnitsFailed that
// names them and the file: the stage fails, so its output, which lacks
// them, is not cached, and the next run computes them again.
func (f *Failures) Err(svc *Services) error {
	f.mu.Lock()
	list := append([]deadLetter(nil), f.list...)
	f.mu.Unlock()
	if len(list) == 0 {
		if ru := rulesOf(svc); ru.dir != "" {
			os.Remove(filepath.Join(ru.dir, "dead-letters.jsonl"))
		}
		return nil
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ItemID < list[j].ItemID })
	name := ""
	if svc != nil {
		name = svc.Name
		svc.Stats.Set("failed", float64(len(list)))
	}
	ids := make([]string, 0, 3)
	var b strings.Builder
	for i := range list {
		list[i].Stage = name
		line, _ := json.Marshal(list[i])
		b.Write(append(line, '\n'))
		if len(ids) < 3 {
			ids = append(ids, list[i].ItemID+": "+list[i].Error)
		}
	}
	where := ""
	if ru := rulesOf(svc); ru.dir != "" {
		path := filepath.Join(ru.dir, "dead-letters.jsonl")
		if err := os.MkdirAll(ru.dir, 0o755); err == nil {
			if err := schema.WriteFileAtomic(path, []byte(b.String())); err == nil {
				where = "; dead letters in " + path
			}
		}
	}
	return fmt.Errorf("%w: %d (%s)%s; the next run computes them again, taking what succeeded from the cache",
		ErrUnitsFailed, len(list), strings.Join(ids, "; "), where)
}
