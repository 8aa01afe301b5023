package drivertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// langCase programs, per language: the suite checks the result fields each
// must give on every driver.
type langPrograms struct {
	lang         executors.Language
	hello        string // prints "hello 42"
	compileError string // fails to compile (or to parse) on line 2
	runtimeError string // an uncaught error raised on line 3
	exception    string // the Exception the runtime error reports
	loop         string // never ends
	memoryBomb   string // allocates until the memory limit stops it
	forkBomb     string // forks until the process limit stops it
}

func langTable() []langPrograms {
	return []langPrograms{
		{lang: executors.JavaScript,
			hello:        "const x = 6 * 7;\nconsole.log(`hello ${x}`);\n",
			compileError: "let a = 1;\nlet b = ;\n",
			runtimeError: "function f(o) {\n  return o.x;\n}\nconsole.log(f(null)); // line 4 calls, line 2 throws\n",
			exception:    "TypeError",
			loop:         "for (;;) {}\n",
			memoryBomb:   "const a = [];\nfor (;;) a.push(new Array(1 << 20).fill(7));\n",
			forkBomb:     "const cp = require('child_process');\nfor (;;) { try { cp.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']).on('error', () => {}); } catch (e) {} }\n"},
		{lang: executors.TypeScript,
			hello:        "const x: number = 6 * 7;\nconsole.log(`hello ${x}`);\n",
			compileError: "let a: number = 1;\nlet b: number = \"two\";\n",
			runtimeError: "function f(o: any): number {\n  return o.x;\n}\nconsole.log(f(null));\n",
			exception:    "TypeError",
			loop:         "for (;;) {}\n",
			memoryBomb:   "const a: number[][] = [];\nfor (;;) a.push(new Array(1 << 20).fill(7));\n",
			forkBomb:     "const cp = require('child_process');\nfor (;;) { try { cp.spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']).on('error', () => {}); } catch (e) {} }\n"},
		{lang: executors.C,
			hello:        "#include <stdio.h>\nint main(void) { printf(\"hello %d\\n\", 6 * 7); return 0; }\n",
			compileError: "int main(void) {\n  int x = ;\n  return x;\n}\n",
			runtimeError: "#include <assert.h>\nint main(void) {\n  assert(1 + 1 == 3);\n  return 0;\n}\n",
			exception:    "AssertionError",
			loop:         "int main(void) { volatile int x = 0; for (;;) x++; }\n",
			memoryBomb:   "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint main(void) {\n  for (;;) {\n    char *p = malloc(1 << 20);\n    if (!p) { perror(\"malloc\"); return 1; }\n    memset(p, 1, 1 << 20);\n  }\n}\n",
			forkBomb:     "#include <unistd.h>\nint main(void) { for (;;) fork(); }\n"},
		{lang: executors.CPP,
			hello:        "#include <iostream>\nint main() { std::cout << \"hello \" << 6 * 7 << \"\\n\"; }\n",
			compileError: "int main() {\n  undeclared_name = 1;\n}\n",
			runtimeError: "#include <stdexcept>\nint main() {\n  throw std::runtime_error(\"boom\");\n}\n",
			exception:    "std::runtime_error",
			loop:         "int main() { volatile int x = 0; for (;;) x++; }\n",
			memoryBomb:   "#include <vector>\n#include <cstring>\nint main() {\n  std::vector<char*> v;\n  for (;;) { char *p = new char[1 << 20]; std::memset(p, 1, 1 << 20); v.push_back(p); }\n}\n",
			forkBomb:     "#include <unistd.h>\nint main() { for (;;) fork(); }\n"},
		{lang: executors.Go,
			hello:        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Printf(\"hello %d\\n\", 6*7) }\n",
			compileError: "package main\nfunc main() { x := }\n",
			runtimeError: "package main\nfunc main() {\n\tvar s []int\n\t_ = s[5]\n}\n",
			exception:    "panic",
			loop:         "package main\n\nfunc main() {\n\tfor {\n\t}\n}\n",
			memoryBomb:   "package main\n\nfunc main() {\n\tvar keep [][]byte\n\tfor {\n\t\tb := make([]byte, 1<<20)\n\t\tfor i := range b {\n\t\t\tb[i] = 1\n\t\t}\n\t\tkeep = append(keep, b)\n\t}\n}\n",
			forkBomb:     "package main\n\nimport \"os/exec\"\n\nfunc main() {\n\tfor {\n\t\t_ = exec.Command(\"/proc/self/exe\").Start()\n\t}\n}\n"},
		{lang: executors.Java,
			hello:        "public class Main {\n  public static void main(String[] a) { System.out.println(\"hello \" + 6 * 7); }\n}\n",
			compileError: "public class Main {\n  public static void main(String[] a) { int x = ; }\n}\n",
			runtimeError: "public class Main {\n  public static void main(String[] a) {\n    System.out.println(1 / (a.length));\n  }\n}\n",
			exception:    "java.lang.ArithmeticException",
			loop:         "public class Main {\n  public static void main(String[] a) { for (;;) {} }\n}\n",
			memoryBomb:   "import java.util.*;\npublic class Main {\n  public static void main(String[] a) {\n    List<long[]> l = new ArrayList<>();\n    for (;;) l.add(new long[1 << 17]);\n  }\n}\n",
			forkBomb:     "public class Main {\n  public static void main(String[] a) throws Exception {\n    for (;;) new ProcessBuilder(\"sleep\", \"100\").start();\n  }\n}\n"},
		{lang: executors.Rust,
			hello:        "fn main() {\n    println!(\"hello {}\", 6 * 7);\n}\n",
			compileError: "fn main() {\n    let x: i32 = \"no\";\n}\n",
			runtimeError: "fn main() {\n    let v: Vec<i32> = Vec::new();\n    println!(\"{}\", v[std::env::args().count() + 4]);\n}\n",
			exception:    "panic",
			loop:         "fn main() {\n    let mut x: u64 = 1;\n    loop {\n        x = x.wrapping_mul(3);\n        if x == 0 {\n            println!(\"{}\", x);\n        }\n    }\n}\n",
			memoryBomb:   "fn main() {\n    let mut v: Vec<Vec<u8>> = Vec::new();\n    loop { v.push(vec![1u8; 1 << 20]); }\n}\n",
			forkBomb:     "fn main() {\n    loop { let _ = std::process::Command::new(\"/proc/self/exe\").spawn(); }\n}\n"},
		{lang: executors.Ruby,
			hello:        "x = 6 * 7\nputs \"hello #{x}\"\n",
			compileError: "def f(\n  1 +\nend end\n",
			runtimeError: "def f(x)\n  x / 0\nend\nf(1)\n",
			exception:    "ZeroDivisionError",
			loop:         "loop { }\n",
			memoryBomb:   "a = []\nloop { a << ('x' * (1 << 20)) }\n",
			forkBomb:     "loop { fork rescue nil }\n"},
		{lang: executors.PHP,
			hello:        "<?php\n$x = 6 * 7; echo \"hello $x\\n\";\n",
			compileError: "<?php\n$x = ;\n",
			runtimeError: "<?php\nfunction f($x) {\n  return intdiv($x, 0);\n}\nf(1);\n",
			exception:    "DivisionByZeroError",
			loop:         "<?php\nwhile (true) {}\n",
			memoryBomb:   "<?php\n$a = [];\nwhile (true) { $a[] = str_repeat('x', 1 << 20); }\n",
			forkBomb:     "<?php\nwhile (true) { @proc_open('sleep 100', [], $p); }\n"},
		{lang: executors.Lua,
			hello:        "local x = 6 * 7\nprint('hello ' .. x)\n",
			compileError: "local x = 1\nlocal y = = 2\n",
			runtimeError: "local t = nil\nlocal function f() return 1 end\nprint(t.x)\n",
			exception:    "RuntimeError",
			loop:         "while true do end\n",
			memoryBomb:   "local t = {}\nwhile true do t[#t + 1] = string.rep('x', 1 << 20) .. #t end\n",
			forkBomb:     "while true do io.popen('sleep 100') end\n"},
	}
}

// available asks the executor which toolchains it has. A missing one is
// skipped with a message, except on CI, where .ci/setup installs them all.
func available(t *testing.T, ex executors.Executor) map[executors.Language]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	langs, err := executors.Languages(ctx, ex)
	if err != nil {
		t.Fatalf("Languages: %v", err)
	}
	ok := map[executors.Language]bool{}
	for _, l := range langs {
		ok[l.Language] = l.Available
	}
	return ok
}

func skipMissing(t *testing.T, ok map[executors.Language]bool, lang executors.Language) {
	t.Helper()
	if ok[lang] {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no %s toolchain in this sandbox (.ci/setup and make sandbox-image install %v)", lang, lang.DebianPackages())
	}
	t.Skipf("no %s toolchain in this sandbox: install %v (.ci/setup does)", lang, lang.DebianPackages())
}

// compileLimits are generous: compilers share a loaded machine in tests.
var compileLimits = executors.Limits{Timeout: 180 * time.Second, CPUTime: 120 * time.Second}

func langRun(t *testing.T, ex executors.Executor, lang executors.Language, code string, lim executors.Limits) executors.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := ex.Run(ctx, executors.Request{Language: lang, Code: code, Limits: lim, CompileLimits: compileLimits})
	if err != nil {
		t.Fatalf("Run(%s %.60q): %v", lang, code, err)
	}
	checkWellFormed(t, res)
	return res
}

// testLanguages runs, for every language beyond Python, Bash and SQL: a
// hello world, a compile (or parse) error, an uncaught run-time error, and
// with CODEFEEDBACK_LANG_FULL=1 also a timeout, a memory bomb and a fork
// bomb, each checked by its result fields; then the per-language attacks.
func testLanguages(t *testing.T, ex executors.Executor, h *host) {
	ok := available(t, ex)
	full := os.Getenv("CODEFEEDBACK_LANG_FULL") == "1"
	for _, p := range langTable() {
		t.Run(string(p.lang), func(t *testing.T) {
			skipMissing(t, ok, p.lang)
			run := func(code string, lim executors.Limits) executors.Result {
				return langRun(t, ex, p.lang, code, lim)
			}
			runLim := executors.Limits{Timeout: 30 * time.Second}
			t.Run("hello", func(t *testing.T) {
				r := run(p.hello, runLim)
				if r.Stdout != "hello 42\n" || r.ExitCode != 0 || r.Phase != "" {
					t.Errorf("got stdout %q exit %d phase %q stderr %q, want hello 42", r.Stdout, r.ExitCode, r.Phase, clip(r.Stderr))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
				defer cancel()
				if v, err := executors.ToolchainVersion(ctx, ex, p.lang); err != nil || !strings.Contains(v, "/") {
					t.Errorf("ToolchainVersion: %q, %v; want each tool's path and version (part of the cache keys)", v, err)
				} else {
					t.Logf("toolchain: %s", strings.ReplaceAll(v, "\n", " | "))
				}
				if p.lang.Compiled() {
					again := run(p.hello, runLim)
					if !again.CompileCached || again.Stdout != r.Stdout {
						t.Errorf("second identical run: compile_cached %v stdout %q, want a cached artifact and the same output", again.CompileCached, again.Stdout)
					}
				}
			})
			t.Run("compile error", func(t *testing.T) {
				r := run(p.compileError, runLim)
				if r.ExitCode == 0 || r.Exception == "" {
					t.Fatalf("got exit %d exception %q stderr %q, want a failure with its error", r.ExitCode, r.Exception, clip(r.Stderr))
				}
				if p.lang.Compiled() && (r.Phase != "compile" || r.Exception != "CompileError") {
					t.Errorf("got phase %q exception %q, want compile CompileError", r.Phase, r.Exception)
				}
				if r.Line != 2 {
					t.Errorf("got line %d (%q), want 2; stderr %q", r.Line, r.ErrorLine, clip(r.Stderr))
				}
			})
			t.Run("runtime error", func(t *testing.T) {
				r := run(p.runtimeError, runLim)
				if r.ExitCode == 0 || r.Phase != "" || r.TimedOut || r.OOM {
					t.Fatalf("got exit %d phase %q timed out %v oom %v, want a failed run", r.ExitCode, r.Phase, r.TimedOut, r.OOM)
				}
				if r.Exception != p.exception {
					t.Errorf("got exception %q (%q), want %q; stderr %q", r.Exception, r.ErrorLine, p.exception, clip(r.Stderr))
				}
				if r.ErrorLine == "" {
					t.Errorf("got no error line; stderr %q", clip(r.Stderr))
				}
			})
			if !full {
				return
			}
			t.Run("timeout", func(t *testing.T) {
				r := run(p.loop, executors.Limits{Timeout: 3 * time.Second})
				if !r.TimedOut || !r.Killed {
					t.Errorf("got timed out %v killed %v exit %d, want a timeout", r.TimedOut, r.Killed, r.ExitCode)
				}
			})
			t.Run("memory bomb", func(t *testing.T) {
				r := run(p.memoryBomb, executors.Limits{Timeout: 60 * time.Second, MemoryBytes: 256 << 20})
				if !r.OOM || r.TimedOut {
					t.Errorf("got oom %v timed out %v exit %d signal %q stderr %q, want oom", r.OOM, r.TimedOut, r.ExitCode, r.Signal, clip(r.Stderr))
				}
			})
			t.Run("fork bomb", func(t *testing.T) {
				r := run(p.forkBomb, executors.Limits{Timeout: 5 * time.Second, Processes: 32})
				if r.OK() {
					t.Errorf("got a successful run, want it stopped (timeout or failure)")
				}
				h.checkUntouched(t, "")
				if n := run(p.hello, runLim); n.Stdout != "hello 42\n" {
					t.Errorf("the next run after the fork bomb: got %q stderr %q", n.Stdout, clip(n.Stderr))
				}
			})
		})
	}
	t.Run("node session", func(t *testing.T) { testNodeSession(t, ex, ok) })
	t.Run("attacks", func(t *testing.T) { testLangAttacks(t, ex, h, ok) })
}

// langAttacks: hostile programs in each language beyond Python and Bash.
// Each prints LEAK when it gets what it wants, and a word the check wants
// when it ran to the end (so an attack that silently did nothing fails).
// Network attempts go to the host's loopback only: inside the sandbox that
// is the sandbox's own (downed or empty) loopback.
func langAttacks() []attack {
	return []attack{
		{name: "javascript network, interfaces and key", lang: executors.JavaScript,
			code: "const net = require('net'), os = require('os');\n" +
				"if (process.env.OPENAI_API_KEY) console.log('LEAK key in env');\n" +
				"const names = Object.keys(os.networkInterfaces()).filter(n => n !== 'lo');\n" +
				"if (names.length) console.log('LEAK interfaces', names);\n" +
				"const s = net.connect({ host: '127.0.0.1', port: {{PORT}} });\n" +
				"s.setTimeout(2000, () => { console.log('blocked timeout'); s.destroy(); });\n" +
				"s.on('connect', () => { console.log('LEAK connected'); s.destroy(); });\n" +
				"s.on('error', e => console.log('blocked', e.code));\n",
			check: wantPrinted("blocked")},
		{name: "typescript read of host files", full: true, lang: executors.TypeScript,
			code: "const fs = require('fs');\n" +
				"for (const f of ['/etc/shadow', '{{SECRETFILE}}', '/root/.bashrc', '{{REPO}}/go.mod']) {\n" +
				"  try { console.log('LEAK read ' + f + ' ' + fs.readFileSync(f, 'utf8').slice(0, 40)); }\n" +
				"  catch (e: any) { console.log('blocked ' + e.code); }\n" +
				"}\n",
			check: wantPrinted("blocked")},
		// 1,000 attempts are 30 times the limit; 100,000 took seconds of
		// failing forks under a cgroup pids limit (the kernel copies the
		// address space before the cgroup refuses) and outlasted the
		// timeout on a loaded machine, so nothing was printed.
		{name: "c fork bomb", lang: executors.C, lim: executors.Limits{Timeout: 30 * time.Second, Processes: 32},
			code:  "#include <unistd.h>\n#include <stdio.h>\n#include <sys/types.h>\nint main(void) {\n  int n = 0;\n  for (int i = 0; i < 1000; i++) { pid_t p = fork(); if (p == 0) { for (;;) pause(); } else if (p > 0) n++; }\n  if (n > 40) printf(\"LEAK forked %d\\n\", n);\n  printf(\"forked %d\\n\", n);\n  return 0;\n}\n",
			check: wantPrinted("forked ")},
		{name: "c read of /etc/shadow and a host file", full: true, lang: executors.C,
			code: "#include <stdio.h>\nint main(void) {\n  const char *fs[] = {\"/etc/shadow\", \"{{SECRETFILE}}\", \"/proc/1/environ\"};\n" +
				"  for (int i = 0; i < 3; i++) {\n    FILE *f = fopen(fs[i], \"r\"); char b[64] = {0};\n" +
				"    if (f && fread(b, 1, 63, f) > 0 && i < 2) printf(\"LEAK read %s %s\\n\", fs[i], b); else printf(\"blocked %s\\n\", fs[i]);\n" +
				"    if (f) fclose(f);\n  }\n  return 0;\n}\n",
			check: wantPrinted("blocked {{SECRETFILE}}")},
		{name: "cpp write outside scratch", full: true, lang: executors.CPP,
			code: "#include <fstream>\n#include <iostream>\nint main() {\n" +
				"  for (const char *d : {\"/usr\", \"/etc\", \"/bin\", \"/root\", \"{{REPO}}\", \"{{HOSTDIR}}\"}) {\n" +
				"    std::ofstream f(std::string(d) + \"/pwned.txt\");\n    f << \"x\";\n    f.close();\n" +
				"    if (f.good()) std::cout << \"LEAK wrote \" << d << \"\\n\";\n  }\n  std::cout << \"done\\n\";\n}\n",
			check: wantPrinted("done")},
		{name: "go network dial", lang: executors.Go,
			code: "package main\n\nimport (\n\t\"fmt\"\n\t\"net\"\n\t\"time\"\n)\n\nfunc main() {\n" +
				"\tifs, _ := net.Interfaces()\n\tfor _, i := range ifs {\n\t\tif i.Name != \"lo\" {\n\t\t\tfmt.Println(\"LEAK interface\", i.Name)\n\t\t}\n\t}\n" +
				"\tfor _, n := range []string{\"tcp\", \"udp\"} {\n\t\tc, err := net.DialTimeout(n, \"127.0.0.1:{{PORT}}\", time.Second)\n" +
				"\t\tif err == nil && n == \"tcp\" {\n\t\t\tfmt.Println(\"LEAK connected\")\n\t\t}\n\t\tif c != nil {\n\t\t\tc.Close()\n\t\t}\n\t\tfmt.Println(\"blocked\", n, err)\n\t}\n" +
				"\tif a, err := net.LookupHost(\"codefeedback-egress-check.invalid\"); err == nil && len(a) > 0 {\n\t\tfmt.Println(\"LEAK resolved\", a)\n\t}\n}\n",
			check: wantPrinted("blocked tcp")},
		{name: "java read of /etc/shadow", lang: executors.Java,
			code:  "import java.nio.file.*;\npublic class Main {\n  public static void main(String[] a) {\n    for (String f : new String[]{\"/etc/shadow\", \"{{SECRETFILE}}\"}) {\n      try { byte[] b = Files.readAllBytes(Paths.get(f)); System.out.println(\"LEAK read \" + f + \" \" + new String(b)); }\n      catch (Exception e) { System.out.println(\"blocked \" + e.getClass().getSimpleName()); }\n    }\n    if (System.getenv(\"OPENAI_API_KEY\") != null) System.out.println(\"LEAK key in env\");\n  }\n}\n",
			check: wantPrinted("blocked NoSuchFileException")}, // the host file: not there
		{name: "rust network and key", full: true, lang: executors.Rust,
			code: "use std::net::{TcpStream, SocketAddr};\nuse std::time::Duration;\nfn main() {\n" +
				"    if std::env::var(\"OPENAI_API_KEY\").is_ok() { println!(\"LEAK key in env\"); }\n" +
				"    let a: SocketAddr = \"127.0.0.1:{{PORT}}\".parse().unwrap();\n" +
				"    match TcpStream::connect_timeout(&a, Duration::from_secs(1)) {\n" +
				"        Ok(_) => println!(\"LEAK connected\"),\n        Err(e) => println!(\"blocked {}\", e),\n    }\n}\n",
			check: wantPrinted("blocked")},
		{name: "ruby network and host files", lang: executors.Ruby,
			code: "require 'socket'\n" +
				"begin\n  Socket.tcp('127.0.0.1', {{PORT}}, connect_timeout: 1) { puts 'LEAK connected' }\nrescue StandardError => e\n  puts \"blocked #{e.class}\"\nend\n" +
				"['/etc/shadow', '{{SECRETFILE}}'].each do |f|\n  puts \"LEAK read #{f} #{File.read(f)[0, 40]}\" rescue puts \"blocked #{f}\"\nend\n" +
				"puts 'LEAK key in env' if ENV['OPENAI_API_KEY']\n",
			check: wantPrinted("blocked {{SECRETFILE}}")},
		{name: "php shell, sockets and host files", lang: executors.PHP,
			code: "<?php\n" +
				"$s = @fsockopen('127.0.0.1', {{PORT}}, $errno, $errstr, 1);\necho $s ? \"LEAK connected\\n\" : \"blocked $errno\\n\";\n" +
				"foreach (['/etc/shadow', '{{SECRETFILE}}'] as $f) { $b = @file_get_contents($f); echo $b !== false ? \"LEAK read $f\\n\" : \"blocked $f\\n\"; }\n" +
				"$o = shell_exec('cat {{SECRETFILE}} /etc/shadow 2>/dev/null; env');\nif ($o !== null && strpos($o, 'OPENAI') !== false) echo \"LEAK via shell\\n\";\n" +
				"if (getenv('OPENAI_API_KEY') !== false) echo \"LEAK key in env\\n\";\n",
			check: wantPrinted("blocked {{SECRETFILE}}")},
		{name: "lua shell and host files", lang: executors.Lua,
			code: "for _, f in ipairs({'/etc/shadow', '{{SECRETFILE}}'}) do\n" +
				"  local h = io.open(f, 'r')\n  if h and h:read('a') then print('LEAK read ' .. f) else print('blocked ' .. f) end\nend\n" +
				"local p = io.popen('cat {{SECRETFILE}} 2>/dev/null; ls /root 2>/dev/null')\nlocal out = p:read('a')\np:close()\n" +
				"if #out > 0 then print('LEAK via shell ' .. out) end\n" +
				"if os.getenv('OPENAI_API_KEY') then print('LEAK key in env') end\n",
			check: wantPrinted("blocked {{SECRETFILE}}")},
	}
}

// langAttackLimits are an attack's limits unless it names its own: time
// for a compiler on a loaded machine.
var langAttackLimits = executors.Limits{Timeout: 20 * time.Second}

func testLangAttacks(t *testing.T, ex executors.Executor, h *host, ok map[executors.Language]bool) {
	full := os.Getenv("CODEFEEDBACK_LANG_FULL") == "1"
	for _, a := range langAttacks() {
		t.Run(a.name, func(t *testing.T) {
			if a.full && !full {
				t.Skip("a slow compile: runs with CODEFEEDBACK_LANG_FULL=1")
			}
			skipMissing(t, ok, a.lang)
			rep := strings.NewReplacer("{{PORT}}", fmt.Sprint(h.tcpPort), "{{SECRETFILE}}", h.secretFile,
				"{{HOSTDIR}}", h.dir, "{{REPO}}", h.repo)
			lim := a.lim
			if lim == (executors.Limits{}) {
				lim = langAttackLimits
			}
			r := langRun(t, ex, a.lang, rep.Replace(a.code), lim)
			if r.Phase == "compile" {
				t.Fatalf("the attack did not compile: %s", clip(r.Stderr))
			}
			h.checkOutput(t, r)
			if a.check != nil {
				// The check's text may name a placeholder: it sees the
				// output with the host's values put back as placeholders.
				shown := r
				shown.Stdout = strings.NewReplacer(h.secretFile, "{{SECRETFILE}}").Replace(r.Stdout)
				a.check(t, shown)
			}
			h.checkUntouched(t, "")
			checkNextRun(t, ex)
		})
	}
}

// testNodeSession: a javascript session keeps its state across cells (let,
// const, functions, required modules, files), shows a cell's value as node's
// REPL does, reports an error with its type and line and keeps the state,
// and starts fresh after Reset, after a cell that ends node, and after a
// timeout.
//
// A cell's time includes starting node when the session has none (after
// Reset, an exit or a timeout), which took more than 5 s on a loaded
// machine, and a session cell's limit is wall time: cells get 60 s, and
// the endless cell blocks idle (Atomics.wait)
// rather than spinning, so waiting out its timeout costs no CPU.
func testNodeSession(t *testing.T, ex executors.Executor, ok map[executors.Language]bool) {
	skipMissing(t, ok, executors.JavaScript)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := openSession(t, ctx, ex, executors.JavaScript, executors.SessionOptions{Files: map[string][]byte{"in.txt": []byte("seed")},
		// The endless cell is idle: the wall cap ends it.
		Limits: executors.Limits{Timeout: 60 * time.Second, WallTimeout: 60 * time.Second}})
	exec := func(code string) executors.Result {
		t.Helper()
		return execCell(t, ctx, s, code)
	}
	for _, c := range []struct{ code, stdout string }{
		{"const fs = require('fs');\nlet total = 0;\nfunction add(x) { total += x; return total; }\nfs.writeFileSync('out.txt', 'kept');", ""},
		{"[1, 2, 3].forEach(add);\ntotal", "6\n"},
		{"console.log(fs.readFileSync('out.txt', 'utf8'), fs.readFileSync('in.txt', 'utf8'));", "kept seed\n"},
		{"Promise.resolve(total * 7)", "42\n"},
		{"({ a: [1, 'x'] })", "{ a: [ 1, 'x' ] }\n"},
		// None of the runner's files (node's captured output) is in reach;
		// the session's own are under $HOME.
		{"void process.stdout.write(require('child_process').execSync('find /tmp /dev/shm -type f ! -path \"$HOME/*\"').toString())", ""},
	} {
		if r := exec(c.code); r.Stdout != c.stdout || r.ExitCode != 0 {
			t.Errorf("cell %.40q: got stdout %q exit %d stderr %q, want %q", c.code, r.Stdout, r.ExitCode, clip(r.Stderr), c.stdout)
		}
	}
	r := exec("const o = null;\no.x")
	if r.ExitCode != 1 || r.Exception != "TypeError" || r.Line != 2 {
		t.Errorf("error cell: got exit %d exception %q line %d stderr %q, want 1 TypeError line 2", r.ExitCode, r.Exception, r.Line, clip(r.Stderr))
	}
	if r := exec("let b = ;"); r.Exception != "SyntaxError" || r.ExitCode != 1 {
		t.Errorf("syntax error cell: got exception %q exit %d", r.Exception, r.ExitCode)
	}
	if r := exec("total"); r.Stdout != "6\n" {
		t.Errorf("after errors got %q, want the state kept (6)", r.Stdout)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if r := exec("console.log(typeof total, require('fs').existsSync('out.txt'), require('fs').readFileSync('in.txt', 'utf8'))"); r.Stdout != "undefined false seed\n" {
		t.Errorf("after Reset got %q, want fresh state with the session's files", r.Stdout)
	}
	exec("var y = 1;")
	if r := exec("process.exit(3)"); r.ExitCode != 3 {
		t.Errorf("process.exit(3): got exit %d, want 3", r.ExitCode)
	}
	if r := exec("typeof y"); r.Stdout != "'undefined'\n" {
		t.Errorf("after node ended got %q, want a fresh node ('undefined')", r.Stdout)
	}
	exec("var z = 1;")
	if r := exec("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)"); !r.TimedOut {
		t.Errorf("endless cell: got timed out %v exit %d, want a timeout", r.TimedOut, r.ExitCode)
	}
	if r := exec("typeof z"); r.Stdout != "'undefined'\n" {
		t.Errorf("after a timeout got %q, want a restarted session", r.Stdout)
	}
}
