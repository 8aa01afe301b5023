package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRetryUnits(t *testing.T) {
	dir := t.TempDir()
	r := &runner{retry: RetryPolicy{Base: time.Microsecond, Max: time.Microsecond}, log: discardLogger, outDir: dir}
	svc := &Services{Name: "whole", Stats: NewStats()}
	r.bindUnits(svc, &StageSpec{Name: "whole", StageOptions: StageOptions{Retries: 2}})
	busy := Transient(errors.New("429"))
	for _, tc := range []struct {
		name         string
		errs         []error // per attempt; past the end: success
		wantAttempts int
		wantErr      bool
	}{
		{"success", nil, 1, false},
		{"transient once", []error{busy}, 2, false},
		{"transient past the retries", []error{busy, busy, busy, busy}, 3, true},
		{"permanent", []error{Permanent(errors.New("bad"))}, 1, true},
		{"plain error", []error{errors.New("unreadable")}, 1, true},
		{"budget", []error{Transient(fmt.Errorf("spent: %w", ErrBudgetExceeded))}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			attempts, err := Retry(context.Background(), svc, "u", func(context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if attempts != tc.wantAttempts || calls != tc.wantAttempts || (err != nil) != tc.wantErr {
				t.Errorf("got %d attempts (%d calls), err %v; want %d attempts, error %v", attempts, calls, err, tc.wantAttempts, tc.wantErr)
			}
		})
	}

	var f Failures
	if err := f.Err(svc); err != nil {
		t.Fatalf("no failures: got %v", err)
	}
	f.Add("b", 3, busy)
	f.Add("a", 3, busy)
	err := f.Err(svc)
	if !errors.Is(err, ErrUnitsFailed) || !strings.Contains(err.Error(), "a: 429") {
		t.Fatalf("got %v, want ErrUnitsFailed naming the units", err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "stages", "whole", "dead-letters.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if rerr != nil || len(lines) != 2 || !strings.Contains(lines[0], `"stage":"whole","item_id":"a"`) || !strings.Contains(lines[0], `"attempts":3`) {
		t.Errorf("dead letters %q (%v), want a then b, stage whole, 3 attempts", b, rerr)
	}
	if v, _ := svc.Stats.Snapshot(); v["failed"] != 2 || v["retries"] != 3 {
		t.Errorf("stats %v, want failed 2 and retries 3 (1 + 2 above)", v)
	}
}
