package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// Isolation runs hostile-then-probe pairs on an executor with exactly one
// pool slot, so the probe runs on the instance (or its replacement) that
// the hostile run used: whatever the hostile run leaves behind, the probe
// must see nothing of it and its own output must be intact. It ends with
// the whole-run memory case. open must return an executor with pool=1 and
// the default limits; Isolation closes it.
func Isolation(t *testing.T, open func(t *testing.T) executors.Executor) {
	ex := open(t)
	t.Cleanup(func() { ex.Close() })
	for _, c := range channels {
		t.Run(c.name, func(t *testing.T) {
			h := run(t, ex, executors.Request{Language: c.lang, Code: c.hostile, Limits: generous})
			if c.hostileWants != "" && !strings.Contains(h.Stdout, c.hostileWants) {
				// The attack itself must have worked inside its run, or the
				// probe proves nothing.
				t.Fatalf("hostile run: got stdout %q stderr %q, want it to contain %q", clip(h.Stdout), clip(h.Stderr), c.hostileWants)
			}
			p := run(t, ex, executors.Request{Language: c.probeLang(), Code: c.probe, Limits: generous})
			if p.Stdout != c.want || !p.OK() {
				t.Errorf("probe after the hostile run: got stdout %q exit %d stderr %q, want %q and a clean exit",
					p.Stdout, p.ExitCode, clip(p.Stderr), c.want)
			}
		})
	}
	t.Run("whole-run memory", func(t *testing.T) { WholeRunMemory(t, ex) })
	t.Run("whole-run CPU", func(t *testing.T) { WholeRunCPU(t, ex) })      // wholerun.go
	t.Run("files and directories", func(t *testing.T) { InodeCap(t, ex) }) // wholerun.go
}

// generous leaves room for a loaded machine: these cases are about state,
// not speed.
var generous = executors.Limits{Timeout: 60 * time.Second}

type channel struct {
	name         string
	lang         executors.Language
	hostile      string
	hostileWants string // in the hostile run's stdout: the attack took effect
	plang        executors.Language
	probe        string
	want         string
}

func (c channel) probeLang() executors.Language {
	if c.plang != "" {
		return c.plang
	}
	return c.lang
}

// sysvPrelude defines the SysV and POSIX IPC calls through libc.
const sysvPrelude = `
import ctypes, ctypes.util, os
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
rt.mq_open.restype = ctypes.c_int
IPC_CREAT, O_CREAT, O_RDWR = 0o1000, 0o100, 2
def err(r):
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
def sysv_count(kind):
    with open("/proc/sysvipc/" + kind) as f:
        return len(f.readlines()) - 1
`

var channels = []channel{
	{
		name: "SysV shared memory", lang: executors.Python,
		hostile: sysvPrelude + `
libc.shmat.restype = ctypes.c_void_p
id = libc.shmget(0x5eed1, 8 << 20, IPC_CREAT | 0o666)
addr = libc.shmat(id, None, 0)
ctypes.memset(addr, 1, 8 << 20)   # resident, not just reserved
print("shm", err(id), sysv_count("shm"))`,
		hostileWants: "shm ok 1",
		probe: sysvPrelude + `
print("visible", sysv_count("shm"), "by key", err(libc.shmget(0x5eed1, 0, 0)))`,
		want: "visible 0 by key No such file or directory\n",
	},
	{
		name: "SysV semaphores", lang: executors.Python,
		hostile: sysvPrelude + `
id = libc.semget(0x5eed2, 4, IPC_CREAT | 0o666)
print("sem", err(id), sysv_count("sem"))`,
		hostileWants: "sem ok 1",
		probe: sysvPrelude + `
print("visible", sysv_count("sem"), "by key", err(libc.semget(0x5eed2, 0, 0)))`,
		want: "visible 0 by key No such file or directory\n",
	},
	{
		name: "SysV message queues", lang: executors.Python,
		hostile: sysvPrelude + `
id = libc.msgget(0x5eed3, IPC_CREAT | 0o666)
msg = ctypes.create_string_buffer(b"\x01\x00\x00\x00\x00\x00\x00\x00poisoned result", 64)
print("msg", err(id), err(libc.msgsnd(id, msg, 15, 0)), sysv_count("msg"))`,
		hostileWants: "msg ok ok 1",
		probe: sysvPrelude + `
print("visible", sysv_count("msg"), "by key", err(libc.msgget(0x5eed3, 0)))`,
		want: "visible 0 by key No such file or directory\n",
	},
	{
		name: "POSIX message queues", lang: executors.Python,
		hostile: sysvPrelude + `
q = rt.mq_open(b"/cf-poison", O_CREAT | O_RDWR, 0o666, None)
print("mq", err(q))`,
		hostileWants: "mq ok",
		probe: sysvPrelude + `
print("open", err(rt.mq_open(b"/cf-poison", O_RDWR)))`,
		want: "open No such file or directory\n",
	},
	{
		// A run that could replace /dev/stdout with a file would swallow
		// the next run's output and keep it for a third; /dev/fd gone
		// breaks process substitution; data under /dev would escape the
		// disk limit.
		name: "/dev links and files", lang: executors.Bash,
		hostile: `rm -f /dev/stdout 2>/dev/null; echo stolen > /dev/stdout-new 2>/dev/null
rm -rf /dev/fd 2>/dev/null; ln -sf /tmp/x /dev/stdin 2>/dev/null
head -c 64M /dev/zero > /dev/big 2>/dev/null; mkdir /dev/hidden 2>/dev/null
head -c 256M /dev/zero > /dev/shm/big 2>/dev/null
echo tried`,
		hostileWants: "tried",
		probe: `echo probe > /dev/stdout; cat <(echo substituted); readlink /dev/stdout /dev/fd
ls -A /dev/shm; ls /dev | grep -cE '^(big|hidden|stdout-new)$'; df -k /dev/shm | awk 'NR==2 {print ($3 < 1024) ? "shm empty" : "shm used " $3}'`,
		want: "probe\nsubstituted\n/proc/self/fd/1\n/proc/self/fd\n0\nshm empty\n",
	},
	{
		name: "scratch, /tmp, /var/tmp and home", lang: executors.Bash,
		hostile: `echo poison > left-in-scratch; echo poison > "$HOME/.profile-poison"; echo poison > /tmp/poison
mkdir -p /tmp/cf/poison 2>/dev/null; echo poison > /var/tmp/poison 2>/dev/null; echo poison > /dev/shm/poison
chmod 000 /tmp/poison; echo tried`,
		hostileWants: "tried",
		probe:        `ls -A; ls -A "$HOME"; ls -A /tmp; ls -A /tmp/cf | grep -c poison; ls -A /var/tmp 2>/dev/null | grep -c poison; ls -A /dev/shm | wc -l`,
		want:         "main.sh\nmain.sh\ncf\n0\n0\n0\n",
	},
	{
		name: "disk", lang: executors.Bash,
		hostile:      `head -c 1G /dev/zero > /tmp/fill 2>/dev/null; head -c 1G /dev/zero > fill 2>/dev/null; echo tried`,
		hostileWants: "tried",
		// The scratch space is the same size again for the next run.
		probe: `head -c 50M /dev/zero > f && wc -c < f`,
		want:  "52428800\n",
	},
	{
		// The runner ignores SIGTERM, SIGINT, SIGHUP and the user signals;
		// a run must start with what a fresh python3 has: only SIGPIPE and
		// SIGXFSZ ignored, SIGINT caught, nothing blocked.
		name: "signal dispositions", lang: executors.Python,
		hostile: `
import signal, os
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGUSR2])
try:
    os.kill(os.getppid(), signal.SIGSTOP)
except OSError:
    pass
print("tried")`,
		hostileWants: "tried",
		// Signals 32 and 33 are glibc's own (thread cancel, setxid): GNU make
		// starts recipes with them ignored, so under `make test` the host's
		// whole process tree inherits that; they are masked out.
		probe: `
import signal, subprocess
def m(x): return "%016x" % (int(x, 16) & ~(3 << 31))
st = dict(l.split(":\t") for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print(m(st["SigBlk"]), m(st["SigIgn"]), signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
for x in subprocess.run(["sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status | cut -f2"], capture_output=True, text=True).stdout.split():
    print(m(x))`,
		// Python: SIGPIPE (13) and SIGXFSZ (25) ignored; its children: nothing.
		want: "0000000000000000 0000000001001000 True\n0000000000000000\n0000000000000000\n",
	},
	{
		// The runner's own limits and priority are inherited by every later
		// run; a same-uid run can lower them with prlimit and setpriority.
		name: "rlimits and priority", lang: executors.Python,
		hostile: `
import os, resource
ppid = os.getppid()
resource.prlimit(ppid, resource.RLIMIT_NOFILE, (32, 32))
resource.prlimit(ppid, resource.RLIMIT_STACK, (1 << 20, 1 << 20))
os.setpriority(os.PRIO_PROCESS, ppid, 19)
print("tried")`,
		hostileWants: "tried",
		probe: `
import os, resource
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 32, resource.getrlimit(resource.RLIMIT_STACK)[0] != 1 << 20, os.getpriority(os.PRIO_PROCESS, 0))`,
		want: "True True 0\n",
	},
	{
		name: "processes", lang: executors.Bash,
		hostile:      `setsid sleep 300 & (trap '' HUP TERM; exec -a cf-poison-daemon sleep 300) & disown -a; echo tried`,
		hostileWants: "tried",
		probe:        `ls /proc | grep -E '^[0-9]+$' | while read p; do tr '\0' ' ' < /proc/$p/cmdline; echo; done 2>/dev/null | grep -cE '^(sleep|cf-poison)'; true`,
		want:         "0\n",
	},
	{
		// Hash randomization off: the same program prints the same set
		// order in every run and in every python it starts.
		name: "PYTHONHASHSEED", lang: executors.Python,
		hostile:      `import os; os.environ["PYTHONHASHSEED"] = "random"; print("tried")`,
		hostileWants: "tried",
		probe: `
import os, subprocess, sys
mine = hash("codefeedback")
sub = subprocess.run([sys.executable, "-c", "print(hash('codefeedback'))"], capture_output=True, text=True).stdout.strip()
fixed = subprocess.run([sys.executable, "-c", "print(hash('codefeedback'))"], capture_output=True, text=True, env={"PYTHONHASHSEED": "0"}).stdout.strip()
print(os.environ.get("PYTHONHASHSEED"), str(mine) == sub == fixed)`,
		want: "0 True\n",
	},
}

// wholeRunMemory forks eight processes that each touch 100 MiB, report
// it, and hold it. It counts the holders alive at one instant, once every
// child has reported or died: a count of reports alone would also count
// holders the OOM killer took later (it kills the largest process, often
// a holder, which lets the next child in), and is not a count of memory
// held at once.
const wholeRunMemory = `
import os, signal, sys, time
N = 8
r, w = os.pipe()
kids = []
for i in range(N):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            b = bytearray(100 << 20)
            for j in range(0, len(b), 4096):
                b[j] = 1
            os.write(w, b"x%d " % i)
            time.sleep(50)
        except MemoryError:
            os.write(w, b"m%d " % i)
        os._exit(0)
    kids.append(pid)
os.close(w)
os.set_blocking(r, False)
reported, dead, killed = set(), set(), 0
got = b""
while len(reported | dead) < N:
    try:
        got += os.read(r, 4096)
    except BlockingIOError:
        pass
    reported = {int(t[1:]) for t in got.split() if t.startswith(b"x")}
    failed = {int(t[1:]) for t in got.split() if t.startswith(b"m")}
    for i, pid in enumerate(kids):
        if i not in dead:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                dead.add(i)
                killed += os.WIFSIGNALED(status)
    time.sleep(0.01)
# Every child has reported or died: those still alive hold 100 MiB each now.
held = len(reported - dead)
for i, pid in enumerate(kids):
    if i not in dead:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
print("held", held, "failed", len(failed), "killed", killed)
if held == N:
    print("ALL HELD")
`

// WholeRunMemory runs eight processes of 100 MiB each under a 256 MiB run:
// the memory limit holds for the run as a whole, so the run is stopped, or
// its allocations fail, or its processes are killed, and no more than three
// ever hold their memory at once.
func WholeRunMemory(t *testing.T, ex executors.Executor) {
	r := run(t, ex, executors.Request{Language: executors.Python, Code: wholeRunMemory,
		Limits: executors.Limits{MemoryBytes: 256 << 20, Timeout: 60 * time.Second}})
	t.Logf("stdout %q, oom %v, killed %v", r.Stdout, r.OOM, r.Killed)
	var held, failed, killed int
	fmt.Sscanf(r.Stdout, "held %d failed %d killed %d", &held, &failed, &killed)
	if strings.Contains(r.Stdout, "ALL HELD") || held > 3 {
		t.Errorf("got stdout %q: %d processes held 100 MiB each at once under a 256 MiB run", r.Stdout, held)
	}
	if !r.OOM && !r.Killed && failed == 0 && killed == 0 {
		t.Errorf("got stdout %q oom %v killed %v exit %d stderr %q: want the run stopped (OOM) or allocations failing",
			r.Stdout, r.OOM, r.Killed, r.ExitCode, clip(r.Stderr))
	}
	if r.TimedOut {
		t.Errorf("run timed out (stdout %q): want it stopped by memory, not by the clock", r.Stdout)
	}
	// The slot works afterwards, with all its memory.
	next := executors.Request{Language: executors.Python, Code: "b = bytearray(150 << 20)\nb[::4096] = b'1' * len(b[::4096])\nprint(len(b))",
		Limits: executors.Limits{MemoryBytes: 256 << 20, Timeout: 60 * time.Second}}
	if p := run(t, ex, next); p.Stdout != "157286400\n" {
		t.Errorf("next run: got stdout %q oom %v stderr %q, want 157286400", p.Stdout, p.OOM, clip(p.Stderr))
	}
}
