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
var extraForgeries = []struct {
	lang executors.Language
	// failing prints "real" on stdout, then fails with an error whose
	// text (errText) is on stderr.
	failing, errText string
	forgeries        []struct {
		name  string
		cells []string
	}
}{
	{executors.SQL, "SELECT 'real' AS r;\nSELECT json('x');", "malformed JSON", []struct {
		name  string
		cells []string
	}{
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
	{executors.Bash, "echo real; echo oops >&2; (( 1 == 2 ))", "oops", []struct {
		name  string
		cells []string
	}{
		// Variables bash reads while it runs the prologue, the cell and the
		// EXIT trap: a trace into the state's descriptor, a prompt command,
		// a compatibility level, an expansion error under nounset.
		{"variables the shell reads as it runs", []string{`
echo patched
declare -gx BASH_XTRACEFD=254 PS4='+${__cf_none:?}$(exit 0)' PROMPT_COMMAND='exit 0' BASH_COMPAT=31 HISTFILE=/dev/null 2>/dev/null
export BASH_LOADABLES_PATH=. EXECIGNORE='*' GLOBIGNORE='*' 2>/dev/null
set -u -x`}},
	}},
	{executors.JavaScript, "console.log('real'); null.x", "TypeError", []struct {
		name  string
		cells []string
	}{
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
	{executors.Python, "print('real')\nassert 1 == 2", "AssertionError", []struct {
		name  string
		cells []string
	}{
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
	ctx := context.Background()
	for _, k := range extraForgeries {
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
					t.Logf("forgery %q: failing cell %d: exit %d ok %v stdout %q stderr %q", f.name, i, r.ExitCode, r.OK(), clip(r.Stdout), clip(r.Stderr))
					if r.ExitCode != 1 || r.OK() || !strings.Contains(r.Stdout, "real") || !strings.Contains(r.Stderr, k.errText) {
						t.Errorf("cell %d after the forgery: got exit %d ok %v stdout %q stderr %q, want exit 1, real and %q: an earlier cell changed a later cell's outcome",
							i, r.ExitCode, r.OK(), clip(r.Stdout), clip(r.Stderr), k.errText)
					}
				}
			})
		}
	}
}
