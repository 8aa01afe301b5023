package pipeline

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
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
	term                        *terminal // the bar's terminal, or nil for log lines
	log                         *slog.Logger
	interval                    time.Duration
	stop                        chan struct{}
	stopped                     chan struct{}
	// phase, when set, is what a whole-set stage is doing after it read
	// its input ("reading input", then the stage's own phases): the counts
	// then say nothing about how much is left, so no ETA is shown.
	phase atomic.Pointer[string]
	// samples are the work done over the last etaWindow (the ticker's).
	samples []workSample
}

// workSample is the count of items that did work (fresh) at a time.
type workSample struct {
	t    time.Time
	work int64
}

// etaWindow is how far back the ETA's rate looks: items that did no work
// (cached, passed on) and a burst of quick ones leave it within this time.
const etaWindow = 10 * time.Second

// sampleEvery is how often the ETA's rate is sampled, whatever the display
// interval.
const sampleEvery = 250 * time.Millisecond

// sample records the work done at now and drops samples no longer needed:
// one at or before the window's start is kept as its base.
func (p *progress) sample(now time.Time) {
	p.samples = append(p.samples, workSample{now, p.fresh.Load()})
	i := 0
	for i+1 < len(p.samples) && !p.samples[i+1].t.After(now.Add(-etaWindow)) {
		i++
	}
	p.samples = p.samples[i:]
}

// eta is the time the remaining items take at the rate of the work done
// over the last etaWindow. Cached and passed-on items are not work: a run
// that read 80 cached items in a second and then does one item a second
// has 20 seconds left, not 2. Remaining items are all taken as work, so the
// ETA errs long where some of them will be cached. ok is false when no
// work was done in the window.
func eta(samples []workSample, now time.Time, remaining int64) (d time.Duration, ok bool) {
	if len(samples) < 2 || remaining < 0 {
		return 0, false
	}
	base, last := samples[0], samples[len(samples)-1]
	el := now.Sub(base.t).Seconds()
	if el <= 0 || last.work <= base.work {
		return 0, false
	}
	rate := float64(last.work-base.work) / el
	return (time.Duration(float64(remaining) / rate * float64(time.Second))).Round(time.Second), true
}

// terminal is a terminal shared by progress bars and log lines: a log line
// written through it clears the bar's line first and the bar is drawn again
// below it, so no log line lands on a bar line.
type terminal struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // the line drawn last; "" when none is shown
}

var terminals sync.Map // *os.File -> *terminal

// Terminal returns the writer a logger must write through when progress
// bars are drawn on w: for a terminal, a shared writer that keeps log lines
// off the bar's line (pass it as RunOptions.Progress too); anything else is
// returned as it is.
func Terminal(w io.Writer) io.Writer {
	if t := terminalFor(w); t != nil {
		return t
	}
	return w
}

// terminalFor is w's shared terminal, or nil when w is not a terminal.
func terminalFor(w io.Writer) *terminal {
	if t, ok := w.(*terminal); ok {
		return t
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return nil
	}
	t, _ := terminals.LoadOrStore(f, &terminal{w: f})
	return t.(*terminal)
}

// Write writes a log line: the bar's line is cleared first and the bar is
// drawn again after a complete line.
func (t *terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar != "" {
		io.WriteString(t.w, "\r\033[K")
	}
	n, err := t.w.Write(b)
	if t.bar != "" && len(b) > 0 && b[len(b)-1] == '\n' {
		io.WriteString(t.w, t.bar)
	}
	return n, err
}

// draw replaces the bar; final ends it with a newline, after which log
// lines go below it.
func (t *terminal) draw(bar string, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if final {
		io.WriteString(t.w, "\r\033[K"+bar+"\n")
		t.bar = ""
		return
	}
	io.WriteString(t.w, "\r\033[K"+bar)
	t.bar = bar
}

// setPhase shows what the work is doing now; "" goes back to counts and ETA.
func (p *progress) setPhase(s string) {
	if p == nil {
		return
	}
	p.phase.Store(&s)
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func startProgress(stage string, total int64, w io.Writer, log *slog.Logger, interval time.Duration) *progress {
	p := &progress{stage: stage, total: total, start: time.Now(), log: log, interval: interval,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	p.samples = []workSample{{p.start, 0}}
	if w != nil {
		if p.term = terminalFor(w); p.term != nil {
			p.interval = 200 * time.Millisecond
		}
	}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(min(p.interval, sampleEvery))
		defer t.Stop()
		last := p.start
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				p.sample(now)
				if now.Sub(last) >= p.interval {
					last = now
					p.render(false)
				}
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
	etaText := "?"
	if d, ok := eta(p.samples, time.Now(), p.total-done); ok && p.total > 0 {
		etaText = d.String()
	}
	phase := ""
	if ph := p.phase.Load(); ph != nil && *ph != "" && !final {
		phase, etaText = *ph, "?"
	}
	if phase != "" {
		if p.term != nil {
			p.term.draw(fmt.Sprintf("%-10s %s (%d items read, %s elapsed)", p.stage, phase, done,
				time.Since(p.start).Round(time.Second)), false)
			return
		}
		p.log.Info("progress", "stage", p.stage, "phase", phase, "read", done, "total", p.total,
			"elapsed", time.Since(p.start).Round(time.Second).String())
		return
	}
	if p.term != nil {
		bar := ""
		if p.total > 0 {
			n := int(20 * done / max(p.total, 1))
			bar = "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "] "
		}
		p.term.draw(fmt.Sprintf("%-10s %s%d/%d %.0f/s eta %s  cached %d fresh %d failed %d",
			p.stage, bar, done, p.total, rate, etaText, p.cached.Load(), p.fresh.Load(), p.failed.Load()), final)
		return
	}
	p.log.Info("progress", "stage", p.stage, "done", done, "total", p.total, "rate", fmt.Sprintf("%.1f/s", rate),
		"eta", etaText, "cached", p.cached.Load(), "fresh", p.fresh.Load(), "failed", p.failed.Load())
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

// Finish stops the display and draws the final line.
func (p *Progress) Finish() { p.p.finish() }
