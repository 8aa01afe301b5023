# codefeedback in-sandbox runner: languages beyond python, bash and sql.
#
# This file is prepended to runner.py (executors/protocol.go joins them), so
# its functions may use runner.py's helpers (collect, drain, sweep, ...)
# when they are called; nothing here runs at import time.
#
# A language is a row of LANGS: the source file the code is written to, the
# tools that must be on PATH, an optional compile step and the argv of the
# run. Compiling is a run of its own before the program's: a child in its own
# process group with the request's compile limits (apart from the run's),
# stdout and stderr merged; a failed compile is the run's result (phase
# "compile") and the program never starts. The compiled files come back in
# the answer ("artifact") so the Go side can cache them by source hash and
# send them with a later identical request, which then skips the compiler.
# Compilers are trusted tools fed hostile source: each compile gets the
# run's scratch, and caches (GOCACHE) live there and die with it, so no run
# can poison another run's build.

import re as _re

_TS_SHIM = (
    "declare var process: any;\ndeclare function require(id: string): any;\n"
    "declare var module: any;\ndeclare var exports: any;\ndeclare var __dirname: string;\n"
    "declare var Buffer: any;\n")

# mem: which rlimit bounds memory. "as" (address space) suits native code;
# runtimes that reserve large address ranges up front (V8, the JVM, Go) get
# "data" (RLIMIT_DATA: private writable memory actually mapped).
LANGS = {
    "javascript": {"src": "main.js", "tools": ["node"], "mem": "data",
                   "run": ["node", "--max-old-space-size={heap_mb}", "--stack-size=4000", "main.js"]},
    "typescript": {"src": "main.ts", "tools": ["node", "tsc"], "mem": "data",
                   "compile": ["tsc", "--pretty", "false", "--noEmitOnError", "--target", "es2020",
                               "--module", "commonjs", "--lib", "es2020,dom",
                               "--skipLibCheck", "--outDir", ".", "main.ts", "cf-node.d.ts"],
                   "extra": {"cf-node.d.ts": _TS_SHIM}, "artifact": ["main.js"],
                   "run": ["node", "--max-old-space-size={heap_mb}", "--stack-size=4000", "main.js"]},
    "c": {"src": "main.c", "tools": ["gcc"], "mem": "as",
          "compile": ["gcc", "-std=gnu17", "-O1", "-pipe", "-fdiagnostics-color=never", "-o", "main", "main.c", "-lm"],
          "artifact": ["main"], "run": ["./main"]},
    "cpp": {"src": "main.cpp", "tools": ["g++"], "mem": "as",
            "compile": ["g++", "-std=gnu++17", "-O1", "-pipe", "-fdiagnostics-color=never", "-o", "main", "main.cpp"],
            "artifact": ["main"], "run": ["./main"]},
    "go": {"src": "main.go", "tools": ["go"], "mem": "data",
           "compile": ["go", "build", "-ldflags=-s -w", "-o", "main", "{go_sources}"],
           "artifact": ["main"], "run": ["./main"],
           "env": {"GOCACHE": "{scratch}/.cache/go-build", "GOPATH": "{scratch}/.cache/gopath",
                   "CGO_ENABLED": "0", "GO111MODULE": "off", "GOPROXY": "off", "GOTOOLCHAIN": "local",
                   "GOTELEMETRY": "off", "GOMAXPROCS": "2"}},
    "java": {"src": "Main.java", "tools": ["javac", "java"], "mem": "data",
             "compile": ["javac", "-J-Xmx384m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1",
                         "-proc:none", "-g", "-encoding", "UTF-8", "-nowarn", "-d", "classes", "{java_sources}"],
             "artifact": ["classes/"],
             "run": ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss2m", "-Xmx{java_heap_mb}m",
                     "-XX:ReservedCodeCacheSize=32m", "-XX:CICompilerCount=1",
                     "-XX:MaxMetaspaceSize=128m", "-XX:-UsePerfData", "-cp", "classes", "{java_main}"]},
    "rust": {"src": "main.rs", "tools": ["rustc"], "mem": "as",
             "compile": ["rustc", "--edition", "2021", "-C", "opt-level=1", "-C", "strip=symbols",
                         "--color", "never", "-o", "main", "main.rs"],
             "artifact": ["main"], "run": ["./main"]},
    "ruby": {"src": "main.rb", "tools": ["ruby"], "mem": "data", "run": ["ruby", "main.rb"]},
    "php": {"src": "main.php", "tools": ["php"], "mem": "data",
            "run": ["php", "-n", "-d", "display_errors=stderr", "-d", "memory_limit={heap_mb}M", "main.php"]},
    "lua": {"src": "main.lua", "tools": ["lua5.4"], "mem": "as", "run": ["lua5.4", "main.lua"]},
}

ARTIFACT_MAX = 32 << 20  # larger build outputs are not sent back for caching


def lang_which(tool):
    for d in PATH.split(":"):
        p = os.path.join(d, tool)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def lang_missing(lang):
    """The first tool of lang not on PATH, or None."""
    for tool in LANGS[lang]["tools"]:
        if lang_which(tool) is None:
            return tool
    return None


def lang_list():
    """What this sandbox can run: every language of LANGS with its tools
    and whether they are all present."""
    out = []
    for name in sorted(LANGS):
        miss = lang_missing(name)
        out.append({"lang": name, "available": miss is None, "missing": miss or "",
                    "tools": [lang_which(t) or t for t in LANGS[name]["tools"]]})
    return out


def lang_java_names(code, files):
    """The source file name and the main class of a Java program: the file
    is named after its public top-level class (Main when there is none);
    the main class is CfJudge when the files bring one (the test harness),
    else the class that declares the first main method."""
    # Imports may share the class's line (a prelude that moves no line).
    m = _re.search(r"^\s*(?:import\s[^;]*;\s*)*public\s+(?:(?:final|abstract|sealed|strictfp)\s+)*(?:class|interface|enum|record)\s+(\w+)",
                   code, _re.M)
    src = (m.group(1) if m else "Main") + ".java"
    if "CfJudge.java" in (files or {}) or _re.search(r"^class CfJudge\b", code, _re.M):
        return src, "CfJudge"
    mm = _re.search(r"static\s+(?:final\s+)?(?:public\s+)?void\s+main\s*\(", code)
    main = "Main"
    if mm:
        classes = [c for c in _re.finditer(r"\b(?:class|record|enum|interface)\s+(\w+)", code[:mm.start()])]
        if classes:
            main = classes[-1].group(1)
    elif m:
        main = m.group(1)
    return src, main


def lang_subst(argv, values):
    out = []
    for a in argv:
        if a in ("{java_sources}", "{go_sources}"):
            out.extend(values[a[1:-1]])
            continue
        for k, v in values.items():
            if isinstance(v, str):
                a = a.replace("{" + k + "}", v)
        out.append(a)
    return out


def lang_env(lang, scratch):
    env = child_env(scratch)
    for k, v in (LANGS[lang].get("env") or {}).items():
        env[k] = v.replace("{scratch}", scratch)
    return env


def lang_set_limits(lang, lim, cpu=True):
    """set_limits with the language's memory rlimit (see LANGS' mem)."""
    mem = lim.get("memory_bytes")
    rest = dict(lim)
    rest["memory_bytes"] = 0
    set_limits(rest, cpu=cpu)
    if mem and mem > 0:
        res = resource.RLIMIT_AS if LANGS[lang]["mem"] == "as" else resource.RLIMIT_DATA
        if res == resource.RLIMIT_AS:
            mem = address_space(lim)  # runner.py: relaxed where the memory cgroup holds
        try:
            resource.setrlimit(res, (mem, mem))
        except (ValueError, OSError):
            pass


def lang_values(req, scratch):
    lim = req.get("limits") or {}
    mem = int(lim.get("memory_bytes") or (512 << 20))
    v = {"heap_mb": str(max(32, mem * 3 // 4 >> 20)), "java_heap_mb": str(max(32, mem // 2 >> 20)), "scratch": scratch}
    if req.get("lang") == "go":
        v["go_sources"] = ["main.go"] + sorted(n for n in (req.get("files") or {})
                                               if n.endswith(".go") and "/" not in n and n != "main.go")
    if req.get("lang") == "java":
        src, main = lang_java_names(req.get("code", ""), req.get("files"))
        v["java_main"] = main
        srcs = [src] + sorted(n for n in (req.get("files") or {}) if n.endswith(".java") and n != src)
        v["java_sources"] = srcs
    return v


def lang_source_name(req):
    if req.get("lang") == "java":
        return lang_java_names(req.get("code", ""), req.get("files"))[0]
    return LANGS[req["lang"]]["src"]


def lang_read_artifact(scratch, spec):
    """The build outputs named by spec (files, or directories ending in /)
    as {relative path: base64}; None when they are missing or too large."""
    out, total = {}, 0
    for name in spec:
        path = os.path.join(scratch, name.rstrip("/"))
        paths = []
        if name.endswith("/"):
            for d, _, fs in os.walk(path):
                paths.extend(os.path.join(d, f) for f in fs)
        else:
            paths.append(path)
        for p in paths:
            try:
                with open(p, "rb") as f:
                    data = f.read(ARTIFACT_MAX + 1)
            except OSError:
                return None
            total += len(data)
            if total > ARTIFACT_MAX:
                return None
            out[os.path.relpath(p, scratch)] = base64.b64encode(data).decode()
    return out


def lang_compile_child(lang, argv, scratch, lim, w):
    try:
        os.setsid()
        set_dumpable(1)
        prefer_oom_kill()
        reset_signals(False)
        fd = os.open("/dev/null", os.O_RDONLY)
        os.dup2(fd, 0)
        os.dup2(w, 1)
        os.dup2(w, 2)
        os.closerange(3, 1 << 16)
        os.chdir(scratch)
        env = lang_env(lang, scratch)
        os.umask(0o077)
        lang_set_limits(lang, lim)
        exe = lang_which(argv[0]) or argv[0]
        os.execve(exe, argv, env)
    except BaseException as e:
        try:
            os.write(2, ("runner: compiling: %s: %s\n" % (type(e).__name__, e)).encode())
        except BaseException:
            pass
    os._exit(127)


def lang_compile(lang, argv, scratch, lim):
    """Runs the compiler; returns (exit_code, signal, timed_out, output, truncated, seconds)."""
    cap = int(lim.get("output_bytes") or 65536)
    timeout = float(lim.get("timeout_seconds") or 60)
    wall = max(float(lim.get("wall_seconds") or 0), timeout)
    r, w = os.pipe()
    start = time.monotonic()
    # The compile's time limit counts CPU time too (RunWatch), with the
    # wall clock as a cap: a loaded machine must not fail a compile.
    watch = RunWatch({}, start, timeout)
    pid = os.fork()
    if pid == 0:
        lang_compile_child(lang, argv, scratch, lim, w)
    os.close(w)
    pidfd = os.pidfd_open(pid)
    bufs, trunc, exited, open_fds, _ = collect([r], cap, start + wall, pidfd, watch)
    if not exited:
        sigkill(-pid, pid)  # runner.py
    _, status = os.waitpid(pid, 0)
    seconds = time.monotonic() - start
    os.close(pidfd)
    sigkill(-pid)  # runner.py
    sweep(pid)
    drain(list(open_fds), bufs, trunc, cap, time.monotonic() + 0.5)
    os.close(r)
    sig = ""
    if os.WIFSIGNALED(status):
        sig = signame(os.WTERMSIG(status))
        rc = 128 + os.WTERMSIG(status)
    else:
        rc = os.WEXITSTATUS(status)
    return rc, sig, not exited, decode(bytes(bufs[r]), cap, trunc[r]), trunc[r], seconds


def lang_prepare(req, scratch):
    """Writes the program, and compiles it unless the request brings its
    compiled artifact. Returns {"argv", "env", "info"} for the run, or
    {"result": ...} when there is nothing to run (a failed compile), or
    {"error": ...} when the sandbox lacks the toolchain."""
    lang = req["lang"]
    spec = LANGS[lang]
    miss = lang_missing(lang)
    if miss:
        return {"error": "no %s toolchain in this sandbox: %s not found on PATH" % (lang, miss), "missing": True}
    values = lang_values(req, scratch)
    src = lang_source_name(req)
    with open(os.path.join(scratch, src), "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(req.get("code", ""))
    extra = []  # the runner's files for the compiler, not the program's
    for name, text in (spec.get("extra") or {}).items():
        path = os.path.join(scratch, name)
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(text)
            extra.append(path)
    info = {}
    if spec.get("compile"):
        art = req.get("artifact")
        if art:
            write_files(scratch, art)
            for name in art:
                os.chmod(os.path.join(scratch, name), 0o700)
            info["compile_cached"] = True
        else:
            clim = req.get("compile_limits") or req.get("limits") or {}
            argv = lang_subst(spec["compile"], values)
            if lang in ("c", "cpp") and _re.search(r"^\s*#\s*line\s", req.get("code", ""), _re.M):
                # Under #line, gcc would quote the real file's line of the
                # mapped number: the wrong source text under each error.
                argv.insert(1, "-fno-diagnostics-show-caret")
            rc, sig, timed_out, out, trunc, secs = lang_compile(lang, argv, scratch, clim)
            info["compile_ns"] = int(secs * 1e9)
            if rc != 0 or timed_out:
                res = {"exit_code": rc, "signal": sig, "timed_out": timed_out, "killed": bool(sig) or timed_out,
                       "oom": False, "duration_ns": 0, "stdout": "", "stderr": out,
                       "stdout_truncated": False, "stderr_truncated": trunc, "phase": "compile"}
                if rc != 0 and not timed_out and any(h.decode() in out[-4096:] for h in OOM_HINTS):
                    res["oom"] = True
                res.update(info)
                return {"result": res}
            got = lang_read_artifact(scratch, spec.get("artifact") or [])
            if got is not None:
                info["artifact"] = got
        remove_tree(os.path.join(scratch, ".cache"))
    for path in extra:
        try:
            os.unlink(path)
        except OSError:
            pass
    return {"argv": lang_subst(spec["run"], values), "env": lang_env(lang, scratch), "info": info}


def lang_exec(req, plan):
    """In the run's child: limits, then exec the program."""
    lang_set_limits(req["lang"], req.get("limits") or {})
    argv = plan["argv"]
    exe = argv[0] if argv[0].startswith("./") else (lang_which(argv[0]) or argv[0])
    os.execve(exe, argv, plan["env"])


# ------------------------------------------------------------ node sessions
#
# A javascript session is one node process for the session's life: cells
# arrive as JSON lines on its stdin and run as scripts in its one global
# context (so `let`, `const`, functions and `require`d modules persist, as in
# node's REPL); a cell's completion value is printed like the REPL prints it
# (a promise is awaited first); an uncaught error prints its stack and makes
# the cell's exit status 1. Node writes straight into the session's capture
# files (fd 1 and 2) and answers each cell on fd 3. A cell that ends the
# process (process.exit, a crash) reports its status; the next cell starts a
# fresh node, its state lost.
#
# The cells share the kernel's process, so no cell may change how a later
# cell's status is made or reported. The kernel takes every function it
# uses (running a script, settling a promise, JSON, writing, HMAC) before
# the first cell, as locals of its closure: a cell that patches
# vm.Script.prototype, Promise.prototype.then or constructor, JSON or fs
# changes what cells call, not the kernel. It waits on a promise through
# the original then (no await: await reads the promise's patchable
# constructor). Each answer quotes the cell's nonce and carries an HMAC
# under a key the kernel drew at start and sent before any cell ran, so a
# cell that writes into fd 3, or reads a later request off stdin, cannot
# answer for a later cell; the runner drops such lines. Requests carry an
# HMAC under a second key, so a cell that calls the kernel's stdin listener
# (any listener is reachable) cannot have other code run under a later
# cell's nonce. The kernel is strict code (a stack trace's call sites give
# no function of it), replaces by refusals the module members and process
# methods that reach a closure from inside (inspector, workers, loader
# threads, v8's snapshots and flags, bindings, addons),
# keeps SIGUSR1 from opening the inspector's port, and starts from an
# execute-only binary, so no process the cell starts can read its memory.

NODE_KERNEL = r"""
(() => {
'use strict';
const vm = require('vm'), util = require('util'), fs = require('fs'), crypto = require('crypto');
const Module = require('module');
const Script = vm.Script, run = vm.Script.prototype.runInThisContext, apply = Reflect.apply;
const writeSync = fs.writeSync, parse = JSON.parse, inspect = util.inspect, isPromise = util.types.isPromise;
const then = Promise.prototype.then, hmacOf = crypto.createHmac, String_ = String, Error_ = Error;
const update = crypto.Hmac.prototype.update, digest = crypto.Hmac.prototype.digest;
const split = String.prototype.split, slice = String.prototype.slice, indexOf = String.prototype.indexOf;
const findIndex = Array.prototype.findIndex, join = Array.prototype.join, test = RegExp.prototype.test;
const shift = Array.prototype.shift, push = Array.prototype.push;
const Set_ = Set, has = Set.prototype.has, add = Set.prototype.add;
const defineProperty = Object.defineProperty;
// Two keys, drawn before any cell and sent to the runner, then dropped as
// text: one signs answers, one tags requests (so a cell that calls the
// kernel's stdin listener cannot have a request of its own run).
const sent = [];
const keyOf = () => {
  const raw = crypto.randomBytes(32);
  apply(push, sent, [raw.toString('hex')]);
  const k = crypto.createSecretKey(raw);
  raw.fill(0);
  return k;
};
const key = keyOf(), reqKey = keyOf();
const mac = (k, text) => {
  try {
    const h = hmacOf('sha256', k);
    apply(update, h, [text]);
    return apply(digest, h, ['hex']);
  } catch (_) { return ''; }
};
// What could read this closure from inside the process: the inspector
// (also a worker's or a loader thread's connection to this thread), v8's
// flags and snapshots, native bindings and addons, SIGUSR1 (which opens
// the inspector's port). Builtin modules are one object however they are
// loaded (require, require(esm), import() through any loader), so their
// dangerous members are replaced here, before any cell, by refusals.
const refuse = (what) => function () { throw new Error_(what + ' is not available in a session cell: it could read the session kernel'); };
const poison = (id, names) => {
  let m;
  try { m = require(id); } catch (_) { return; } // not in this node
  for (const name of names || Object.keys(m)) {
    if (typeof m[name] === 'function') {
      defineProperty(m, name, { __proto__: null, configurable: false, writable: false, enumerable: true, value: refuse(id + '.' + name) });
    }
  }
};
poison('inspector');
poison('inspector/promises');
poison('worker_threads', ['Worker']);
poison('v8', ['setFlagsFromString', 'getHeapSnapshot', 'writeHeapSnapshot', 'setHeapSnapshotNearHeapLimit',
  'takeCoverage', 'stopCoverage', 'queryObjects']);
poison('trace_events', ['createTracing']);
poison('module', ['register']);
if (typeof Module.syncBuiltinESMExports === 'function') Module.syncBuiltinESMExports();
for (const name of ['binding', '_linkedBinding', 'dlopen', '_debugProcess', '_debugEnd']) {
  defineProperty(process, name, { __proto__: null, configurable: false, writable: false, value: refuse('process.' + name) });
}
process.on('SIGUSR1', () => {});
Object.assign(globalThis, { require, module, exports, __filename: '', __dirname: process.cwd() });
const kernelFrame = /^\s+at (?:Script\.runInThisContext|new Script) /, ownFrame = /\[eval\]:\d/;
const filter = Array.prototype.filter, sliceArray = Array.prototype.slice;
// The kernel's own frames (below the cell's script, and its refusals above
// it) are noise in a trace.
const trace = (e) => {
  if (!(e && e.stack)) return 'Uncaught ' + inspect(e);
  const lines = apply(split, String_(e.stack), ['\n']);
  const cut = apply(findIndex, lines, [(l) => apply(test, kernelFrame, [l])]);
  const cell = cut > 0 ? apply(sliceArray, lines, [0, cut]) : lines;
  return apply(join, apply(filter, cell, [(l) => !apply(test, ownFrame, [l])]), ['\n']);
};
const report = (e) => { try { writeSync(2, trace(e) + '\n'); } catch (_) {} };
process.on('uncaughtException', report);
process.on('unhandledRejection', report);
const answer = (nonce, rc) => {
  const m = mac(key, nonce + ' ' + rc);
  for (;;) {
    try { writeSync(3, nonce + ' ' + rc + ' ' + m + '\n'); return; } catch (_) {}
  }
};
let n = 0, buf = '', busy = false;
const queue = [], seen = new Set_();
const next = () => {
  if (busy || queue.length === 0) return;
  busy = true;
  const req = apply(shift, queue, []);
  n++;
  const done = (rc, v, shown) => {
    if (shown) {
      try { if (v !== undefined) writeSync(1, inspect(v) + '\n'); } catch (e) { rc = 1; report(e); }
    }
    answer(req.nonce, rc);
    busy = false;
    next();
  };
  let v;
  try {
    v = apply(run, new Script(req.code, { __proto__: null, filename: 'cell-' + n + '.js' }), [{ __proto__: null, displayErrors: false }]);
  } catch (e) {
    report(e);
    return done(1, undefined, false);
  }
  if (!isPromise(v)) return done(0, v, true);
  try {
    apply(then, v, [(r) => done(0, r, true), (e) => { report(e); done(1, undefined, false); }]);
  } catch (e) {
    report(e);
    done(1, undefined, false);
  }
};
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  for (let i; (i = apply(indexOf, buf, ['\n'])) >= 0; ) {
    let req;
    try { req = parse(apply(slice, buf, [0, i])); } catch (_) { req = null; }
    buf = apply(slice, buf, [i + 1]);
    if (req === null || typeof req !== 'object') continue;
    const code = String_(req.code), nonce = String_(req.nonce);
    // Only the runner's requests run, each once.
    if (String_(req.tag) !== mac(reqKey, nonce + '\n' + code) || apply(has, seen, [nonce])) continue;
    apply(add, seen, [nonce]);
    apply(push, queue, [{ code, nonce }]);
  }
  next();
});
writeSync(3, 'key ' + apply(join, sent, [' ']) + '\n');
sent.length = 0;
})();
"""


# NODE_KERNEL_EXE is node's binary without read permission (the driver
# binds it in, or the image has it): execve of a file the process cannot
# read leaves it not dumpable, so no same-uid process the cell starts can
# open its /proc/PID/mem (node cannot make itself so, as the python kernel
# does with prctl).
NODE_KERNEL_EXE = "/opt/codefeedback/node"


def node_kernel_exe():
    try:
        st = os.stat(NODE_KERNEL_EXE)
    except OSError:
        raise RuntimeError("javascript sessions need an execute-only copy of node at %s, which this sandbox "
                           "lacks (the bwrap driver binds one in; the docker image has one from `make sandbox-image`)"
                           % NODE_KERNEL_EXE)
    if st.st_mode & 0o444 or os.access(NODE_KERNEL_EXE, os.R_OK):
        raise RuntimeError("%s is readable: a session kernel started from it could be read by the cells' processes"
                           % NODE_KERNEL_EXE)
    return NODE_KERNEL_EXE


def node_session_start(sess):
    miss = lang_missing("javascript")
    if miss:
        raise RuntimeError("no javascript toolchain in this sandbox: %s not found on PATH" % miss)
    sess.open_capture()  # runner.py: node inherits fds 1 and 2
    values = lang_values({"lang": "javascript", "limits": sess.limits}, sess.scratch)
    argv = ["node", "--max-old-space-size=" + values["heap_mb"], "--stack-size=4000", "-e", NODE_KERNEL]
    exe = node_kernel_exe()
    cmd_r, cmd_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            reset_signals(False)
            prefer_oom_kill()
            os.dup2(cmd_r, 0)
            os.dup2(sess.out, 1)
            os.dup2(sess.err, 2)
            os.dup2(rep_w, 3)
            os.closerange(4, 1 << 16)
            os.execve(exe, argv, dict(os.environ))
        finally:
            os._exit(127)
    os.close(cmd_r)
    os.close(rep_w)
    WATCHED.add(pid)  # runner.py: reap() keeps its status (kernel_wait)
    rep = os.fdopen(rep_r, "rb")
    # The kernel's first line, before any cell ran: its HMAC key.
    line = rep.readline(256)
    if not line.startswith(b"key ") or len(line.split()) != 3:
        rep.close()
        os.close(cmd_w)
        sigkill(-pid)  # runner.py
        kernel_wait(pid)  # runner.py
        raise RuntimeError("the node session kernel did not start")
    keys = line.split()
    try:
        # The kernel must not be dumpable: a process the cell leaves behind
        # could otherwise read the keys through /proc/PID/mem.
        os.close(os.open("/proc/%d/mem" % pid, os.O_RDONLY))
        dumpable = True
    except OSError:
        dumpable = False
    if dumpable:
        rep.close()
        os.close(cmd_w)
        sigkill(-pid)  # runner.py
        kernel_wait(pid)  # runner.py
        raise RuntimeError("the node session kernel is dumpable (%s is readable?): refused" % exe)
    sess.node = (pid, cmd_w, rep, bytes.fromhex(keys[1].decode()), bytes.fromhex(keys[2].decode()))
    node_pause(pid)


def node_session_stop(sess):
    node = getattr(sess, "node", None)
    sess.node = None
    if node is None:
        return
    pid, cmd_w, rep = node[:3]
    for close in (lambda: os.close(cmd_w), rep.close):
        try:
            close()
        except OSError:
            pass
    sigkill(-pid)  # runner.py
    kernel_wait(pid)  # runner.py


def node_pause(pid):
    """Between cells the kernel is stopped (SIGSTOP; SIGCONT when the next
    cell is sent): what a cell left on its event loop (a timer, a busy
    interval) uses no CPU that no cell's limit counts, and cannot end the
    kernel between cells. It runs again only during a later cell, whose
    CPU time it then counts in."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass


def node_session_cell(sess, code):
    """Runs one cell; returns (exit_code, signal, whether the kernel
    ended during it: the cell is then reported killed, never ok, whatever
    its exit status, as a python kernel that ends during a cell is)."""
    if getattr(sess, "node", None) is None:
        node_session_start(sess)
    import hashlib
    import hmac
    pid, cmd_w, rep, key, req_key = sess.node
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    nonce = os.urandom(16).hex()
    tag = hmac.new(req_key, (nonce + "\n" + code).encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    try:
        os.write(cmd_w, (json.dumps({"code": code, "nonce": nonce, "tag": tag}) + "\n").encode())
    except OSError:
        pass
    # The answer is the line with this cell's nonce and a valid HMAC;
    # anything else a cell wrote into fd 3 is dropped.
    while True:
        try:
            line = rep.readline(8192)
        except OSError:
            line = b""
        if not line:
            break
        parts = line.split()
        if len(parts) != 3 or parts[0] != nonce.encode() or not parts[1].isdigit():
            continue
        want = hmac.new(key, parts[0] + b" " + parts[1], hashlib.sha256).hexdigest().encode()
        if hmac.compare_digest(want, parts[2]):
            node_pause(pid)
            return int(parts[1]), "", False
    # Node ended during the cell (process.reallyExit(0) in a listener an
    # earlier cell placed before the kernel's, say): its status is the
    # cell's, and the cell was killed, not ok.
    sigkill(-pid, pid)  # runner.py
    status = kernel_wait(pid)  # runner.py
    sess.node = None
    for close in (lambda: os.close(cmd_w), rep.close):
        try:
            close()
        except OSError:
            pass
    if not cell_over():  # runner.py: else the cell's note names the limit
        sess.se.write("[session: the node process ended during the cell; the next cell starts a fresh one]\n")
        sess.se.flush()
    if status is None:
        return 128 + signal.SIGKILL, "SIGKILL", True
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status), signame(os.WTERMSIG(status)), True
    return os.WEXITSTATUS(status), "", True
