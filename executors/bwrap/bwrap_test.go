package bwrap_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/executors/drivertest"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// bindableDir is a fresh directory the sandbox can bind, removed when t
// ends: not t.TempDir, whose parent is private, since bwrap binds as the
// slot's uid.
func bindableDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) executors.Executor { return sandboxtest.Bwrap(t, "pool=2") })
}

// seccompProbe calls each system call raw through libc's syscall() and
// prints "name result errno", one a line.
const seccompProbe = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(256)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(name, "ok" if r >= 0 else "fail", ctypes.get_errno() if r < 0 else 0)
call("add_key", 248, b"user", b"cf", b"secret", 6, -4)
call("keyctl", 250, 0, -4, 0)          # KEYCTL_GET_KEYRING_ID of the user keyring
call("ptrace_traceme", 101, 0, 0, 0, 0)
call("perf_event_open", 298, buf, 0, -1, -1, 0)
call("userfaultfd", 323, 0)
call("io_uring_setup", 425, 8, buf)
call("unshare", 272, 0)
call("x32_getpid", 0x40000000 | 39)
call("personality_query", 135, 0xffffffff)
call("personality_no_aslr", 135, 0x0040000)
call("getpid", 39)
`

func TestSeccompDenies(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1")
	r := runOK(t, ex, executors.Request{Language: executors.Python, Code: seccompProbe})
	want := "add_key fail 1\nkeyctl fail 1\nptrace_traceme fail 1\nperf_event_open fail 1\nuserfaultfd fail 1\n" +
		"io_uring_setup fail 1\nunshare fail 1\nx32_getpid fail 1\npersonality_query ok 0\npersonality_no_aslr fail 1\ngetpid ok 0\n"
	if r.Stdout != want {
		t.Errorf("got\n%s\nwant\n%s(stderr %q)", r.Stdout, want, r.Stderr)
	}
}

// TestSeccompKillsForeignArch makes an i386 system call (int 0x80) from
// 64-bit code: the filter cannot map its number, so the process must die
// with SIGSYS.
func TestSeccompKillsForeignArch(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1")
	code := `
import subprocess, sys
child = r'''
import ctypes, mmap
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(bytes([0xb8, 0x14, 0, 0, 0, 0xcd, 0x80, 0xc3]))  # mov eax, 20 (i386 getpid); int 0x80; ret
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("survived", f())
'''
p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
print("returncode", p.returncode, p.stdout.strip())
`
	r := runOK(t, ex, executors.Request{Language: executors.Python, Code: code})
	// SIGSYS from the filter; a kernel built without IA-32 emulation (or
	// booted with ia32_emulation=0) faults on int 0x80 first: SIGSEGV.
	if r.Stdout != "returncode -31 \n" && r.Stdout != "returncode -11 \n" {
		t.Errorf("got %q (stderr %q), want returncode -31 (killed by SIGSYS) or -11 (no IA-32 emulation)", r.Stdout, r.Stderr)
	}
}

func TestSeccompAllowsOrdinaryPrograms(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1")
	cases := []struct {
		name string
		req  executors.Request
		want string
	}{
		{"threads", executors.Request{Language: executors.Python, Code: `
import threading
out = []
ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(sorted(out))`}, "[0, 1, 2, 3, 4, 5, 6, 7]\n"},
		{"subprocess", executors.Request{Language: executors.Python, Code: `
import subprocess
print(subprocess.run(["sh", "-c", "echo $((6*7))"], capture_output=True, text=True).stdout.strip())`}, "42\n"},
		{"multiprocessing", executors.Request{Language: executors.Python, Code: `
import multiprocessing as mp
def sq(x): return x * x
if __name__ == "__main__":
    with mp.Pool(2) as p:
        print(p.map(sq, range(5)))
    q = mp.get_context("spawn").Queue()
    print(type(q).__name__)`}, "[0, 1, 4, 9, 16]\nQueue\n"},
		{"sqlite module", executors.Request{Language: executors.Python, Code: `
import sqlite3
c = sqlite3.connect("t.db")
c.execute("create table t(x)"); c.executemany("insert into t values (?)", [(1,), (2,)])
print(c.execute("select sum(x) from t").fetchone()[0])`}, "3\n"},
		{"sql language", executors.Request{Language: executors.SQL, Code: "SELECT 6 * 7 AS n;"}, "n\n--\n42\n(1 row)\n"},
		{"bash pipeline", executors.Request{Language: executors.Bash, Code: "seq 1 100 | sort -n | tail -1 | xargs expr 1 +"}, "101\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := runOK(t, ex, c.req); r.Stdout != c.want || r.ExitCode != 0 {
				t.Errorf("got stdout %q exit %d stderr %q, want %q", r.Stdout, r.ExitCode, r.Stderr, c.want)
			}
		})
	}
}

func runOK(t *testing.T, ex executors.Executor, req executors.Request) executors.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := ex.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// TestIsolation: hostile-then-probe on one slot, with a cgroup per instance
// where this host allows it.
func TestIsolation(t *testing.T) {
	drivertest.Isolation(t, func(t *testing.T) executors.Executor { return sandboxtest.Bwrap(t, "pool=1") })
}

// TestWholeRunMemoryFallback: without cgroups the runner adds up a run's
// memory (all its processes, tmpfs, SysV shared memory) and kills it past
// the limit.
func TestWholeRunMemoryFallback(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1&cgroup=off")
	drivertest.WholeRunMemory(t, ex)
}

// TestPreflightFailsOpen: a sandbox whose limits let nothing run fails to
// open, naming the limit, instead of failing every run later.
func TestPreflightFailsOpen(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	for _, c := range []struct{ url, want string }{
		{"bwrap://?pool=1&pids=1&nofile=3", "the open-files limit (nofile=3) is too low"},
		{"bwrap://?pool=1&pids=1", "the process limit (pids=1) is too low"},
	} {
		ex, err := executors.Open(context.Background(), c.url)
		if err == nil {
			ex.Close()
			t.Errorf("Open(%s): no error, want one naming %q", c.url, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pre-flight") {
			t.Errorf("Open(%s): got %v, want a pre-flight error naming %q", c.url, err, c.want)
		}
	}
}

// TestWholeRunCPUFallback: without cgroups the runner adds up the CPU
// time of a run's processes from /proc and kills the run past its limit.
func TestWholeRunCPUFallback(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1&cgroup=off")
	drivertest.WholeRunCPU(t, ex)
}

// TestInstanceCgroupFollowsRun: where this host lets the driver make
// cgroups, each run's memory and process limits are its instance's cgroup
// limits (plus the runner's headroom), as the run itself can read.
func TestInstanceCgroupFollowsRun(t *testing.T) {
	l, err := bwrap.NewLauncher(bwrap.Config{})
	if err != nil {
		t.Skip(err)
	}
	defer l.Close()
	if !l.Cgroups() {
		t.Skip("no writable cgroups on this host: the accounting fallback applies (TestWholeRunMemoryFallback)")
	}
	ex := executors.NewPool(l, executors.PoolOptions{Size: 1})
	defer ex.Close()
	read := `d=/sys/fs/cgroup/memory; [ -d $d ] || d=/sys/fs/cgroup
cat $d/memory.limit_in_bytes 2>/dev/null || cat $d/memory.max`
	for _, mib := range []int64{300, 200} {
		r := runOK(t, ex, executors.Request{Language: executors.Bash, Code: read, Limits: executors.Limits{MemoryBytes: mib << 20}})
		if want := fmt.Sprintf("%d\n", (mib+32)<<20); r.Stdout != want {
			t.Errorf("memory %d MiB: got cgroup limit %q stderr %q, want %q", mib, r.Stdout, r.Stderr, want)
		}
	}
}

// TestSessionCellOutputIsItsOwn: a cell's stdout and stderr are what it
// wrote, not what earlier cells or a process they left behind wrote, also
// after the capture file has grown past the size where it is truncated.
func TestSessionCellOutputIsItsOwn(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1")
	ctx := context.Background()
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{OutputBytes: 1 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cells := []struct{ code, stdout, stderr string }{
		{"print('one')", "one\n", ""},
		// A child that would write once this cell has ended, and flag it.
		{"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', \"import time, os; time.sleep(0.2); print('late', flush=True); open('flag', 'w').close()\"])\nprint('two')", "two\n", ""},
		// It never does: no process outlives its cell (docs/sandbox.md).
		{"import os, time\ntime.sleep(0.5)\nprint('three', os.path.exists('flag'))", "three False\n", ""},
		{"import sys\nprint('four'); sys.stderr.write('err four\\n')", "four\n", "err four\n"},
		// 9 MiB: past the 8 MiB at which the runner truncates the file.
		{"import sys\nsys.stdout.write('x' * (9 << 20)); sys.stdout.flush()", "", ""},
		{"print('six')", "six\n", ""},
		{"print('seven')", "seven\n", ""},
	}
	for i, c := range cells {
		r, err := s.Exec(ctx, c.code)
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			if !r.StdoutTruncated || len(r.Stdout) < 1<<10 || r.Stdout[:10] != "xxxxxxxxxx" {
				t.Errorf("cell %d: stdout truncated %v, %d bytes, want the first KiB of x's cut", i, r.StdoutTruncated, len(r.Stdout))
			}
			continue
		}
		if r.Stdout != c.stdout || r.Stderr != c.stderr || r.StdoutTruncated {
			t.Errorf("cell %d: stdout %q stderr %q (truncated %v), want %q and %q", i, r.Stdout, r.Stderr, r.StdoutTruncated, c.stdout, c.stderr)
		}
	}
}

// TestUptimeIsTheSandboxs: as root, a sandbox's /proc/uptime starts at
// bwrap.Uptime (its own time namespace), whatever the host's uptime, and
// the sandbox still runs as its slot's unprivileged uid.
func TestUptimeIsTheSandboxs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("time namespaces need root; unprivileged sandboxes read the host's uptime")
	}
	ex := sandboxtest.Bwrap(t, "pool=1")
	r := runOK(t, ex, executors.Request{Language: executors.Bash, Code: "cut -d' ' -f1 /proc/uptime; uptime; id -u; cat /proc/self/status | grep -i '^CapEff'"})
	lines := strings.Split(r.Stdout, "\n")
	up, err := strconv.ParseFloat(lines[0], 64)
	if err != nil {
		t.Fatalf("output %q: %v", r.Stdout, err)
	}
	// The sandbox may have waited in the pool for a while under load.
	if d := time.Duration(up * float64(time.Second)); d < bwrap.Uptime || d > bwrap.Uptime+10*time.Minute {
		t.Errorf("sandbox uptime %v, want %v plus the sandbox's age (host: %s)", d, bwrap.Uptime, hostUptime(t))
	}
	if !strings.Contains(lines[1], "up 1 day,") {
		t.Errorf("uptime printed %q, want 'up 1 day, ...'", lines[1])
	}
	if len(lines) < 4 || lines[2] == "0" || !strings.HasSuffix(lines[3], "0000000000000000") {
		t.Errorf("sandbox ids and capabilities: %q, want an unprivileged uid with no capability", r.Stdout)
	}
}

func hostUptime(t *testing.T) string {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))[0] + "s"
}
