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
