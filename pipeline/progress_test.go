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
	_, file := setup(t, 30, onQueries(`
  - {stage: t-phases, name: p, settings: {sleep: 300ms}}
`))
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

// TestETAFromWork: items that did no work (cached, passed on) and a burst
// of them before the real work do not shorten the ETA: it follows the rate
// of the work over the last etaWindow. Times are given, not measured.
func TestETAFromWork(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// run simulates a stage of 100 items at one sample per 250 ms: fresh(s)
	// is the work done by second s; cached items count in done only.
	run := func(fresh func(s float64) int64, done func(s float64) int64, until float64) (time.Duration, bool) {
		p := &progress{samples: []workSample{{t0, 0}}}
		for s := 0.25; s <= until; s += 0.25 {
			p.fresh.Store(fresh(s))
			p.sample(at(s))
		}
		return eta(p.samples, at(until), 100-done(until))
	}
	cases := []struct {
		name        string
		fresh, done func(s float64) int64
		at          float64
		want        time.Duration // the real remaining time
	}{
		// 80 cached items in the first second, then one fresh item a second:
		// at 11 s, 10 are done and 10 remain (the old ETA said 1 s).
		{"cached prefix",
			func(s float64) int64 { return int64(max(s-1, 0)) },
			func(s float64) int64 { return 80 + int64(max(s-1, 0)) }, 11, 10 * time.Second},
		// 80 items the stage passed on unchanged (fresh but instant) in the
		// first second, then one a second: once they are out of the window
		// the ETA is the real one.
		{"passed-on prefix",
			func(s float64) int64 { return min(80, int64(s*80)) + int64(max(s-1, 0)) },
			func(s float64) int64 { return min(80, int64(s*80)) + int64(max(s-1, 0)) }, 12, 8 * time.Second},
		// Steady work, half the items cached throughout.
		{"mixed",
			func(s float64) int64 { return int64(s) },
			func(s float64) int64 { return 2 * int64(s) }, 20, 60 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := run(c.fresh, c.done, c.at)
			if !ok {
				t.Fatalf("no ETA, want about %s", c.want)
			}
			if got < c.want/2 || got > 2*c.want {
				t.Errorf("ETA %s, want within 2x of the real %s", got, c.want)
			}
		})
	}
	p := &progress{samples: []workSample{{t0, 0}}}
	p.fresh.Store(0)
	p.sample(at(5))
	if d, ok := eta(p.samples, at(5), 10); ok {
		t.Errorf("ETA %s with no work done, want none", d)
	}
}

// TestLogLinesOffTheBar: a log line written through the terminal clears the
// bar's line and the bar is drawn again below it; what the screen shows
// (each line's text after its last carriage return) never holds both.
func TestLogLinesOffTheBar(t *testing.T) {
	var out syncBuffer
	term := &terminal{w: &out}
	log := slog.New(slog.NewTextHandler(term, nil))
	term.draw("stage [####......] 4/10", false)
	log.Warn("retrying item", "item", "q3")
	term.draw("stage [#####.....] 5/10", false)
	log.Info("second line")
	term.draw("stage [##########] 10/10", true)
	log.Info("after the bar")
	var shown []string
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = strings.TrimPrefix(l[i+1:], "\033[K")
		}
		shown = append(shown, l)
	}
	for _, l := range shown {
		if strings.Contains(l, "msg=") && strings.Contains(l, "[#") {
			t.Errorf("a log line shares its line with the bar: %q", l)
		}
	}
	want := []string{"msg=\"retrying item\"", "msg=\"second line\"", "stage [##########] 10/10", "msg=\"after the bar\""}
	j := 0
	for _, l := range shown {
		if j < len(want) && strings.Contains(l, want[j]) {
			j++
		}
	}
	if j != len(want) {
		t.Errorf("screen lines %q, want lines containing %q in order", shown, want)
	}
}
