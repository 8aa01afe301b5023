// Package drivertest is the conformance and attack suite every executor
// driver must pass (after go-cloud's blob/drivertest). A driver's test calls
//
//	drivertest.Run(t, func(t *testing.T) executors.Executor { ... })
//
// open must return a fresh executor with at least two pool slots and the
// default limits; Run closes it. The suite runs real programs: basics per
// language, limits, output caps, sessions, exception parsing, bad requests,
// and a table of hostile programs, each followed by checks that the host is
// untouched and that the next run still works.
package drivertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/codefeedback/codefeedback/executors"
)

// Run runs the whole suite against the executor open returns.
func Run(t *testing.T, open func(t *testing.T) executors.Executor) {
	h := newHost(t) // before open: the secret must be in the environment the driver inherits
	ex := open(t)
	t.Cleanup(func() { ex.Close() })
	t.Run("Basics", func(t *testing.T) { testBasics(t, ex) })
	t.Run("Limits", func(t *testing.T) { testLimits(t, ex) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, ex) })
	t.Run("ForgedCells", func(t *testing.T) { testForgedCells(t, ex) }) // forge.go
	t.Run("ForgedCellsExtra", func(t *testing.T) { testForgedCellsExtra(t, ex) })
	t.Run("RunnerFiles", func(t *testing.T) { testRunnerFiles(t, ex) }) // private.go
	t.Run("BadRequests", func(t *testing.T) { testBadRequests(t, ex) })
	t.Run("Attacks", func(t *testing.T) { testAttacks(t, ex, h) })
	t.Run("ConcurrentScratch", func(t *testing.T) { testConcurrentScratch(t, ex) })
	t.Run("Languages", func(t *testing.T) { testLanguages(t, ex, h) }) // langs.go
}

func run(t *testing.T, ex executors.Executor, req executors.Request) executors.Result {
	t.Helper()
	// The run's own limits bound the program; this bounds waiting for a
	// slot and a fresh sandbox too, which at load 30 took over a minute.
	ctx, cancel := context.WithTimeout(context.Background(), req.Limits.WallCap()+5*time.Minute)
	defer cancel()
	res, err := ex.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(%s %.60q): %v", req.Language, req.Code, err)
	}
	checkWellFormed(t, res)
	return res
}

// checkWellFormed holds for every result: valid UTF-8, JSON round trip.
func checkWellFormed(t *testing.T, res executors.Result) {
	t.Helper()
	if !utf8.ValidString(res.Stdout) || !utf8.ValidString(res.Stderr) {
		t.Errorf("result holds invalid UTF-8: stdout %q stderr %q", clip(res.Stdout), clip(res.Stderr))
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("result does not marshal: %v", err)
	}
	if res.Driver == "" {
		t.Errorf("result has no driver name")
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func py(code string) executors.Request {
	return executors.Request{Language: executors.Python, Code: code}
}

type basicCase struct {
	name  string
	req   executors.Request
	check func(t *testing.T, r executors.Result)
}

func wantOut(stdout string, exit int) func(t *testing.T, r executors.Result) {
	return func(t *testing.T, r executors.Result) {
		t.Helper()
		if r.Stdout != stdout || r.ExitCode != exit {
			t.Errorf("got stdout %q exit %d (stderr %q), want stdout %q exit %d", clip(r.Stdout), r.ExitCode, clip(r.Stderr), stdout, exit)
		}
	}
}

func testBasics(t *testing.T, ex executors.Executor) {
	db := sqliteDB(t)
	cases := []basicCase{
		{"python print", py("print('hello')"), wantOut("hello\n", 0)},
		{"python exit code", py("import sys\nprint('x')\nsys.exit(3)"), wantOut("x\n", 3)},
		{"python SystemExit message", py("raise SystemExit('bye')"), func(t *testing.T, r executors.Result) {
			if r.ExitCode != 1 || !strings.Contains(r.Stderr, "bye") {
				t.Errorf("got exit %d stderr %q, want exit 1 with 'bye'", r.ExitCode, r.Stderr)
			}
		}},
		{"python stdin", executors.Request{Language: executors.Python, Code: "import sys\nprint(sys.stdin.read().upper())", Stdin: "abc"}, wantOut("ABC\n", 0)},
		{"python files and import", executors.Request{Language: executors.Python, Code: "import helper\nprint(helper.f(), open('data/x.txt').read())",
			Files: map[string][]byte{"helper.py": []byte("def f(): return 7\n"), "data/x.txt": []byte("hi")}}, wantOut("7 hi\n", 0)},
		{"python __name__ and argv", py("import sys\nprint(__name__, sys.argv)"), wantOut("__main__ ['main.py']\n", 0)},
		{"python exception", py("def f(x):\n    return 1/x\nf(0)"), func(t *testing.T, r executors.Result) {
			if r.ExitCode != 1 || r.Exception != "ZeroDivisionError" || r.ErrorLine != "ZeroDivisionError: division by zero" {
				t.Errorf("got exit %d exception %q line %q, want 1 ZeroDivisionError", r.ExitCode, r.Exception, r.ErrorLine)
			}
			if !strings.Contains(r.Stderr, "Traceback (most recent call last)") || !strings.Contains(r.Stderr, "line 2, in f") {
				t.Errorf("got stderr %q, want a traceback naming line 2 in f", r.Stderr)
			}
		}},
		{"python syntax error", py("def f(:\n  pass"), func(t *testing.T, r executors.Result) {
			if r.ExitCode != 1 || r.Exception != "SyntaxError" {
				t.Errorf("got exit %d exception %q, want 1 SyntaxError (stderr %q)", r.ExitCode, r.Exception, r.Stderr)
			}
		}},
		{"python assertion", py("assert 1 + 1 == 3, 'math'"), func(t *testing.T, r executors.Result) {
			if r.Exception != "AssertionError" || r.ErrorLine != "AssertionError: math" {
				t.Errorf("got exception %q line %q, want AssertionError: math", r.Exception, r.ErrorLine)
			}
		}},
		{"python subprocess output", py("import subprocess\nsubprocess.run(['echo', 'child'])\nprint('parent')"), func(t *testing.T, r executors.Result) {
			if !strings.Contains(r.Stdout, "child\n") || !strings.Contains(r.Stdout, "parent\n") {
				t.Errorf("got stdout %q, want child and parent lines", r.Stdout)
			}
		}},
		{"python threads finish", py("import threading, time\ndef w():\n    time.sleep(0.1)\n    print('thread')\nthreading.Thread(target=w).start()"), wantOut("thread\n", 0)},
		{"bash", executors.Request{Language: executors.Bash, Code: "echo hi; echo err >&2; read x; echo \"got $x\"; exit 4", Stdin: "line\n"}, func(t *testing.T, r executors.Result) {
			if r.Stdout != "hi\ngot line\n" || r.Stderr != "err\n" || r.ExitCode != 4 {
				t.Errorf("got stdout %q stderr %q exit %d, want hi/got line, err, 4", r.Stdout, r.Stderr, r.ExitCode)
			}
		}},
		{"bash files", executors.Request{Language: executors.Bash, Code: "wc -l < in.txt; pwd | grep -c /", Files: map[string][]byte{"in.txt": []byte("a\nb\nc\n")}}, wantOut("3\n1\n", 0)},
		{"sql in memory table", executors.Request{Language: executors.SQL, Code: "CREATE TABLE t(id INTEGER, name TEXT);\nINSERT INTO t VALUES (1, 'ann'), (2, NULL);\nSELECT id, name FROM t ORDER BY id;"},
			wantOut("id | name\n---+-----\n1  | ann\n2  | NULL\n(2 rows)\n", 0)},
		{"sql database file", executors.Request{Language: executors.SQL, Code: "SELECT count(*) AS n FROM users WHERE name LIKE 'a%';", Files: map[string][]byte{"db.sqlite": db}},
			wantOut("n\n-\n2\n(1 row)\n", 0)},
		{"sql error", executors.Request{Language: executors.SQL, Code: "SELECT 1 AS one; SELEC oops;"}, func(t *testing.T, r executors.Result) {
			if r.ExitCode != 1 || !strings.HasPrefix(r.Stderr, "Error: ") || !strings.Contains(r.Stdout, "one") {
				t.Errorf("got stdout %q stderr %q exit %d, want first table, then Error: and exit 1", r.Stdout, r.Stderr, r.ExitCode)
			}
		}},
		{"sql semicolon in string", executors.Request{Language: executors.SQL, Code: "SELECT 'a;b' AS s;"}, wantOut("s\n---\na;b\n(1 row)\n", 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, run(t, ex, c.req)) })
	}
}

func testLimits(t *testing.T, ex executors.Executor) {
	// The time limit counts CPU time: a loop is stopped by it, a program
	// that waits by the wall-clock cap, and waiting alone never reaches it.
	t.Run("timeout", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "print('start', flush=True)\nwhile True: pass",
			Limits: executors.Limits{Timeout: time.Second}})
		if !r.TimedOut || r.OK() || r.Stdout != "start\n" || r.Signal == "SIGXCPU" {
			t.Errorf("got timed out %v ok %v signal %q stdout %q, want a timed-out run that kept its output", r.TimedOut, r.OK(), r.Signal, r.Stdout)
		}
		if r.Duration < time.Second {
			t.Errorf("got duration %v, want at least the 1 s of CPU time", r.Duration)
		}
	})
	t.Run("wall-clock cap", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "import time\nprint('start', flush=True)\ntime.sleep(60)",
			Limits: executors.Limits{Timeout: time.Second, WallTimeout: 2 * time.Second}})
		if !r.TimedOut || r.OK() || r.Stdout != "start\n" {
			t.Errorf("got timed out %v ok %v stdout %q, want a timed-out run that kept its output", r.TimedOut, r.OK(), r.Stdout)
		}
		// No upper bound: had the cap not ended it, the sleep would have
		// ended with success, which the check above fails.
		if r.Duration < 2*time.Second {
			t.Errorf("got duration %v, want at least the 2 s cap", r.Duration)
		}
	})
	t.Run("waiting is not computing", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "import time\ntime.sleep(2)\nprint('done')",
			Limits: executors.Limits{Timeout: time.Second, WallTimeout: 60 * time.Second}})
		if !r.OK() || r.Stdout != "done\n" {
			t.Errorf("got ok %v timed out %v stdout %q, want a 2 s sleep to pass a 1 s CPU-time limit", r.OK(), r.TimedOut, r.Stdout)
		}
	})
	t.Run("memory", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "x = bytearray(1 << 30)\nprint('allocated')",
			Limits: executors.Limits{MemoryBytes: 256 << 20, Timeout: 5 * time.Second}})
		if !r.OOM || r.ExitCode == 0 || strings.Contains(r.Stdout, "allocated") {
			t.Errorf("got oom %v exit %d stdout %q exception %q, want OOM", r.OOM, r.ExitCode, r.Stdout, r.Exception)
		}
	})
	t.Run("memory within limit", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "x = bytearray(64 << 20)\nprint(len(x))",
			Limits: executors.Limits{MemoryBytes: 512 << 20}})
		if r.Stdout != "67108864\n" || r.OOM {
			t.Errorf("got stdout %q oom %v, want 67108864", r.Stdout, r.OOM)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "import sys\nprint('a' * 5000)\nprint('b' * 5000, file=sys.stderr)",
			Limits: executors.Limits{OutputBytes: 1000}})
		if !r.StdoutTruncated || !r.StderrTruncated || r.ExitCode != 0 {
			t.Errorf("got truncated %v/%v exit %d, want both truncated and exit 0", r.StdoutTruncated, r.StderrTruncated, r.ExitCode)
		}
		if !strings.HasPrefix(r.Stdout, strings.Repeat("a", 1000)) || !strings.Contains(r.Stdout, "output truncated at 1000 bytes") || len(r.Stdout) > 1100 {
			t.Errorf("got stdout of %d bytes ending %q, want 1000 bytes and a marker", len(r.Stdout), r.Stdout[max(0, len(r.Stdout)-80):])
		}
	})
	t.Run("32 threads under the default limits", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: manyThreads, Limits: executors.Limits{Timeout: 60 * time.Second}})
		if r.Stdout != "10416 33\n" || !r.OK() {
			t.Errorf("ThreadPoolExecutor(32): got stdout %q exit %d stderr %q, want 10416 and a clean exit", r.Stdout, r.ExitCode, clip(r.Stderr))
		}
	})
	t.Run("cpu", func(t *testing.T) {
		r := run(t, ex, executors.Request{Language: executors.Python, Code: "while True: pass",
			Limits: executors.Limits{CPUTime: time.Second, Timeout: 20 * time.Second}})
		// Killed, and not by the 20 s time limit: by the 1 s CPU limit.
		if r.OK() || r.TimedOut {
			t.Errorf("got ok %v timed out %v signal %q after %v, want killed by the CPU limit", r.OK(), r.TimedOut, r.Signal, r.Duration)
		}
	})
}

// openSession opens a session that t closes at its end, skipping t where
// the sandbox lacks the language's toolchain.
func openSession(t *testing.T, ctx context.Context, ex executors.Executor, lang executors.Language, opts executors.SessionOptions) executors.Session {
	t.Helper()
	s, err := ex.Open(ctx, lang, opts)
	if err != nil {
		if strings.Contains(err.Error(), "toolchain") {
			t.Skipf("no %s in this sandbox: %v", lang, err)
		}
		t.Fatalf("Open(%s): %v", lang, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// execCell runs one cell of s, failing t when the session cannot.
func execCell(t *testing.T, ctx context.Context, s executors.Session, code string) executors.Result {
	t.Helper()
	r, err := s.Exec(ctx, code)
	if err != nil {
		t.Fatalf("Exec(%.60q): %v", code, err)
	}
	checkWellFormed(t, r)
	return r
}

func testSessions(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	exec := func(t *testing.T, s executors.Session, code string) executors.Result {
		t.Helper()
		return execCell(t, ctx, s, code)
	}
	t.Run("python", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.Python, executors.SessionOptions{Files: map[string][]byte{"in.txt": []byte("seed")},
			// A session cell's time limit is CPU time; the wall-clock cap
			// ends the sleeping cell below (and only it).
			Limits: executors.Limits{Timeout: 20 * time.Second, WallTimeout: 30 * time.Second}})
		exec(t, s, "x = 41\nopen('out.txt', 'w').write('kept')")
		if r := exec(t, s, "x + 1"); r.Stdout != "42\n" {
			t.Errorf("got %q, want 42 (state persists, last expression shown)", r.Stdout)
		}
		if r := exec(t, s, "print(open('out.txt').read(), open('in.txt').read())"); r.Stdout != "kept seed\n" {
			t.Errorf("got %q, want files to persist", r.Stdout)
		}
		if r := exec(t, s, "import os\nos.system('echo from-subprocess')"); !strings.Contains(r.Stdout, "from-subprocess") {
			t.Errorf("got %q, want subprocess output captured", r.Stdout)
		}
		if r := exec(t, s, "undefined_name"); r.Exception != "NameError" || r.ExitCode != 1 {
			t.Errorf("got exception %q exit %d, want NameError 1", r.Exception, r.ExitCode)
		}
		if r := exec(t, s, "x"); r.Stdout != "41\n" {
			t.Errorf("got %q, want state kept after an exception", r.Stdout)
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if r := exec(t, s, "print('x' in globals(), __import__('os').path.exists('out.txt'), open('in.txt').read())"); r.Stdout != "False False seed\n" {
			t.Errorf("after Reset got %q, want fresh state with the session's files", r.Stdout)
		}
		exec(t, s, "y = 1")
		r := exec(t, s, "import time\ntime.sleep(600)")
		if !r.TimedOut {
			t.Errorf("got timed out %v, want a timed-out cell", r.TimedOut)
		}
		if r := exec(t, s, "print('y' in globals(), open('in.txt').read())"); r.Stdout != "False seed\n" {
			t.Errorf("after timeout got %q, want a restarted empty session", r.Stdout)
		}
	})
	t.Run("bash", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.Bash, executors.SessionOptions{})
		exec(t, s, "x=41; export Y=two; mkdir -p d && cd d && echo data > f.txt; greet() { echo \"hi $1\"; }")
		if r := exec(t, s, "echo $((x+1)) $Y; basename \"$PWD\"; cat f.txt; greet you"); r.Stdout != "42 two\nd\ndata\nhi you\n" {
			t.Errorf("got %q, want variables, cwd, files and functions to persist", r.Stdout)
		}
		if r := exec(t, s, "false"); r.ExitCode != 1 {
			t.Errorf("got exit %d, want 1", r.ExitCode)
		}
		if r := exec(t, s, "echo $x"); r.Stdout != "41\n" {
			t.Errorf("got %q, want state after a failing cell", r.Stdout)
		}
	})
	// What a cell leaves is restored from data (see runner.py's bash
	// section): every kind of variable, functions (extglob ones too),
	// aliases, options and the directory, byte for byte.
	t.Run("bash state", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.Bash, executors.SessionOptions{})
		exec(t, s, `s=$'tab\tnl\nq\'d"q\\$HOME'; a=(x "y z" '' $'\x01'); a[9]=nine; declare -A h=([k]=v ["a b]c"]='$(id)' [$'\n']=nl)
declare -i n=6*7; declare -r ro=const; declare -n ref=s; declare -x ex=exported; declare -l low=MiXed
shopt -s extglob
shop() { case $1 in +(a)) echo many-a;; *) echo other;; esac; }; shopt -u extglob
f2() { cat <<END
f2 body $1
END
}; export -f f2
shopt -s expand_aliases; alias say='echo said'; set -o pipefail; mkdir -p 'dir with space' && cd 'dir with space'`)
		cases := []struct{ code, want string }{
			{`printf '%q\n' "$s"`, `$'tab\tnl\nq\'d"q\\$HOME'` + "\n"},
			{`echo "${#a[@]} ${!a[*]} [${a[1]}] [${a[2]}] ${a[9]}"; printf '%q\n' "${a[3]}"`, "5 0 1 2 3 9 [y z] [] nine\n$'\\001'\n"},
			{`for k in "${!h[@]}"; do printf '%q=%q\n' "$k" "${h[$k]}"; done | sort`, "$'\\n'=nl\na\\ b\\]c=\\$\\(id\\)\nk=v\n"},
			{`echo $n $ro $low; printf '%q\n' "$ref"; declare -p n ro ref ex low 2>&1 | cut -d= -f1`, "42 const mixed\n$'tab\\tnl\\nq\\'d\"q\\\\$HOME'\ndeclare -i n\ndeclare -r ro\ndeclare -n ref\ndeclare -x ex\ndeclare -l low\n"},
			{`shop aaa; shopt -s extglob; shop aaa; shop b; shopt -q extglob && echo on || echo off; f2 arg; bash -c 'f2 child'`, "other\nmany-a\nother\non\nf2 body arg\nf2 body child\n"},
			{`say it; false | true; echo $?; basename "$PWD"`, "said it\n1\ndir with space\n"},
		}
		for _, c := range cases {
			r := exec(t, s, c.code)
			if r.Stdout != c.want || r.ExitCode != 0 {
				t.Errorf("%s: got %q exit %d stderr %q, want %q", c.code, r.Stdout, r.ExitCode, clip(r.Stderr), c.want)
			}
		}
		// errexit, nounset and xtrace persist, and trace only the cell.
		exec(t, s, "set -eux")
		if r := exec(t, s, "echo one; false; echo two"); r.ExitCode != 1 || r.Stdout != "one\n" || r.Stderr != "+ echo one\n+ false\n" {
			t.Errorf("under set -eux: got exit %d stdout %q stderr %q, want exit 1 after one and a trace of the cell only", r.ExitCode, r.Stdout, r.Stderr)
		}
		exec(t, s, "set +eux")
		// A cell past the argument limit runs as well, with the state.
		big := "x=" + strings.Repeat("y", 200<<10) + "\necho ${#x} $n"
		if r := exec(t, s, big); r.Stdout != fmt.Sprintf("%d 42\n", 200<<10) || r.ExitCode != 0 {
			t.Errorf("large cell: got %q exit %d stderr %q", clip(r.Stdout), r.ExitCode, clip(r.Stderr))
		}
	})
	t.Run("sql", func(t *testing.T) {
		s := openSession(t, ctx, ex, executors.SQL, executors.SessionOptions{Files: map[string][]byte{"db.sqlite": sqliteDB(t)}})
		exec(t, s, "INSERT INTO users(name) VALUES ('zed');")
		if r := exec(t, s, "SELECT count(*) AS n FROM users;"); r.Stdout != "n\n-\n4\n(1 row)\n" {
			t.Errorf("got %q, want 4 rows after an insert", r.Stdout)
		}
		if r := exec(t, s, "SELECT * FROM nope;"); r.ExitCode != 1 || !strings.HasPrefix(r.Stderr, "Error: no such table") {
			t.Errorf("got exit %d stderr %q, want Error: no such table", r.ExitCode, r.Stderr)
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if r := exec(t, s, "SELECT count(*) AS n FROM users;"); r.Stdout != "n\n-\n3\n(1 row)\n" {
			t.Errorf("after Reset got %q, want the original 3 rows", r.Stdout)
		}
	})
}

func testBadRequests(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	cases := []struct {
		name string
		req  executors.Request
		want string
	}{
		{"unknown language", executors.Request{Language: "cobol", Code: "x"}, "unknown language"},
		{"empty code", executors.Request{Language: executors.Python, Code: "  \n"}, "empty code"},
		{"negative timeout", executors.Request{Language: executors.Python, Code: "1", Limits: executors.Limits{Timeout: -1}}, "negative timeout"},
		{"negative memory", executors.Request{Language: executors.Python, Code: "1", Limits: executors.Limits{MemoryBytes: -5}}, "negative memory"},
		{"file outside scratch", executors.Request{Language: executors.Python, Code: "1", Files: map[string][]byte{"../x": nil}}, "bad file name"},
		{"absolute file", executors.Request{Language: executors.Python, Code: "1", Files: map[string][]byte{"/etc/x": nil}}, "bad file name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ex.Run(ctx, c.req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	if _, err := ex.Open(ctx, "cobol", executors.SessionOptions{}); err == nil || !strings.Contains(err.Error(), "unknown language") {
		t.Errorf("Open(cobol): got %v, want unknown language", err)
	}
	if _, err := executors.Open(ctx, "nosuchdriver://"); err == nil || !strings.Contains(err.Error(), "unknown driver") {
		t.Errorf("Open(nosuchdriver): got %v, want unknown driver", err)
	}
	if r := run(t, ex, py("print('still fine')")); r.Stdout != "still fine\n" {
		t.Errorf("after bad requests got %q", r.Stdout)
	}
}
