package pipeline

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// progress renders one stage's counters: a redrawn bar on a terminal, a slog
// line every interval otherwise.
type progress struct {
	stage                       string
	total                       int64 // 0 = unknown
	done, cached, fresh, failed atomic.Int64
	start                       time.Time
	w                           io.Writer // terminal, or nil for log lines
	log                         *slog.Logger
	interval                    time.Duration
	stop                        chan struct{}
	stopped                     chan struct{}
	// phase, when set, is what a whole-set stage is doing after it read
	// its input ("reading input", then the stage's own phases): the counts
	// then say nothing about how much is left, so no ETA is shown.
	phase atomic.Pointer[string]
}

// setPhase shows what the work is doing now; "" goes back to counts and ETA.
func (p *progress) setPhase(s string) {
	if p == nil {
		return
	}
	p.phase.Store(&s)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func startProgress(stage string, total int64, w io.Writer, log *slog.Logger, interval time.Duration) *progress {
	p := &progress{stage: stage, total: total, start: time.Now(), log: log, interval: interval,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if w != nil && isTerminal(w) {
		p.w = w
		p.interval = 200 * time.Millisecond
	}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.render(false)
			}
		}
	}()
	return p
}

func (p *progress) render(final bool) {
	done := p.done.Load()
	el := time.Since(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	eta := "?"
	if p.total > 0 && rate > 0 {
		eta = (time.Duration(float64(p.total-done)/rate) * time.Second).Round(time.Second).String()
	}
	phase := ""
	if ph := p.phase.Load(); ph != nil && *ph != "" && !final {
		phase, eta = *ph, "?"
	}
	if phase != "" {
		if p.w != nil {
			fmt.Fprintf(p.w, "\r\033[K%-10s %s (%d items read, %s elapsed)", p.stage, phase, done,
				time.Since(p.start).Round(time.Second))
			return
		}
		p.log.Info("progress", "stage", p.stage, "phase", phase, "read", done, "total", p.total,
			"elapsed", time.Since(p.start).Round(time.Second).String())
		return
	}
	if p.w != nil {
		bar := ""
		if p.total > 0 {
			n := int(20 * done / max(p.total, 1))
			bar = "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "] "
		}
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(p.w, "\r\033[K%-10s %s%d/%d %.0f/s eta %s  cached %d fresh %d failed %d%s",
			p.stage, bar, done, p.total, rate, eta, p.cached.Load(), p.fresh.Load(), p.failed.Load(), end)
		return
	}
	p.log.Info("progress", "stage", p.stage, "done", done, "total", p.total, "rate", fmt.Sprintf("%.1f/s", rate),
		"eta", eta, "cached", p.cached.Load(), "fresh", p.fresh.Load(), "failed", p.failed.Load())
}

func (p *progress) finish() {
	close(p.stop)
	<-p.stopped
	p.render(true)
}

// Progress is the engine's progress display for long work outside a
// pipeline run (eval, verify): a redrawn bar on a terminal, a log line
// every interval otherwise. Safe for concurrent use.
type Progress struct{ p *progress }

// StartProgress starts a display of name's progress over total units (0 =
// unknown). w is the terminal to draw on (a non-terminal or nil: log lines
// on log every interval; interval 0 = 10 s). Call Finish when done.
func StartProgress(name string, total int64, w io.Writer, log *slog.Logger, interval time.Duration) *Progress {
	if log == nil {
		log = discardLogger
	}
	if interval <= 0 {
		interval = 10 * time.Second
	}
	return &Progress{startProgress(name, total, w, log, interval)}
}

// Done counts n units finished; failed ones also count as failed.
func (p *Progress) Done(n int64, failed bool) {
	p.p.done.Add(n)
	p.p.fresh.Add(n)
	if failed {
		p.p.failed.Add(n)
	}
}

// Phase shows what the work is doing now instead of an ETA ("" = counts).
func (p *Progress) Phase(name string) { p.p.setPhase(name) }

// Finish stops the display and draws the final line.
func (p *Progress) Finish() { p.p.finish() }
