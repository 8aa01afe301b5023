package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// An attack is a hostile program. Its code prints LEAK when it gets what it
// wants; the suite also checks the host and that the next run works.
type attack struct {
	name  string
	lang  executors.Language
	code  string
	lim   executors.Limits
	check func(t *testing.T, r executors.Result) // extra checks; may be nil
	// filtered names the calls of rawSyscall that must fail with EPERM
	// where the executor declares a syscall filter (Info.SyscallFilter).
	filtered []string
	// daemon: the code leaves a process whose argv holds the marker.
	daemon bool
	// full: a slow compile for what it adds; runs with CODEFEEDBACK_LANG_FULL=1.
	full bool
}

var short = executors.Limits{Timeout: 3 * time.Second, MemoryBytes: 256 << 20, Processes: 48, FileBytes: 16 << 20}

// slowMemory is short with time for a loaded machine to fill its memory.
var slowMemory = executors.Limits{Timeout: 60 * time.Second, MemoryBytes: 256 << 20, Processes: 48, FileBytes: 16 << 20}

func wantTimedOut(t *testing.T, r executors.Result) {
	if !r.TimedOut {
		t.Errorf("got timed out %v (exit %d), want a timeout", r.TimedOut, r.ExitCode)
	}
}

func wantFailed(t *testing.T, r executors.Result) {
	if r.OK() {
		t.Errorf("got a successful run (stdout %q), want it to fail", clip(r.Stdout))
	}
}

func wantPrinted(s string) func(t *testing.T, r executors.Result) {
	return func(t *testing.T, r executors.Result) {
		if !strings.Contains(r.Stdout, s) {
			t.Errorf("got stdout %q stderr %q, want it to contain %q", clip(r.Stdout), clip(r.Stderr), s)
		}
	}
}

// rawSyscall defines call(name, nr, *args): it makes the system call
// through libc's syscall() and prints "name errno N" (N is 0 on success).
const rawSyscall = `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(name, "errno", ctypes.get_errno() if r < 0 else 0)
`

// wantFilteredEPERM wants every named call of rawSyscall to fail with
// EPERM. Only executors that declare a seccomp denylist of their own
// (Info.SyscallFilter: bwrap on amd64) are held to it; the docker driver
// relies on its engine's profile, which this host's engine does not apply,
// so there the calls may succeed and only the host checks and the next run
// apply.
func wantFilteredEPERM(t *testing.T, r executors.Result, names []string) {
	for _, n := range names {
		if !strings.Contains(r.Stdout, n+" errno 1\n") {
			t.Errorf("got stdout %q stderr %q, want %s to fail with EPERM under %s's seccomp filter", clip(r.Stdout), clip(r.Stderr), n, r.Driver)
		}
	}
}

func attacks() []attack {
	return []attack{
		{name: "tcp to host loopback", lang: executors.Python, code: `
import socket
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("127.0.0.1", {{PORT}}))
    print("LEAK connected")
except OSError as e:
    print("blocked", e)
`, check: wantPrinted("blocked")},
		{name: "udp to host loopback", lang: executors.Python, code: `
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(5):
    try:
        s.sendto(b"x", ("127.0.0.1", {{UDP}}))
    except OSError as e:
        print("blocked", e)
        break
`},
		{name: "bash tcp to host loopback", lang: executors.Bash, code: `exec 3<>/dev/tcp/127.0.0.1/{{PORT}} && echo LEAK connected || echo blocked`, check: wantPrinted("blocked")},
		{name: "interfaces and name resolution", lang: executors.Python, code: `
import socket
names = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
if names != ["lo"]:
    print("LEAK interfaces", names)
else:
    # Only with no way out: resolving must fail without a resolver.
    try:
        print("LEAK resolved", socket.getaddrinfo("codefeedback-egress-check.invalid", 80))
    except OSError as e:
        print("no resolution", e)
`, check: wantPrinted("no resolution")},
		{name: "read root and shadow", lang: executors.Bash, code: `
for f in /etc/shadow /etc/gshadow /root/.bashrc /root/.ssh/id_rsa; do
  if [ -r "$f" ] && head -c 100 "$f" >/dev/null 2>&1; then echo "LEAK read $f"; fi
done
ls /root 2>/dev/null | sed 's/^/LEAK root has /'
echo done`, check: wantPrinted("done")},
		{name: "environment secret", lang: executors.Python, code: `
import os, glob
print("env", sorted(os.environ))
for p in glob.glob("/proc/*/environ"):
    try:
        if b"sk-test-secret" in open(p, "rb").read():
            print("LEAK", p)
    except OSError:
        pass
if "OPENAI_API_KEY" in os.environ:
    print("LEAK key in environ")
`},
		{name: "host file and repo", lang: executors.Bash, code: `
cat {{SECRETFILE}} 2>/dev/null && echo LEAK read host file
ls {{REPO}} 2>/dev/null | head -3 | sed 's/^/LEAK repo /'
echo done`, check: wantPrinted("done")},
		{name: "write outside scratch", lang: executors.Bash, code: `
for d in /usr /etc /home /root /bin {{REPO}} {{HOSTDIR}}; do
  if echo x > "$d/pwned.txt" 2>/dev/null; then echo "LEAK wrote $d"; fi
done
echo x > /tmp/pwned.txt 2>/dev/null
echo done`, check: wantPrinted("done")},
		{name: "fork bomb python", lang: executors.Python, code: `
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
`, lim: executors.Limits{Timeout: 2 * time.Second}, check: wantFailed},
		{name: "fork bomb bash", lang: executors.Bash, code: `b() { b | b & }; b`, lim: executors.Limits{Timeout: 2 * time.Second}},
		// Filling 256 MiB takes seconds on a loaded machine: the clock must
		// not stop it before memory does.
		{name: "memory bomb", lang: executors.Python, lim: slowMemory, code: `
a = []
while True:
    a.append(bytearray(16 << 20))
`, check: func(t *testing.T, r executors.Result) {
			if !r.OOM {
				t.Errorf("got oom %v timed out %v exit %d stderr %q, want OOM", r.OOM, r.TimedOut, r.ExitCode, clip(r.Stderr))
			}
		}},
		{name: "disk fill", lang: executors.Python, code: `
i = 0
try:
    while True:
        with open("fill%d" % i, "wb") as f:
            for _ in range(64):
                f.write(b"x" * (1 << 20))
        i += 1
except OSError as e:
    print("stopped", i, type(e).__name__)
`, check: wantPrinted("stopped")},
		{name: "endless output", lang: executors.Python, code: "while True:\n    print('y' * 1000)", lim: executors.Limits{Timeout: 2 * time.Second},
			check: func(t *testing.T, r executors.Result) {
				if !r.StdoutTruncated || !r.TimedOut || len(r.Stdout) > 2*executors.DefaultLimits.OutputBytes {
					t.Errorf("got truncated %v timed out %v %d bytes, want capped output and a timeout", r.StdoutTruncated, r.TimedOut, len(r.Stdout))
				}
			}},
		{name: "sleep past deadline", lang: executors.Bash, code: "sleep 60", lim: executors.Limits{Timeout: time.Second, WallTimeout: 2 * time.Second}, check: wantTimedOut},
		{name: "daemon outlives run", lang: executors.Python, daemon: true, code: `
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "{{MARKER}}"])
    os._exit(0)
time.sleep(0.3)
print("spawned")
`, check: wantPrinted("spawned")},
		{name: "bash nohup daemon", lang: executors.Bash, daemon: true, code: `setsid nohup sleep {{MARKER}} >/dev/null 2>&1 & disown; echo spawned`, check: wantPrinted("spawned")},
		{name: "kill parent", lang: executors.Python, code: "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('after')"},
		{name: "kill pid 1", lang: executors.Python, code: "import os, signal\nos.kill(1, signal.SIGKILL)\nprint('after')"},
		{name: "kill everything", lang: executors.Bash, code: "kill -9 -1; echo after"},
		{name: "ptrace parent", lang: executors.Python, code: `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for pid in (os.getppid(), 1):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        print("LEAK attached", pid)
print("done")
`, check: wantPrinted("done")},
		{name: "mount and unshare", lang: executors.Bash, code: `
mkdir -p m
mount -t tmpfs none m 2>/dev/null && echo LEAK mounted
unshare -r true 2>/dev/null && echo LEAK unshared userns
unshare -m true 2>/dev/null && echo LEAK unshared mountns
echo done`, check: wantPrinted("done")},
		{name: "proc sys and sysrq", lang: executors.Bash, code: `
echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo LEAK sysctl
echo b > /proc/sysrq-trigger 2>/dev/null && echo LEAK sysrq
echo done`, check: wantPrinted("done")},
		{name: "setuid and chown", lang: executors.Python, code: `
import os, subprocess
for f in (lambda: os.setuid(0), lambda: os.chown(".", 0, 0), lambda: os.setgid(0)):
    try:
        f()
        print("LEAK privilege")
    except OSError:
        pass
out = subprocess.run(["su", "-c", "id -u", "root"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
if out.stdout.strip() == "0":
    print("LEAK su")
print("done")
`, check: wantPrinted("done")},
		{name: "chmod scratch root", lang: executors.Bash, code: `chmod 000 .. /tmp 2>/dev/null; chmod 000 . ; echo done`, check: wantPrinted("done")},
		{name: "symlink out of scratch", lang: executors.Bash, code: `
ln -s {{SECRETFILE}} s1; ln -s /etc/shadow s2; ln -s / s3
cat s1 s2 2>/dev/null && echo LEAK via symlink
echo done`, check: wantPrinted("done")},
		// add_key("user", "cf", "secret", 6, KEY_SPEC_USER_KEYRING=-4):
		// unfiltered, success is harmless only because the runner reports
		// the key as taint and the pool recycles the instance.
		{name: "keyring", lang: executors.Python, code: rawSyscall + `
call("add_key", 248, b"user", b"cf", b"secret", 6, -4)
call("keyctl", 250, 0, -4, 0)  # KEYCTL_GET_KEYRING_ID
`, filtered: []string{"add_key", "keyctl"}},
		{name: "ptrace traceme", lang: executors.Python, code: rawSyscall + `
call("ptrace", 101, 0, 0, 0, 0)  # PTRACE_TRACEME
`, filtered: []string{"ptrace"}},
		{name: "perf_event_open", lang: executors.Python, code: rawSyscall + `
attr = ctypes.create_string_buffer(128)  # PERF_TYPE_HARDWARE cycles, size 0 = first ABI
call("perf_event_open", 298, attr, 0, -1, -1, 0)
`, filtered: []string{"perf_event_open"}},
		{name: "userfaultfd", lang: executors.Python, code: rawSyscall + `
call("userfaultfd", 323, 0)
call("userfaultfd_user_mode", 323, 1)  # UFFD_USER_MODE_ONLY
`, filtered: []string{"userfaultfd", "userfaultfd_user_mode"}},
		{name: "huge argv", lang: executors.Bash, code: `/bin/true $(head -c 3000000 /dev/zero | tr '\0' a) 2>/dev/null; echo "rc=$?"`, check: wantPrinted("rc=")},
		{name: "huge code", lang: executors.Python, code: "# " + strings.Repeat("x", 2<<20) + "\nprint('big ok')", check: wantPrinted("big ok")},
		{name: "binary garbage", lang: executors.Python, code: "import os, sys\nsys.stdout.buffer.write(os.urandom(20000))\nsys.stderr.buffer.write(bytes(range(256)))"},
		{name: "invalid utf8", lang: executors.Python, code: `import sys
sys.stdout.buffer.write(b"ok \xff\xfe \xc3 end\n")`, check: wantPrinted("ok")},
		{name: "dev shm and tmp leftovers", lang: executors.Bash, code: `echo x > /dev/shm/left 2>/dev/null; echo x > /tmp/left; mkdir -p /tmp/cf/evil; echo done`, check: wantPrinted("done")},
		{name: "signal storm to group", lang: executors.Bash, code: `trap '' TERM HUP INT; kill -STOP $PPID 2>/dev/null; kill -TERM 0; echo done`},
	}
}

func testAttacks(t *testing.T, ex executors.Executor, h *host) {
	for i, a := range attacks() {
		t.Run(a.name, func(t *testing.T) {
			// A sleep length no other process on the host uses.
			marker := fmt.Sprintf("%d.%09d", 900+i, time.Now().UnixNano()%1e9)
			code := strings.NewReplacer(
				"{{PORT}}", fmt.Sprint(h.tcpPort), "{{UDP}}", fmt.Sprint(h.udpPort),
				"{{SECRETFILE}}", h.secretFile, "{{HOSTDIR}}", h.dir, "{{REPO}}", h.repo, "{{MARKER}}", marker,
			).Replace(a.code)
			lim := a.lim
			if lim == (executors.Limits{}) {
				lim = short
			}
			r := run(t, ex, executors.Request{Language: a.lang, Code: code, Limits: lim})
			h.checkOutput(t, r)
			if a.check != nil {
				a.check(t, r)
			}
			if len(a.filtered) > 0 && ex.Info().SyscallFilter {
				wantFilteredEPERM(t, r, a.filtered)
			}
			if a.daemon {
				m := marker
				// A python probe: its own command line does not hold the marker.
				probe := run(t, ex, py("import glob\nn = 0\nfor p in glob.glob('/proc/[0-9]*/cmdline'):\n    try:\n        n += b'"+m+"' in open(p, 'rb').read()\n    except OSError:\n        pass\nprint(n)"))
				if strings.TrimSpace(probe.Stdout) != "0" {
					t.Errorf("the next run sees %s daemon processes, want 0", strings.TrimSpace(probe.Stdout))
				}
				h.checkUntouched(t, marker)
			} else {
				h.checkUntouched(t, "")
			}
			checkNextRun(t, ex)
		})
	}
}

// testConcurrentScratch: a reader must not find a live writer's file
// anywhere it can see, nor after the writer ends. The writer is a session,
// so its sandbox is alive, with the file written, while the reader runs:
// no sleep has to outlast the reader.
func testConcurrentScratch(t *testing.T, ex executors.Executor) {
	tok := "scratch-" + token(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	s := openSession(t, ctx, ex, executors.Bash, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second}})
	writer, err := s.Exec(ctx, "echo "+tok+" > mine.txt; cp mine.txt /tmp/; pwd")
	if err != nil || writer.ExitCode != 0 {
		t.Fatalf("writer: got exit %d stderr %q, %v", writer.ExitCode, clip(writer.Stderr), err)
	}
	// The token is split so the reader's own script does not contain it.
	search := "a=" + tok[:8] + "; b=" + tok[8:] + "; grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr \"$a$b\" / 2>/dev/null | grep -v '^/proc' | head; " +
		"for d in /proc/[0-9]*/cwd; do ls $d/mine.txt 2>/dev/null; done; echo searched"
	reader := run(t, ex, executors.Request{Language: executors.Bash, Code: search, Limits: executors.Limits{Timeout: 10 * time.Second}})
	if strings.TrimSpace(reader.Stdout) != "searched" {
		t.Errorf("concurrent run found the other run's files: %q", reader.Stdout)
	}
	if err := s.Close(); err != nil {
		t.Errorf("closing the writer: %v", err)
	}
	after := run(t, ex, executors.Request{Language: executors.Bash, Code: search + "; ls " + strings.TrimSpace(writer.Stdout) + " 2>/dev/null"})
	if strings.TrimSpace(after.Stdout) != "searched" {
		t.Errorf("a later run found the earlier run's files: %q", after.Stdout)
	}
}
