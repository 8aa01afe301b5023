package executors

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLauncher starts in-process runners that answer each run at once and
// send the "done" line only after cleanup, which takes cleanup long.
type fakeLauncher struct {
	cleanup  time.Duration
	taint    bool
	launches atomic.Int32
	cleaned  atomic.Int32 // done lines sent (or being sent)
}

func (f *fakeLauncher) Info() Info { return Info{Driver: "fake"} }

func (f *fakeLauncher) Launch(ctx context.Context, slot int, argv []string) (Conn, error) {
	f.launches.Add(1)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer outW.Close()
		enc := json.NewEncoder(outW)
		// The runner's source comes first (RunnerInput): a length line and
		// that many bytes; the runner is ready once it has them.
		br := bufio.NewReaderSize(inR, 1<<16)
		var n int64
		if _, err := fmt.Fscanf(br, "%d\n", &n); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, br, n); err != nil {
			return
		}
		enc.Encode(map[string]any{"ready": true, "pid": 1, "python": "3", "hash_seed": "0"})
		sc := bufio.NewScanner(br)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req wireRequest
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			// The program used all of its time; then a slow cleanup.
			enc.Encode(map[string]any{"id": req.ID, "stdout": "ok\n", "exit_code": 0,
				"duration_ns": int64(req.Limits.TimeoutSeconds * 1e9)})
			time.Sleep(f.cleanup)
			// Counted before the write: a done line the pool has read is
			// counted by then (after the write it raced the test's check).
			f.cleaned.Add(1)
			if enc.Encode(map[string]any{"id": req.ID, "done": true, "tainted": f.taint}) != nil {
				f.cleaned.Add(-1)
			}
		}
	}()
	return &fakeConn{r: outR, w: inW, in: inR}, nil
}

type fakeConn struct {
	r    *io.PipeReader
	w    *io.PipeWriter
	in   *io.PipeReader
	once sync.Once
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *fakeConn) Close() error {
	c.once.Do(func() { c.w.Close(); c.in.Close(); c.r.Close() })
	return nil
}

// A program that ends exactly at its deadline is not timed out, however long
// the cleanup after it takes: the result comes first (before the cleanup is
// done, which here takes longer than the deadline and its grace together).
func TestCleanupIsNotChargedToTheRun(t *testing.T) {
	l := &fakeLauncher{cleanup: grace + 5*time.Second}
	ex := NewPool(l, PoolOptions{Size: 1, Limits: Limits{Timeout: 50 * time.Millisecond}})
	defer ex.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := ex.Run(ctx, Request{Language: Python, Code: "print('ok')"})
	if err != nil {
		t.Fatal(err)
	}
	if r.TimedOut || r.Killed || r.Stdout != "ok\n" || r.Duration != 50*time.Millisecond {
		t.Errorf("got timed out %v killed %v stdout %q duration %v, want the program's own result",
			r.TimedOut, r.Killed, r.Stdout, r.Duration)
	}
	if n := l.cleaned.Load(); n != 0 {
		t.Errorf("the result came after %d cleanup(s), want before", n)
	}
}

// The slot comes back after the cleanup; a tainted cleanup replaces the
// instance before the next run.
func TestTaintedCleanupReplacesInstance(t *testing.T) {
	for _, taint := range []bool{false, true} {
		l := &fakeLauncher{cleanup: 10 * time.Millisecond, taint: taint}
		ex := NewPool(l, PoolOptions{Size: 1})
		for i := 0; i < 2; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := ex.Run(ctx, Request{Language: Python, Code: "print('ok')"})
			cancel()
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
		}
		ex.Close()
		// Untainted: one instance served both runs; tainted: the second
		// run got a new one (the pool also warms one after it).
		if got := l.launches.Load(); taint && got < 2 || !taint && got != 1 {
			t.Errorf("taint %v: got %d launches", taint, got)
		}
		if got := l.cleaned.Load(); got < 1 {
			t.Errorf("taint %v: got %d cleanups, want the pool to wait for them", taint, got)
		}
	}
}
