package drivertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// forgeries are python session cells that try to make a later cell's
// outcome a success: each patches what a cell's result could be built
// from, in the process the cells run in. The cell after it is
// `assert 1 == 2`, which must still end with exit status 1.
var forgeries = []struct{ name, cell string }{
	{"runner objects through gc", `
import gc, sys
n = 0
fake = lambda *a, **k: (0, "", False)
for o in gc.get_objects():
    try:
        if isinstance(o, dict) and ("exit_status" in o or "kernel_loop" in o or "send" in o):
            for k in ("exit_status", "print_exception", "kernel_loop", "kernel_call", "kernel_answer", "send", "signame"):
                if k in o:
                    o[k] = fake
                    n += 1
        elif type(o).__name__ == "Session":
            o.python_cell = fake
            n += 1
        elif type(o).__name__ == "function" and o.__name__ in ("python_cell", "kernel_loop", "kernel_call", "exit_status", "send", "cell"):
            o.__code__ = (lambda *a, **k: (0, "", False)).__code__
            n += 1
    except Exception:
        pass
f = sys._getframe()
while f is not None:
    f.f_locals.update(rc=0)
    f.f_globals.update(exit_status=fake)
    f = f.f_back
print("patched", n > 0)`},
	{"sys.modules, builtins, exit functions", `
import builtins, marshal, os, sys, traceback
real = os._exit
os._exit = lambda code=0: real(0)
sys.exit = builtins.exit = builtins.quit = lambda *a: real(0)
builtins.exec = builtins.eval = lambda *a, **k: None
builtins.repr = lambda v: "forged"
marshal.loads = lambda b: (b"", "<cell-x>", "", [], None)
os.read = lambda fd, n: b""
os.write = lambda fd, b: len(b)
traceback.print_exception = lambda *a, **k: None
sys.excepthook = lambda *a: real(0)
for name, mod in list(sys.modules.items()):
    if hasattr(mod, "_exit"):
        setattr(mod, "_exit", lambda *a: real(0))
print("patched")`},
	{"sys.stdout and sys.stderr replaced", `
import io, sys
print("patched", flush=True)
sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
sys.__stdout__ = sys.__stderr__ = sys.stdout`},
	{"atexit", `
import atexit, os
atexit.register(os._exit, 0)
print("patched")`},
	{"signal handlers and a pending signal", `
import os, signal, sys
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGCHLD, signal.SIGALRM):
    signal.signal(s, lambda *a: sys.exit(0))
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
os.kill(os.getpid(), signal.SIGUSR1)  # pending until a later cell unblocks it
print("patched")`},
	{"audit hook and trace functions", `
import os, signal, sys, threading
armed = False
def hook(event, args):
    if armed and event in ("exec", "marshal.loads", "sys.settrace", "sys.setprofile"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
        raise SystemExit(0)
def tracer(frame, event, arg):
    raise SystemExit(0)
signal.signal(signal.SIGUSR1, lambda *a: sys.exit(0))
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
os.kill(os.getpid(), signal.SIGUSR1)
sys.addaudithook(hook)
threading.settrace(tracer)
sys.setprofile(lambda *a: None)
print("patched")
armed = True`},
	{"writes into every descriptor", `
import json, os, time
line = b'{"id": %d, "exit_code": 0, "stdout": "", "stderr": "", "ok": true}\n'
zeros = b"".join(b"%032x 0\n" % i for i in range(64))
def spray():
    for fd in range(3, 1024):
        for i in range(1, 12):
            try:
                os.write(fd, line % i)
                os.write(fd, zeros)
            except OSError:
                break
spray()
if os.fork() == 0:  # and again while the next cell runs
    for _ in range(100):
        spray()
        time.sleep(0.01)
    os._exit(0)
print("patched")`},
}

// testForgedCells: no cell can make a later cell of its session report
// success. Each forgery runs in a fresh python session, then
// `assert 1 == 2` must fail with exit status 1.
func testForgedCells(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r, err := s.Exec(ctx, f.cell)
			if err != nil {
				t.Fatalf("forging cell: %v", err)
			}
			if !strings.Contains(r.Stdout, "patched") {
				t.Fatalf("forging cell: got stdout %q exit %d stderr %q, want it to run", clip(r.Stdout), r.ExitCode, clip(r.Stderr))
			}
			r, err = s.Exec(ctx, "assert 1 == 2")
			if err != nil {
				t.Fatalf("assert cell: %v", err)
			}
			t.Logf("forgery %q: assert cell exit %d ok %v stderr %q", f.name, r.ExitCode, r.OK(), clip(r.Stderr))
			if r.ExitCode != 1 || r.OK() {
				t.Errorf("got exit %d ok %v (stdout %q stderr %q), want exit 1: an earlier cell changed a later cell's outcome",
					r.ExitCode, r.OK(), clip(r.Stdout), clip(r.Stderr))
			}
		})
	}
	// A one-shot run's exit status does not follow what the program
	// rebinds either: the same patches, then the assert, in one program.
	t.Run("one-shot runs", func(t *testing.T) {
		for _, f := range forgeries[:2] {
			r := run(t, ex, py(f.cell+"\nassert 1 == 2"))
			if r.ExitCode != 1 || r.OK() {
				t.Errorf("%s, then assert 1 == 2 in one run: got exit %d ok %v (stderr %q), want exit 1", f.name, r.ExitCode, r.OK(), clip(r.Stderr))
			}
		}
	})
	// A cell's own exits are still its outcome.
	t.Run("own exits", func(t *testing.T) {
		s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, c := range []struct {
			code   string
			exit   int
			killed bool
		}{
			{"x = 1\nraise SystemExit(3)", 3, false},
			{"import sys\nsys.exit()", 0, false},
			{"def f():\n    raise SystemExit('bye')\nf()", 1, false},
			{"x", 0, false},
			{"import os\nos._exit(5)", 5, true},
			{"'x' in globals()", 0, false},
		} {
			r, err := s.Exec(ctx, c.code)
			if err != nil {
				t.Fatalf("Exec(%q): %v", c.code, err)
			}
			if r.ExitCode != c.exit || r.Killed != c.killed {
				t.Errorf("Exec(%q): got exit %d killed %v (stderr %q), want exit %d killed %v", c.code, r.ExitCode, r.Killed, clip(r.Stderr), c.exit, c.killed)
			}
			if c.code == "'x' in globals()" && r.Stdout != "False\n" {
				t.Errorf("after os._exit got %q, want a restarted session (False)", r.Stdout)
			}
		}
	})
}
