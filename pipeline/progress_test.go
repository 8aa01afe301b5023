package pipeline

import (
	"bytes"
	"context"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	// t-phases reads everything, then works in two named phases.
	Register("t-phases", fakeOptions{}, func(o fakeOptions, svc *Services) (*testAll, error) {
		return &testAll{all: func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
			var items []Item
			for it, err := range in {
				if err != nil {
					return err
				}
				items = append(items, it)
			}
			time.Sleep(o.Sleep) // unnamed work after reading
			svc.Phase("grouping")
			time.Sleep(o.Sleep)
			for _, it := range items {
				if err := emit(it); err != nil {
					return err
				}
			}
			return nil
		}}, nil
	})
}

// syncBuffer is a bytes.Buffer safe for the progress goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWholeSetProgressShowsPhases: while a whole-set stage works after
// reading its input, progress names the phase instead of reporting
// done=total with an ETA of 0.
func TestWholeSetProgressShowsPhases(t *testing.T) {
	_, file := setup(t, 30, `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-phases, name: p, settings: {sleep: 300ms}}
`)
	var logs syncBuffer
	mustRun(t, file, RunOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), ProgressInterval: 20 * time.Millisecond})
	var working, grouping int
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "msg=progress") {
			lines = append(lines, l)
		}
	}
	// The last line is drawn when the stage has finished: counts, no phase.
	for _, l := range lines[:max(len(lines)-1, 0)] {
		switch {
		case strings.Contains(l, `phase="working on the whole set"`):
			working++
		case strings.Contains(l, "phase=grouping"):
			grouping++
		case strings.Contains(l, "done=30 total=30") && strings.Contains(l, "eta=0s"):
			t.Errorf("progress claims the stage is done while it works: %s", l)
		}
	}
	if working == 0 || grouping == 0 {
		t.Errorf("progress lines: %d in the unnamed phase, %d in the stage's phase, want both > 0:\n%s", working, grouping, logs.String())
	}
}
