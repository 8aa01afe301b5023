package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// bashProbe prints what of the runner's a bash cell can find: files
// holding the marker where a sandbox keeps scratch files, every file under
// /tmp and /dev/shm (the probing sessions have none of their own), every
// directory under /tmp but /tmp/cf and the session's own, and the shell's
// descriptors that name a path there. Sandboxed code runs as the runner's
// uid, so a runner file with a path is one it can read: the runner's own
// (a cell's source, the saved shell state, its end-time marker, the
// captured output, a run's stdin) must have none.
const bashProbe = `grep -rl %[1]s /tmp /dev/shm /var/tmp 2>/dev/null
find /tmp /dev/shm -type f 2>/dev/null
find /tmp -type d ! -path /tmp ! -path /tmp/cf ! -path "$HOME" ! -path "$HOME/*" 2>/dev/null
for f in /proc/$$/fd/*; do readlink "$f"; done | grep -e '^/tmp' -e '^/dev/shm' -e '^/var/tmp'
true`

// testRunnerFiles: no file of the runner's own is reachable by path from
// inside the sandbox, during session cells (bash, python) and one-shot
// runs; the bash state still carries from cell to cell, survives a cell
// killed mid-save whole, and a timed-out cell leaves the next one working.
func testRunnerFiles(t *testing.T, ex executors.Executor) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	marker := "cf-marker-" + token(t)
	probe := fmt.Sprintf(bashProbe, marker)
	open := func(t *testing.T, lang executors.Language) (func(code string) executors.Result, executors.Session) {
		// A session cell's limit is CPU time; the wall cap ends the
		// sleeping cell below.
		s := openSession(t, ctx, ex, lang, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second, WallTimeout: 20 * time.Second}})
		return func(code string) executors.Result {
			t.Helper()
			return execCell(t, ctx, s, code)
		}, s
	}
	seesNothing := func(t *testing.T, when string, r executors.Result) {
		t.Helper()
		if r.Stdout != "" || r.ExitCode != 0 {
			t.Errorf("%s: the cell found the runner's files:\n%s(exit %d, stderr %q)", when, r.Stdout, r.ExitCode, clip(r.Stderr))
		}
	}

	t.Run("bash session", func(t *testing.T) {
		exec, s := open(t, executors.Bash)
		// The marker is in this cell's source, in the saved state (m) and in
		// the captured output.
		exec(fmt.Sprintf("m=%s; echo $m; x=41; greet() { echo \"hi $1\"; }; mkdir -p d && cd d", marker))
		seesNothing(t, "second cell", exec(probe))
		// The shell's functions are the cell's alone: the runner defines none.
		if r := exec("echo $((x + 1)) $m; greet you; basename \"$PWD\"; declare -F"); r.Stdout != fmt.Sprintf("42 %s\nhi you\nd\ndeclare -f greet\n", marker) {
			t.Errorf("third cell: got %q, want the variables, the function and the cwd carried, and no function of the runner's", r.Stdout)
		}
		// Options carry too, as in one shell (they did not before).
		exec("set -o pipefail; shopt -s nullglob")
		if r := exec("false | true; echo $?; echo no-such-file*"); r.Stdout != "1\n\n" {
			t.Errorf("options: got %q, want pipefail's 1 and nullglob's empty line", r.Stdout)
		}
		// A cell past the kernel's bound on one argument (128 KiB) runs.
		big := strings.Repeat("a", 150<<10)
		if r := exec("v=$(cat <<'EOF'\n" + big + "\nEOF\n)\necho ${#v} $x\nno_such_command_cf\nunset v"); r.Stdout != fmt.Sprintf("%d 41\n", len(big)) || !strings.Contains(r.Stderr, "line 6: no_such_command_cf") || strings.Contains(r.Stderr, "/proc/") {
			t.Errorf("a 150 KiB cell: got stdout %q stderr %q, want %d 41 and line 6's error as bash -c names it", r.Stdout, r.Stderr, len(big))
		}
		// A NUL byte, which no argument can hold, is dropped as bash drops it.
		if r := exec("echo a\x00b"); r.Stdout != "ab\n" {
			t.Errorf("a cell with a NUL byte: got %q stderr %q, want ab", r.Stdout, r.Stderr)
		}
		// A command bash cannot find is named as bash -c names it, with no
		// runner path in the message.
		if r := exec("no_such_command_cf"); !strings.Contains(r.Stderr, "line 1: no_such_command_cf: command not found") || strings.Contains(r.Stderr, "/tmp") {
			t.Errorf("unknown command: got stderr %q, want bash's 'line 1: ...: command not found' naming no runner file", r.Stderr)
		}
		// The cell lowers its own file-size limit below the state it saves:
		// the save dies of SIGXFSZ midway. The cell's own status stands (the
		// save is not the cell's), nothing of the save shows, and the next
		// cell gets the previous state, whole.
		if r := exec("big=$(printf '%*s' 200000 q); y=1; ulimit -f 100"); !r.OK() || r.Stderr != "" {
			t.Errorf("cell whose save was killed: got %+v, want its own exit 0 and no output of the save", r)
		}
		if r := exec("echo ${y:-unset} ${#big} $x; greet again; basename \"$PWD\""); r.Stdout != "unset 0 41\nhi again\nd\n" {
			t.Errorf("after a cell killed mid-save: got %q stderr %q, want the state before it, whole", r.Stdout, clip(r.Stderr))
		}
		if r := exec("sleep 600"); !r.TimedOut {
			t.Errorf("sleep 600: got %+v, want a timed-out cell", r)
		}
		if r := exec("echo ok ${x:-gone}"); r.Stdout != "ok gone\n" {
			t.Errorf("after a timeout: got %q stderr %q, want a working, restarted session", r.Stdout, clip(r.Stderr))
		}
		seesNothing(t, "after a timeout", exec(probe))
		// A cell that removes every file it can reach, the session's own
		// directory included (InterCode's fs_2 #12 ends with rm -rf /tmp/*):
		// the next cell starts without a complaint about its directory.
		exec("x=1; rm -rf /tmp/* 2>/dev/null; true")
		if r := exec("echo ok $x"); r.Stdout != "ok 1\n" || r.Stderr != "" {
			t.Errorf("after rm -rf /tmp/*: got stdout %q stderr %q, want ok 1 and nothing on stderr", r.Stdout, r.Stderr)
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if r := exec("echo ${x:-reset}"); r.Stdout != "reset\n" {
			t.Errorf("after Reset: got %q, want an empty state", r.Stdout)
		}
		seesNothing(t, "after Reset", exec(probe))
		// Tracing carries, and shows the cell's commands, not the
		// runner's restore and save around them.
		exec("set -xv")
		if r := exec("echo hi"); r.Stdout != "hi\n" || r.Stderr != "echo hi\n+ echo hi\n" {
			t.Errorf("under set -xv: got stdout %q stderr %q, want the cell's own line echoed and traced", r.Stdout, r.Stderr)
		}
	})

	t.Run("python session", func(t *testing.T) {
		exec, _ := open(t, executors.Python)
		exec(fmt.Sprintf("m = %q\nprint(m)", marker))
		r := exec("import os, subprocess\n" +
			fmt.Sprintf("subprocess.run(%q, shell=True)\n", fmt.Sprintf("grep -rl %s /tmp /dev/shm /var/tmp 2>/dev/null; find /tmp /dev/shm -type f", marker)) +
			"for fd in sorted(os.listdir('/proc/self/fd')):\n" +
			"    try:\n        p = os.readlink('/proc/self/fd/' + fd)\n    except OSError:\n        continue\n" +
			"    if p.startswith(('/tmp', '/dev/shm', '/var/tmp')):\n        print(fd, p)")
		seesNothing(t, "python cell", r)
		if r := exec("m"); r.Stdout != fmt.Sprintf("'%s'\n", marker) {
			t.Errorf("got %q, want the state carried", r.Stdout)
		}
	})

	t.Run("typescript run", func(t *testing.T) {
		// The type shim tsc is given is the runner's: gone before the run.
		skipMissing(t, available(t, ex), executors.TypeScript)
		r := langRun(t, ex, executors.TypeScript, "console.log(require('fs').readdirSync('.').sort().join(' '));\n", compileLimits)
		if r.Stdout != "main.js main.ts\n" || r.ExitCode != 0 {
			t.Errorf("a typescript run's scratch: got %q exit %d stderr %q, want only its source and its compiled main.js", r.Stdout, r.ExitCode, clip(r.Stderr))
		}
	})

	t.Run("run", func(t *testing.T) {
		// A one-shot run sees its own scratch (its program is its own file)
		// and nothing else: not the stdin the runner handed it.
		half := len(marker) / 2
		r := run(t, ex, executors.Request{Language: executors.Bash, Stdin: marker + "\n",
			Code: fmt.Sprintf("m=%s; m=${m}%s; read -r line; [ \"$line\" = \"$m\" ] || echo stdin differs\n", marker[:half], marker[half:]) +
				"grep -rl \"$m\" /tmp /dev/shm /var/tmp 2>/dev/null\nls -A /tmp/cf | grep -vx \"$(basename \"$PWD\")\"\n" +
				"readlink /proc/$$/fd/0 | grep -e '^/tmp' -e '^/dev/shm'\ntrue"})
		if r.Stdout != "" || r.ExitCode != 0 {
			t.Errorf("one-shot run: found the runner's files:\n%s(exit %d, stderr %q)", r.Stdout, r.ExitCode, clip(r.Stderr))
		}
	})
}
