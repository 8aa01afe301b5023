package executors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// kernelPathCells is the session's count of cells that went from the host
// straight to the kernel (executors' session.KernelPathCells).
type kernelPathCells interface{ KernelPathCells() int }

// TestKernelPath: on bwrap with cgroups, a python session's plain cells go
// from the host to the kernel without the runner, and the cells the runner
// still takes (non-ASCII, handed back to the AST compile, a kernel that
// exits, a limit passed, a thread left running) come out as before, with
// cell names numbered across both paths.
func TestKernelPath(t *testing.T) {
	ctx := context.Background()
	ex := bwrapPool(t)
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{
		Limits: executors.Limits{Timeout: time.Second, WallTimeout: 5 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kp, ok := s.(kernelPathCells)
	if !ok {
		t.Fatal("the session does not count its kernel-path cells")
	}
	for i, c := range []struct {
		cell           string
		exit           int
		stdout, stderr string // substrings
		direct         bool   // whether the cell stays off the runner
		timedOut       bool
	}{
		{"x = 41", 0, "", "", true, false},
		{"x + 1", 0, "42\n", "", true, false},
		{"print('é', x)", 0, "é 41\n", "", false, false},
		{"1 / 0", 1, "", "File \"<cell-4>\", line 1", true, false},
		{"def f(:\n    pass", 1, "", "File \"<cell-5>\", line 1", false, false}, // handed back: the AST reports it
		{"import sys\nsys.stdout.write('a' * 70000)", 0, "[... output truncated at 65536 bytes ...]", "", true, false},
		{"import os\nos._exit(3)", 3, "", "exited with status 3", false, false},
		{"print('x' in globals())", 0, "False\n", "", true, false},
		{"while True:\n    pass", 137, "", "more than 1 CPU-seconds", false, true},
		{"y = 2\nprint(y)", 0, "2\n", "", true, false},
	} {
		before := kp.KernelPathCells()
		res, err := s.Exec(ctx, c.cell)
		if err != nil {
			t.Fatalf("cell %d %q: %v", i+1, c.cell, err)
		}
		if res.ExitCode != c.exit || !strings.Contains(res.Stdout, c.stdout) || !strings.Contains(res.Stderr, c.stderr) || res.TimedOut != c.timedOut {
			t.Errorf("cell %d %q: got exit %d, timed out %v, stdout %q, stderr %q; want exit %d, timed out %v, stdout with %q, stderr with %q",
				i+1, c.cell, res.ExitCode, res.TimedOut, trim(res.Stdout), trim(res.Stderr), c.exit, c.timedOut, c.stdout, c.stderr)
		}
		if got := kp.KernelPathCells() - before; got != map[bool]int{true: 1, false: 0}[c.direct] {
			t.Errorf("cell %d %q: %d cells went on the kernel path, want direct=%v", i+1, c.cell, got, c.direct)
		}
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:150] + "..." + s[len(s)-150:]
	}
	return s
}

// fakeKernel is a cell that offers the host a kernel of its own: a process
// left behind holds a socket pair and a key it knows, answers every
// request with exit status 0 under that key, and the cell sends its end of
// the pair, the key and that process's pid on every descriptor it has,
// as the runner hands a kernel over on the channel. The channel is the
// runner's alone, so the offer reaches no one (on the status socket, its
// own, it would fail the cell as tampered with, so it skips those).
const fakeKernel = `
import array, hashlib, hmac, os, socket, subprocess, sys
key = b"k" * 32
req_k, req_r = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
st_k, st_r = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
st_r.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
p = subprocess.Popen([sys.executable, "-c", """
import hashlib, hmac, os, socket, sys
req, st, key = int(sys.argv[1]), int(sys.argv[2]), b"k" * 32
while True:
    head = os.read(req, 1 << 20)
    if not head:
        break
    nonce = head[8:24]
    os.write(st, b"R 0")
    os.write(st, b"E" + nonce + hmac.new(key, b"E" + nonce, hashlib.sha256).digest())
""", str(req_k.fileno()), str(st_k.fileno())], pass_fds=[req_k.fileno(), st_k.fileno()], start_new_session=True)
msg = key + p.pid.to_bytes(4, "big")
fds = array.array("i", [req_r.fileno(), st_r.fileno(), 1, 2])
sent = 0
own = {req_k.fileno(), req_r.fileno(), st_k.fileno(), st_r.fileno()}
for fd in range(3, 1024):
    if fd in own:
        continue
    try:
        d = os.dup(fd)
    except OSError:
        continue
    try:
        s = socket.socket(fileno=d)
    except OSError:
        os.close(d)
        continue
    try:
        # Not the runner's own pairs (the kernel's sockets: their peer is
        # pid 1), where the offer would fail this cell and restart the session.
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[:4] == (1).to_bytes(4, sys.byteorder):
            continue
        s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)], socket.MSG_DONTWAIT)
        sent += 1
    except OSError:
        pass
    finally:
        s.close()
for fd in os.listdir("/proc/1/fd") if os.access("/proc/1/fd", os.R_OK) else []:
    print("the runner's descriptors are readable:", fd)
print("patched", sent)`

// TestKernelPathFakeKernel: a kernel a cell offers on every descriptor is
// never taken: after the offer, a cell the runner handles (non-ASCII, so
// the host reads the channel after it) and then failing cells on the
// kernel path still fail, with their own traceback. (With the channel
// left open in the kernel, the failing cells after the offer ended with
// exit 0.)
func TestKernelPathFakeKernel(t *testing.T) {
	ctx := context.Background()
	ex := bwrapPool(t)
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second, WallTimeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Exec(ctx, fakeKernel)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Stdout, "patched") || strings.Contains(r.Stdout, "readable") {
		t.Fatalf("the offering cell: got stdout %q stderr %q, want it to run, and no runner descriptor readable", r.Stdout, trim(r.Stderr))
	}
	for _, cell := range []string{"print('é')", "assert 1 == 2", "assert 1 == 2", "print('é'); assert 1 == 2", "assert 1 == 2"} {
		r, err := s.Exec(ctx, cell)
		if err != nil {
			t.Fatalf("%q: %v", cell, err)
		}
		want := 1
		if cell == "print('é')" {
			want = 0
		}
		if r.ExitCode != want || (want == 1 && (r.OK() || !strings.Contains(r.Stderr, "AssertionError"))) {
			t.Errorf("%q after the offer: got exit %d (stdout %q stderr %q), want %d (an AssertionError for 1)", cell, r.ExitCode, r.Stdout, trim(r.Stderr), want)
		}
	}
	if n := s.(kernelPathCells).KernelPathCells(); n < 3 {
		t.Errorf("%d cells went on the kernel path, want at least the 3 ASCII failing cells", n)
	}
}

// TestKernelPathCancel: a cell on the kernel path stops when its context
// ends, and the session's next cell runs in a fresh session.
func TestKernelPathCancel(t *testing.T) {
	ex := bwrapPool(t)
	s, err := ex.Open(context.Background(), executors.Python, executors.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Exec(context.Background(), "x = 1"); err != nil {
		t.Fatal(err)
	}
	// Whenever the context ends (before the cell starts or while it sleeps),
	// the cell cannot have finished: it sleeps ten minutes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r, err := s.Exec(ctx, "import time\ntime.sleep(600)"); err == nil {
		t.Fatalf("a cell whose context ended: got %+v, want an error", r)
	}
	r, err := s.Exec(context.Background(), "print('x' in globals())")
	if err != nil || r.Stdout != "False\n" {
		t.Errorf("the cell after: got %q, %v; want False (a fresh session)", r.Stdout, err)
	}
}
