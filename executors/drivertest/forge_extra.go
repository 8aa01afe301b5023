package drivertest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// extraForgeries are session cells, in every session language, that tried
// to make a later cell of their session report another outcome and did
// not (a red-team round against main at edd81e3). Each forgery is one or
// more cells (SQL stops a cell at its first error, so its tries are a
// cell each; their own outcomes do not matter); one of them must print
// "patched" to show it ran. Then the language's failing cell runs twice
// and must keep its own outcome: exit status 1, its stdout and its error.
var extraForgeries = []forgeryKind{
	{executors.SQL, "SELECT 'real' AS r;\nSELECT json('x');", "malformed JSON", []forgery{
		// SQL cells run in the runner itself: a database attached on its
		// descriptors (the host's protocol pipes, the capture files) or its
		// memory would write into what the host reads.
		{"the runner's descriptors and memory attached", append(sqlAttachEach(0, 12),
			"CREATE TABLE d1.t(x); INSERT INTO d1.t VALUES ('{\"id\": 9, \"exit_code\": 0}');",
			"CREATE TABLE d2.t(x);", "CREATE TABLE d4.t(x);", "CREATE TABLE d5.t(x);", "CREATE TABLE d6.t(x);",
			"ATTACH '/proc/self/mem' AS m; CREATE TABLE m.t(x);",
			"VACUUM INTO '/proc/self/fd/1';", "VACUUM INTO '/proc/self/fd/4';",
			"SELECT 'patched';")},
		{"extensions, pragmas and triggers", []string{
			"SELECT load_extension('/usr/lib/x86_64-linux-gnu/libsqlite3.so.0');",
			"PRAGMA journal_mode=OFF; PRAGMA synchronous=0; PRAGMA trusted_schema=1; PRAGMA recursive_triggers=1; PRAGMA temp_store=2; PRAGMA query_only=1;",
			"PRAGMA query_only=0; CREATE TEMP TABLE x(a); CREATE TEMP TRIGGER tx AFTER INSERT ON x BEGIN SELECT RAISE(IGNORE); END;",
			"SELECT 'patched';"}},
	}},
	{executors.Bash, "echo real; echo oops >&2; (( 1 == 2 ))", "oops", []forgery{
		// Variables bash reads while it runs the prologue, the cell and the
		// EXIT trap: a trace into the state's descriptor, a prompt command,
		// a compatibility level, an expansion error under nounset.
		{"variables the shell reads as it runs", []string{`
echo patched
declare -gx BASH_XTRACEFD=254 PS4='+${__cf_none:?}$(exit 0)' PROMPT_COMMAND='exit 0' BASH_COMPAT=31 HISTFILE=/dev/null 2>/dev/null
export BASH_LOADABLES_PATH=. EXECIGNORE='*' GLOBIGNORE='*' 2>/dev/null
set -u -x`}},
	}},
	{executors.JavaScript, "console.log('real'); null.x", "TypeError", []forgery{
		// The kernel waits on a cell's promise with the original then and
		// prints its value with util.inspect: a promise subclass whose
		// species runs code, and a custom inspect that runs inside the
		// kernel's answer and rewires its stdin listeners.
		{"a promise subclass and a custom inspect in the kernel's answer", []string{`
const util = require('util'), fs = require('fs');
class P extends Promise {
  static get [Symbol.species]() { return function (exec) { exec(() => { try { fs.writeSync(3, 'x 0 y\n'); } catch (_) {} }, () => {}); }; }
}
globalThis.__later = [];
const v = { [util.inspect.custom]() {
  for (const l of process.stdin.listeners('data')) globalThis.__later.push(l);
  process.stdin.removeAllListeners('data');
  process.stdin.on('data', (d) => { for (const l of globalThis.__later) l(d); try { fs.writeSync(3, String(d).length + ' 0 x\n'); } catch (_) {} });
  return 'patched';
} };
P.resolve(v)`}},
		// The answer pipe made non-blocking and kept full by a process the
		// cell leaves behind, so the kernel's answer meets EAGAIN.
		{"the answer pipe made non-blocking and kept full", []string{`
require('child_process').spawn('python3', ['-c', ` + "`" + `
import fcntl, os, time
fcntl.fcntl(3, fcntl.F_SETFL, fcntl.fcntl(3, fcntl.F_GETFL) | os.O_NONBLOCK)
t = time.time()
while time.time() - t < 5:
    try:
        os.write(3, b"1 0 " + b"0" * 64 + b"\n")
    except BlockingIOError:
        time.sleep(0.001)
` + "`" + `], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'inherit'] }).unref();
'patched'`}},
	}},
	{executors.Python, "print('real')\nassert 1 == 2", "AssertionError", []forgery{
		// faulthandler writes from C signal handlers into a descriptor
		// it is given (here the kernel's first beyond stderr) and, through
		// register, on signals a later cell's processes could send. (Its
		// dump_traceback_later is not here: see the round's report.)
		{"faulthandler's handlers aimed at the kernel's descriptors", []string{`
import faulthandler, signal
print("patched", flush=True)
for fd in range(3, 64):
    try:
        faulthandler.enable(file=fd, all_threads=True)
    except Exception:
        pass
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGALRM):
    try:
        faulthandler.register(s, file=3, all_threads=True, chain=False)
    except Exception as e:
        print("refused:", type(e).__name__)`}},
	}},
}

type forgeryKind struct {
	lang executors.Language
	// failing prints "real" on stdout, then fails with an error whose
	// text (errText) is on stderr.
	failing, errText string
	forgeries        []forgery
}

type forgery struct {
	name  string
	cells []string
}

// mayDie names the forgeries after which the first failing cell may
// instead be reported killed (the forgery ends the session's kernel as
// that cell starts), never ok; the second must keep its own outcome.
var mayDie = map[string]bool{jsExitInListener: true}

const jsExitInListener = "process.reallyExit(0) in a stdin listener placed before the kernel's"

// leftForgeries are forgeries of a second red-team round that worked on
// main at 7dcc841 (see the constants below for the programs they use).
var leftForgeries = []forgeryKind{
	{executors.Bash, "echo real; echo oops >&2; (( 1 == 2 ))", "oops", []forgery{
		// A function named builtin ran in the NEXT cell's EXIT trap (every
		// word of the save was \builtin), where it could reach that cell's
		// bash: its /proc/PID/fd/1 and 2, and its /proc/PID/mem.
		{"a function named builtin rewrites the next cell's output from its trap", []string{`
echo patched
forger=$$
eval "builtin() { if [[ \$\$ != $forger ]]; then printf 'FORGED\n' >/proc/\$\$/fd/1; : >/proc/\$\$/fd/2; fi; command builtin \"\$@\"; }"`}},
		{"a function named builtin patches the next cell's bash through /proc/PID/mem", []string{`
echo patched
cat > patch.py <<'PYEOF'
` + memPatcher + `PYEOF
forger=$$ p=$PWD/patch.py
eval "builtin() { if [[ \$\$ != $forger ]]; then python3 $p \$\$ >/dev/null 2>&1; fi; command builtin \"\$@\"; }"`}},
		// A process left behind patches each new bash (readable, so
		// dumpable) through /proc/PID/mem.
		{"a process left behind patches later cells' bash through /proc/PID/mem", []string{`
echo patched
cat > patcher.py <<'PYEOF'
` + bashPatcher + `PYEOF
setsid python3 patcher.py </dev/null >/dev/null 2>&1 &
until [ -e ready ]; do sleep 0.05; done`}},
		// A process left behind holds the capture files and rewrites them.
		{"a process left behind rewrites the capture files", []string{`
echo patched
cat > forger.py <<'PYEOF'
` + captureForger + `PYEOF
setsid python3 forger.py </dev/null &
until [ -e ready ]; do sleep 0.05; done`}},
	}},
	{executors.Python, "print('real')\nassert 1 == 2", "AssertionError", []forgery{
		{"a process left behind rewrites the capture files", []string{`
import subprocess, sys, os, time
print('patched', flush=True)
open('forger.py', 'w').write(` + strconv.Quote(captureForger) + `)
subprocess.Popen([sys.executable, 'forger.py'], start_new_session=True)
while not os.path.exists('ready'):
    time.sleep(0.05)`}},
	}},
	{executors.JavaScript, "console.log('real'); null.x", "TypeError", []forgery{
		{"a process left behind rewrites the capture files", []string{`
const fs = require('fs'), cp = require('child_process');
console.log('patched');
fs.writeFileSync('forger.py', ` + strconv.Quote(captureForger) + `);
cp.spawn('python3', ['forger.py'], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] }).unref();
while (!fs.existsSync('ready')) cp.execSync('sleep 0.05');`}},
		// The listener runs when the next cell's request arrives, before
		// the kernel's: the kernel ends with status 0 during that cell.
		{jsExitInListener, []string{"process.stdin.prependListener('data', () => process.reallyExit(0));\n'patched'"}},
	}},
}

// captureForger is a python program for a process a cell leaves behind
// (a second red-team round, working on main at 7dcc841): once the
// session's capture files (its stdout and stderr) grow, it truncates them
// to their sizes at its start and writes FORGED, so a later cell's output
// would be replaced. It creates "ready" when it has its sizes.
const captureForger = `import os, time
base = [os.fstat(fd).st_size for fd in (1, 2)]
want = [base[0] + 7, base[1]]
open("ready", "w").close()
t0 = time.time()
armed = None
while time.time() - t0 < 20 and (armed is None or time.time() - armed < 3):
    s = [os.fstat(fd).st_size for fd in (1, 2)]
    if s != base and s != want:
        armed = armed or time.time()
        os.ftruncate(1, base[0])
        os.write(1, b"FORGED\n")
        os.ftruncate(2, base[1])
    time.sleep(0.0002)
`

// memPatcher is a python program that overwrites libc's _exit in the
// process given as its argument (through /proc/PID/mem) with
// exit_group(0); bashPatcher runs it on every new bash of the sandbox.
const memPatcher = `import ctypes, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None)
addr = ctypes.cast(libc._exit, ctypes.c_void_p).value
def base(p):
    for line in open("/proc/%s/maps" % p):
        f = line.split()
        if len(f) >= 6 and "libc.so" in f[5] and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
at = base(pid) + (addr - base("self"))
with open("/proc/%d/mem" % pid, "r+b", buffering=0) as m:
    m.seek(at)
    m.write(b"\x31\xff\xb8\xe7\x00\x00\x00\x0f\x05")
`

const bashPatcher = `import ctypes, os, time
libc = ctypes.CDLL(None)
addr = ctypes.cast(libc._exit, ctypes.c_void_p).value
def base(p):
    for line in open("/proc/%s/maps" % p):
        f = line.split()
        if len(f) >= 6 and "libc.so" in f[5] and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
mine = base("self")
seen = set(int(p) for p in os.listdir("/proc") if p.isdigit())
open("ready", "w").close()
t0 = time.time()
while time.time() - t0 < 20:
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in seen:
            continue
        pid = int(p)
        seen.add(pid)
        try:
            if not os.readlink("/proc/%d/exe" % pid).endswith("/bash"):
                continue
            at = base(pid) + (addr - mine)
            with open("/proc/%d/mem" % pid, "r+b", buffering=0) as m:
                m.seek(at)
                m.write(b"\x31\xff\xb8\xe7\x00\x00\x00\x0f\x05")
        except (PermissionError, TypeError):
            seen.discard(pid)  # not exec'd yet: look again
        except OSError:
            pass
`

// sqlAttachEach is one ATTACH cell per descriptor number in [from, to).
func sqlAttachEach(from, to int) []string {
	var cells []string
	for fd := from; fd < to; fd++ {
		cells = append(cells, "ATTACH '/proc/self/fd/"+strconv.Itoa(fd)+"' AS d"+strconv.Itoa(fd)+";")
	}
	return cells
}

// testForgedCellsExtra runs extraForgeries: each in a fresh session of
// its language, then the failing cell twice, which must keep exit status
// 1, its "real" stdout and its error on stderr.
func testForgedCellsExtra(t *testing.T, ex executors.Executor) {
	t.Run("background processes end with their cell", func(t *testing.T) { testCellProcessesEnd(t, ex) })
	t.Run("bash sealed", func(t *testing.T) { testBashSealed(t, ex) })
	ctx := context.Background()
	for _, k := range append(append([]forgeryKind(nil), extraForgeries...), leftForgeries...) {
		for _, f := range k.forgeries {
			t.Run(string(k.lang)+"/"+f.name, func(t *testing.T) {
				lim := executors.Limits{Timeout: 20 * time.Second, WallTimeout: 30 * time.Second}
				s := openSession(t, ctx, ex, k.lang, executors.SessionOptions{Limits: lim})
				ran := false
				for _, c := range f.cells {
					r, err := s.Exec(ctx, c)
					if err != nil {
						t.Fatalf("forging cell %.60q: %v", c, err)
					}
					ran = ran || strings.Contains(r.Stdout, "patched")
				}
				if !ran {
					t.Fatalf("no forging cell printed patched: the forgery did not run")
				}
				for i := 1; i <= 2; i++ {
					r, err := s.Exec(ctx, k.failing)
					if err != nil {
						t.Fatalf("failing cell: %v", err)
					}
					t.Logf("forgery %q: failing cell %d: exit %d ok %v killed %v stdout %q stderr %q", f.name, i, r.ExitCode, r.OK(), r.Killed, clip(r.Stdout), clip(r.Stderr))
					if i == 1 && mayDie[f.name] && r.Killed && !r.OK() {
						continue
					}
					if r.ExitCode != 1 || r.OK() || !strings.Contains(r.Stdout, "real") || !strings.Contains(r.Stderr, k.errText) {
						t.Errorf("cell %d after the forgery: got exit %d ok %v stdout %q stderr %q, want exit 1, real and %q: an earlier cell changed a later cell's outcome",
							i, r.ExitCode, r.OK(), clip(r.Stdout), clip(r.Stderr), k.errText)
					}
				}
			})
		}
	}
}

// testCellProcessesEnd: a process a session cell starts in the background
// (in a session of its own, detached) is gone when the next cell runs, in
// every session language that can start one. Left running, it kept the
// capture files (leftForgeries) and used CPU between cells that no cell's
// time limit counted (a red-team burner got 8 CPU-seconds under a 1 s
// limit).
func testCellProcessesEnd(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	check := map[executors.Language]string{
		executors.Bash: `p=$(cat bg.pid); if [ -r /proc/$p/stat ] && ! grep -q '^State:.*Z' /proc/$p/status; then echo alive; else echo gone; fi`,
		executors.Python: `import os
p = open('bg.pid').read().strip()
try:
    st = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0]
except OSError:
    st = 'gone'
print('gone' if st in ('gone', 'Z', 'X') else 'alive')`,
		executors.JavaScript: `{
const fs = require('fs');
const p = fs.readFileSync('bg.pid', 'utf8').trim();
let st = 'gone';
try { st = fs.readFileSync('/proc/' + p + '/stat', 'utf8').split(') ')[1][0]; } catch (_) {}
console.log(st === 'gone' || st === 'Z' || st === 'X' ? 'gone' : 'alive');
}`,
	}
	start := map[executors.Language]string{
		executors.Bash: `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > bg.pid; echo started`,
		executors.Python: `import subprocess
p = subprocess.Popen(['sleep', '1000'], start_new_session=True)
open('bg.pid', 'w').write(str(p.pid))
print('started')`,
		executors.JavaScript: `{
const p = require('child_process').spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
p.unref();
require('fs').writeFileSync('bg.pid', String(p.pid));
console.log('started');
}`,
	}
	for _, lang := range []executors.Language{executors.Bash, executors.Python, executors.JavaScript} {
		t.Run(string(lang), func(t *testing.T) {
			lim := executors.Limits{Timeout: 20 * time.Second, WallTimeout: 30 * time.Second}
			s := openSession(t, ctx, ex, lang, executors.SessionOptions{Limits: lim})
			for i, c := range []string{start[lang], check[lang]} {
				r, err := s.Exec(ctx, c)
				if err != nil {
					t.Fatalf("cell %d: %v", i+1, err)
				}
				if !r.OK() {
					t.Fatalf("cell %d: exit %d stdout %q stderr %q", i+1, r.ExitCode, clip(r.Stdout), clip(r.Stderr))
				}
				if i == 1 && strings.TrimSpace(r.Stdout) != "gone" {
					t.Errorf("the first cell's background process is %q in the next cell, want gone: a process outlived its cell", strings.TrimSpace(r.Stdout))
				}
			}
		})
	}
}

// testBashSealed checks the two halves of the bash forgeries above one at
// a time: a process a cell starts cannot open its bash's /proc/PID/mem
// (bash starts from an execute-only copy, so it is not dumpable), and a
// function named builtin an earlier cell defined never runs in a later
// cell's EXIT trap (it leaves a mark if it does).
func testBashSealed(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	lim := executors.Limits{Timeout: 20 * time.Second, WallTimeout: 30 * time.Second}
	t.Run("bash is not dumpable", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.Bash, executors.SessionOptions{Limits: lim})
		r, err := s.Exec(ctx, `python3 -c '
import os
try:
    open("/proc/%d/mem" % os.getppid(), "rb").close()
    print("opened")
except PermissionError:
    print("refused")'`)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(r.Stdout) != "refused" {
			t.Errorf("a child of the cell's bash opening its /proc/PID/mem: stdout %q stderr %q, want refused", clip(r.Stdout), clip(r.Stderr))
		}
	})
	t.Run("the trap runs no function of the cell", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.Bash, executors.SessionOptions{Limits: lim})
		cells := []string{
			`mark=$PWD/trap-ran; eval "builtin() { echo x >> $mark; command builtin \"\$@\"; }"; echo defined`,
			`echo second`,
			`if [ -e trap-ran ]; then echo ran; else echo never; fi; declare -F`,
		}
		var r executors.Result
		for _, c := range cells {
			var err error
			if r, err = s.Exec(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.HasPrefix(r.Stdout, "never") {
			t.Errorf("a function named builtin ran in a later cell's trap: stdout %q", clip(r.Stdout))
		}
	})
}

// Run-to-run channels of the second red-team round (working on main at
// 7dcc841): a run's user.* extended attributes and modes on the
// directories every run shares, and a TCP connection's TIME_WAIT entry in
// the next run's /proc/net/tcp. The runner now compares them after each
// run and has the instance replaced when one changed.
func init() {
	channels = append(channels,
		channel{
			name: "owner, mode and extended attributes of shared directories", lang: executors.Bash,
			hostile: `for d in /tmp /tmp/cf /dev/shm; do python3 -c "import os, sys; os.setxattr(sys.argv[1], 'user.cf', b'poison')" $d 2>/dev/null && echo set; done | sort -u
chmod 0777 /tmp /dev/shm 2>/dev/null; chmod 0500 /tmp/cf 2>/dev/null; echo tried`,
			hostileWants: "set\ntried",
			probe: `for d in /tmp /tmp/cf /dev/shm; do python3 -c "import os, sys; print(sys.argv[1], os.listxattr(sys.argv[1]))" $d; done
for d in /tmp /dev/shm; do case $(stat -c %a $d) in 755|1777) echo $d ok;; *) echo $d $(stat -c %a $d);; esac; done; stat -c %a /tmp/cf`,
			want: "/tmp []\n/tmp/cf []\n/dev/shm []\n/tmp ok\n/dev/shm ok\n700\n",
		},
		channel{
			name: "TIME_WAIT sockets", lang: executors.Python,
			hostile: `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 40000)); s.listen(8)
for port in (41234, 42345):
    c = socket.socket(); c.bind(("127.0.0.1", port)); c.connect(("127.0.0.1", 40000))
    a, _ = s.accept()
    c.close(); a.close()
print("tcp", len(open("/proc/net/tcp").readlines()) - 1 > 0)`,
			hostileWants: "tcp True",
			probe:        `print(len(open("/proc/net/tcp").readlines()) - 1, len(open("/proc/net/tcp6").readlines()) - 1)`,
			want:         "0 0\n",
		})
}
