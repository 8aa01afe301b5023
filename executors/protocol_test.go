package executors

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// pipeConn is a PipeConn over two os.Pipes; the test plays the runner,
// writing its answers into the other end of stdout.
type pipeConn struct {
	stdout, stdin *os.File
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.stdout.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }
func (c *pipeConn) StdoutPipe() *os.File        { return c.stdout }
func (c *pipeConn) StdinPipe() *os.File         { return c.stdin }
func (c *pipeConn) Close() error {
	c.stdout.Close()
	return c.stdin.Close()
}

// newPipeInstance returns an instance reading a PipeConn directly, and
// the runner's end of its output.
func newPipeInstance(t *testing.T) (*instance, *os.File) {
	t.Helper()
	hr, rw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rr, hw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, rr) }() // the runner reads every request
	c := &pipeConn{stdout: hr, stdin: hw}
	in := &instance{conn: c, done: make(chan struct{})}
	in.usePipes(c)
	t.Cleanup(func() { in.close(); rw.Close(); rr.Close() })
	return in, rw
}

// TestPipeInstance checks the direct reads of a PipeConn: answers, the
// deadline, ctx, the runner's end, and dead() between requests.
func TestPipeInstance(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		in, runner := newPipeInstance(t)
		if in.dead() {
			t.Fatal("dead() before anything happened: got true, want false")
		}
		if _, err := runner.WriteString(`{"id": 1, "ok": true, "stdout": "hi\n"}` + "\n"); err != nil {
			t.Fatal(err)
		}
		w, err := in.call(context.Background(), wireRequest{Op: "ping"}, time.Minute)
		if err != nil || w.ID != 1 || w.Stdout != "hi\n" {
			t.Fatalf("got %+v, %v; want id 1 with stdout %q", w, err, "hi\n")
		}
		if in.dead() {
			t.Error("dead() after an answered request: got true, want false")
		}
	})
	t.Run("deadline", func(t *testing.T) {
		in, _ := newPipeInstance(t)
		// The runner never answers, so the deadline passes whatever the load.
		_, err := in.call(context.Background(), wireRequest{Op: "ping"}, 10*time.Millisecond)
		if !errors.Is(err, errDeadline) {
			t.Fatalf("got %v, want errDeadline", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		in, _ := newPipeInstance(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := in.call(ctx, wireRequest{Op: "ping"}, time.Minute)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("runner ended", func(t *testing.T) {
		in, runner := newPipeInstance(t)
		runner.Close()
		if !in.dead() {
			t.Error("dead() after the runner's output ended: got false, want true")
		}
		_, err := in.call(context.Background(), wireRequest{Op: "ping"}, time.Minute)
		if !errors.Is(err, errDied) {
			t.Fatalf("got %v, want errDied", err)
		}
	})
	t.Run("unsolicited line", func(t *testing.T) {
		in, runner := newPipeInstance(t)
		if _, err := runner.WriteString(`{"id": 7}` + "\n"); err != nil {
			t.Fatal(err)
		}
		if !in.dead() {
			t.Error("dead() with a line no request asked for: got false, want true")
		}
	})
	t.Run("wrong id", func(t *testing.T) {
		in, runner := newPipeInstance(t)
		if _, err := runner.WriteString(`{"id": 5}` + "\n"); err != nil {
			t.Fatal(err)
		}
		_, err := in.call(context.Background(), wireRequest{Op: "ping"}, time.Minute)
		if !errors.Is(err, errDied) {
			t.Fatalf("got %v, want errDied (the protocol is out of step)", err)
		}
	})
}
