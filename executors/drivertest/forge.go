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
// `assert 1 == 2`, which must still end with exit status 1. Each step is
// tried on its own: the sandbox refuses some (gc's walks, signal handlers,
// audit hooks, trace functions, os.fork), and the rest must not help.
var forgeries = []struct{ name, cell string }{
	{"runner objects through gc", `
import gc, sys
n = 0
fake = lambda *a, **k: (0, "", False)
try:
    objs = gc.get_objects()
except Exception as e:
    objs = []
    print("refused:", e)
for o in objs:
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
print("patched", n)`},
	{"sys.modules, builtins, exit functions", `
import builtins, marshal, os, sys, traceback
real = os._exit
os._exit = lambda code=0: real(0)
sys.exit = builtins.exit = builtins.quit = lambda *a: real(0)
builtins.exec = builtins.eval = lambda *a, **k: None
real_compile = compile
builtins.compile = lambda *a, **k: real_compile("pass", "<x>", "exec")
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
    try:
        signal.signal(s, lambda *a: sys.exit(0))
    except Exception as e:
        print("refused:", e)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
os.kill(os.getpid(), signal.SIGUSR1)  # pending until a later cell unblocks it
print("patched")`},
	{"audit hook and trace functions", `
import os, signal, sys, threading
armed = False
def hook(event, args):
    if armed and event in ("exec", "compile", "marshal.loads", "sys.settrace", "sys.setprofile"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
        raise SystemExit(0)
def tracer(frame, event, arg):
    raise SystemExit(0)
for step in (lambda: signal.signal(signal.SIGUSR1, lambda *a: sys.exit(0)),
             lambda: sys.addaudithook(hook), lambda: threading.settrace(tracer),
             lambda: sys.settrace(tracer), lambda: sys.setprofile(lambda *a: None)):
    try:
        step()
    except Exception as e:
        print("refused:", e)
print("patched")
armed = True`},
	{"print wrapped to answer from the kernel loop's frame", `
import builtins, os, sys
real_print = builtins.print
def answer():
    # Every 16-byte value on the stack might be the cell's nonce: answer
    # "0" with each, in every form, on every descriptor.
    f = sys._getframe()
    while f is not None:
        for v in list(f.f_locals.values()):
            if isinstance(v, bytes) and len(v) == 16:
                for msg in (v.hex().encode() + b" 0\n", b"R 0", b"E" + v):
                    for fd in range(3, 64):
                        try:
                            os.write(fd, msg)
                        except OSError:
                            pass
        f = f.f_back
    for fd in range(3, 64):
        try:
            os.write(fd, b"R 0")
        except OSError:
            pass
def forged(*a, **k):
    answer()
    return real_print(*a, **k)
builtins.print = forged
sys.stderr.write = lambda s, w=sys.stderr.write: (answer(), w(s))[1]
real_print("patched")`},
	{"the kernel's frames, a new interpreter, ctypes, code objects", `
import sys
for name, step in (("current frames", lambda: sys._current_frames()),
                   ("new interpreter", lambda: __import__("_xxsubinterpreters").create()),
                   ("ctypes", lambda: __import__("ctypes").pythonapi),
                   ("new code", lambda: (lambda: 0).__code__.replace(co_consts=(1,))),
                   ("process memory", lambda: open("/proc/self/mem", "rb"))):
    try:
        step()
        print("allowed:", name)
    except Exception as e:
        print("refused:", name, type(e).__name__)
print("patched")`},
	{"the kernel interpreter's exception class patched", `
def walk(c, seen):
    for s in type.__subclasses__(c):
        if s not in seen:
            seen.add(s)
            walk(s, seen)
    return seen
n = 0
for c in walk(BaseException, set()):
    if c.__name__ == "RunFailedError":
        try:
            c.__init__ = lambda self, *a: None
            n += 1
        except Exception:
            pass
print("patched", n)`},
	{"a thread left to answer later", `
import os, threading, time
def spray():
    while True:
        for fd in range(3, 64):
            try:
                os.write(fd, b"R 0")
            except OSError:
                pass
        time.sleep(0.001)
threading.Thread(target=spray, daemon=True).start()
print("patched")`},
	{"writes into every descriptor", `
import os, subprocess, sys
line = b'{"id": %d, "exit_code": 0, "stdout": "", "stderr": "", "ok": true}\n'
zeros = b"".join(b"%032x 0\n" % i for i in range(64)) + b"R 0"
def spray():
    for fd in range(3, 1024):
        for i in range(1, 12):
            try:
                os.write(fd, line % i)
                os.write(fd, zeros)
            except OSError:
                break
spray()
# and again while the next cell runs, from a process holding every descriptor
fds = [fd for fd in range(3, 1024) if os.path.exists("/proc/self/fd/%d" % fd)]
subprocess.Popen([sys.executable, "-c", """
import os, time
for _ in range(100):
    for fd in range(3, 1024):
        try:
            os.write(fd, b"R 0")
        except OSError:
            pass
    time.sleep(0.01)
"""], pass_fds=fds, start_new_session=True)
print("patched")`},
	// Reads the key out of the kernel's memory, then signs an exit status 0
	// for the next cell from its stub (a wrapped __import__): the cell's
	// request (__cf_b) is in the namespace until the driver takes it, and
	// the key is whichever 32-byte bytes object makes its tag. The ways in
	// are /proc/PID/mem (the kernel is not dumpable: its file is root's, and
	// the hook refuses it too) and an extension module the cell builds with
	// the sandbox's gcc (where it has Python's headers: bwrap's /usr). A
	// link to mem another process swaps in between the hook's check and the
	// open, or one opened through dir_fd, is not tried: only dumpability
	// stops those (docs/sandbox.md).
	{"the kernel's memory read, the key found, a status signed", `
import builtins, os, struct, subprocess, sys
import _hashlib
mac = _hashlib.hmac_digest
state = {}
PEEK = r"""
#include <Python.h>
static PyObject *peek(PyObject *self, PyObject *args) {
    unsigned long long at; Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Kn", &at, &n)) return NULL;
    return PyBytes_FromStringAndSize((const char *)at, n);
}
static PyMethodDef methods[] = {{"peek", peek, METH_VARARGS, ""}, {NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "peek", NULL, -1, methods};
PyMODINIT_FUNC PyInit_peek(void) { return PyModule_Create(&def); }
"""
def built():
    open("peek.c", "w").write(PEEK)
    subprocess.run(["gcc", "-shared", "-fPIC", "-I/usr/include/python3.11", "-o", "peek.so", "peek.c"], check=True,
                   capture_output=True)
    return __import__("peek").peek
def through(path):
    fd = os.open(path, os.O_RDONLY)
    return lambda at, n: os.pread(fd, n, at)
steps = (("a link made here", lambda: os.symlink("/proc/self/mem", "m1") or through("m1")),
         ("a link another process made", lambda: subprocess.run(["ln", "-s", "/proc/%d/mem" % os.getpid(), "m2"], check=True) and through("m2")),
         ("a path object", lambda: through(__import__("pathlib").Path("/proc/self/mem"))),
         ("an extension module built here", built))
for name, step in steps:
    try:
        state["read"] = step()
        print("allowed:", name)
        break
    except Exception as e:
        print("refused:", name, type(e).__name__)

def bytes_objects(read, sizes):
    # A bytes object: refcount, type, size, hash, then its bytes.
    head = {struct.pack("<Qq", id(bytes), n): n for n in sizes}
    found = {n: set() for n in sizes}
    for line in open("/proc/self/maps"):
        span, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        lo, hi = (int(x, 16) for x in span.split("-"))
        try:
            data = read(lo, hi - lo)
        except OSError:
            continue
        for pat, n in head.items():
            i = data.find(pat)
            while i >= 0:
                found[n].add(data[i + 24:i + 24 + n])
                i = data.find(pat, i + 1)
    return found

def sign():
    g = sys.modules["__main__"].__dict__
    blob = g.get("__cf_b")
    if "read" not in state or not isinstance(blob, bytes) or state.get("done") == blob:
        return
    state["done"] = blob
    # The request as the loop passes it: a counter (8 bytes), the kind, the
    # status socket (2 bytes), the marshalled cell, its tag.
    kind, fd = blob[8:9], int.from_bytes(blob[9:11], "big")
    found = bytes_objects(state["read"], (16, 32))
    for body in (blob[11:-32],):
        for key in found[32]:
            for nonce in found[16]:
                if mac(key, nonce + kind + body, "sha256") in found[32]:
                    os.write(fd, b"R 0")
                    os.write(fd, b"E" + nonce + mac(key, b"E" + nonce, "sha256"))
                    return

real_import = builtins.__import__
def forged(*a, **k):
    try:
        sign()
    except Exception:
        pass
    return real_import(*a, **k)
builtins.__import__ = forged
print("patched")`},
	// The stub reads the loop's request, the driver and the functions it
	// runs them with from the cells' namespace, and a cell's code runs
	// before it has them all (a wrapped __import__; a key of the namespace
	// that is a str subclass runs its __eq__ at every lookup). Each of the
	// three below made the failing cell after it end with exit 0 against
	// the kernel before the hook vouched for the stub's and the driver's
	// tools by identity and for the request by its tag and counter.
	{"the next request swapped in the namespace", `
import builtins, marshal, sys
real_import = builtins.__import__
def forged(*a, **k):
    g = sys.modules["__main__"].__dict__
    b = g.get("__cf_b")
    if isinstance(b, bytes) and g.get("__cf_swapped") is not b:
        if "__cf_k" in g:  # the request as marshal data, then its tag
            b = marshal.dumps(("<cell>", "pass"))
        else:  # a counter, the kind, the status socket, the marshal data, the tag: the same but the cell
            b = b[:11] + marshal.dumps(("<cell>", "pass")) + b[-32:]
        g["__cf_b"] = g["__cf_swapped"] = b
    return real_import(*a, **k)
builtins.__import__ = forged
print("patched")`},
	{"another module's loads under marshal's name", `
import builtins, pickle, sys, types
import _pickle
_pickle.__name__ = "marshal"  # _pickle.loads passes a check by name and module name
def status_fd(g):
    if isinstance(g.get("__cf_f"), int):
        return g["__cf_f"]
    return int.from_bytes(g["__cf_b"][9:11], "big")  # the request's header
real_import = builtins.__import__
def forged(name, *a, **k):
    g = sys.modules["__main__"].__dict__
    if name == "marshal" and "__cf_D" in g:
        g["__cf_D"] = pickle.dumps("import os\nos.write(%d, b'R 0')\n" % status_fd(g))
        return types.SimpleNamespace(loads=_pickle.loads)
    return real_import(name, *a, **k)
builtins.__import__ = forged
print("patched")`},
	{"marshalled source for the driver", `
import builtins, marshal, sys
def status_fd(g):
    if isinstance(g.get("__cf_f"), int):
        return g["__cf_f"]
    return int.from_bytes(g["__cf_b"][9:11], "big")  # the request's header
real_import = builtins.__import__
def forged(name, *a, **k):
    g = sys.modules["__main__"].__dict__
    if name == "marshal" and "__cf_D" in g:
        g["__cf_D"] = marshal.dumps("import os\nos.write(%d, b'R 0')\n" % status_fd(g))
    return real_import(name, *a, **k)
builtins.__import__ = forged
print("patched")`},
	// A finalizer runs at any allocation (the threshold of 1 makes it every
	// one). This one plants, in the globals of the driver's module code
	// while it makes its function, a key that answers for "_cell" at the
	// call: with 0d1175f the failing cell after it ended with exit 0. The
	// stub now execs the driver function's code itself, with no name
	// between them.
	{"a finalizer's key that answers for the driver's name", `
import gc, os, sys
class K(str):
    calls, armed = [0], [False]
    def __hash__(self):
        return str.__hash__(self)
    def __eq__(self, o):
        K.calls[0] += 1
        return K.armed[0] and K.calls[0] > 1  # not when the name is stored, when it is looked up
def forged(*a, **k):
    g = sys.modules["__main__"].__dict__
    fd = g.get("__cf_f")
    if not isinstance(fd, int) and isinstance(g.get("__cf_b"), bytes):
        fd = int.from_bytes(g["__cf_b"][9:11], "big")
    if isinstance(fd, int):
        os.write(fd, b"R 0")
class Again:
    def __del__(self):
        try:
            f = sys._getframe()
            while f is not None:
                if f.f_code.co_filename == "<kernel>" and f.f_code.co_name == "<module>":
                    if not any(type(k) is K for k in f.f_globals):
                        K.armed[0] = False
                        f.f_globals[K("_cell")] = forged
                        K.calls[0] = 0
                        K.armed[0] = True
                    break
                f = f.f_back
        finally:
            x = Again()
            x.self = x
x = Again()
x.self = x
del x
gc.set_threshold(1, 1000000, 1000000)
print("patched")`},
	// A key of the namespace that answers for the status socket's name:
	// the driver writes its status to /dev/null while the key's __eq__
	// writes one of its own. It forged with this round's first commits,
	// where the driver took the socket from the namespace; the socket now
	// comes in the request the hook vouched for.
	{"a namespace key that answers for the status socket", `
import os, sys
class K(str):
    def __hash__(self):
        return str.__hash__(self)
    def __eq__(self, o):
        for k, v in list(sys.modules["__main__"].__dict__.items()):
            if type(k) is str and k == "__cf_f" and type(v) is int:
                os.write(v, b"R 0")
                return True
        return False
sys.modules["__main__"].__dict__[K("__cf_f")] = os.open("/dev/null", os.O_WRONLY)
print("patched")`},
	// A key of the namespace that answers for "exec", which the stub looks
	// up before the driver runs: at the next cell's lookup its __eq__
	// writes a status and raises. The stub's bare except swallowed that,
	// no driver wrote a status, and the runner took the key's: with the
	// runner of ae0dbac the failing cell after it ended with exit 0 on
	// bwrap. The stub's except clause now has the hook add a message that
	// is no status.
	{"a namespace key that writes a status and stops the stub", `
import os, sys
class K(str):
    fired = [False]
    def __hash__(self):
        return str.__hash__(self)
    def __eq__(self, o):
        b = dict.get(sys.modules["__main__"].__dict__, "__cf_b")
        if not K.fired[0] and type(b) is bytes and len(b) > 11:
            K.fired[0] = True
            os.write(int.from_bytes(b[9:11], "big"), b"R 0")  # the request's header names the status socket
            raise LookupError("the stub stops here")
        return str.__eq__(self, o)
sys.modules["__main__"].__dict__[K("exec")] = exec
print("patched")`},
	// The stub runs the driver's code object from the namespace, where the
	// subinterpreter's setup put it: this one is a function of the cell's
	// that writes a status. The hook vouches for the stub's by identity
	// (with that check left out of a scratch copy of the runner, both
	// failing cells after it ended with exit 0 on bwrap).
	{"the driver's code object swapped in the namespace", `
def forged():
    g = __import__("sys")._getframe(1).f_globals
    __import__("os").write(int.from_bytes(g["__cf_b"][9:11], "big"), b"R 0")
__cf_C = forged.__code__
print("patched")`},
	// The collector runs finalizers at any allocation of a tracked object:
	// one collected while the hook checks marshal data (has_code loads it)
	// walks up to the hook's frame and reads the second key from vouch's
	// closure, and a wrapped __import__ (the driver imports sys before it
	// takes the request) then swaps the next request for "pass" under a
	// tag of its own. With the runner of ae0dbac the failing cell after it
	// ended with exit 0 on bwrap; the hook now checks with the collector off.
	{"the hook's key read by a finalizer it runs", `
import builtins, gc, hmac, marshal, sys
keys = []
class Trap:
    def __del__(self):
        f = sys._getframe()
        while f is not None:
            for v in list(f.f_locals.values()) if f.f_code.co_name == "hook" else ():
                for c in (v.__closure__ or ()) if type(v) is type(Trap.__del__) else ():
                    try:
                        x = c.cell_contents
                    except ValueError:
                        continue
                    if type(x) is bytes and len(x) == 32:
                        keys.append(x)
            f = f.f_back
def arm():
    t = Trap()
    t.self = t
payload = marshal.dumps([[i] for i in range(2000)])
for i in range(50):
    gc.collect()
    gc.set_threshold(200, 100000, 100000)
    arm()
    try:
        marshal.loads(payload)
    except Exception:
        pass
    if keys:
        break
gc.set_threshold(700, 10, 10)
real_import, busy = builtins.__import__, [False]
def forged(*a, **k):
    g = sys.modules["__main__"].__dict__
    b = g.get("__cf_b")
    if keys and not busy[0] and type(b) is bytes and len(b) > 43 and g.get("__cf_swapped") is not b:
        busy[0] = True
        try:
            for key in keys:
                if hmac.new(key, b[:-32], "sha256").digest() == b[-32:]:
                    n = b[:11] + marshal.dumps(("<cell>", "pass"))
                    n = (int.from_bytes(b[:8], "big") + 1).to_bytes(8, "big") + n[8:]
                    g["__cf_b"] = g["__cf_swapped"] = n + hmac.new(key, n, "sha256").digest()
                    break
        finally:
            busy[0] = False
    return real_import(*a, **k)
builtins.__import__ = forged
print("patched")`},
}

// bashForgeries are bash session cells that try to make a later cell's
// exit status 0: they redefine what the runner's save and restore could
// run, leave traps and options, or write a forged state. The cell after
// each is `(( 1 == 2 ))`, which no function, alias or builtin can stand
// in for, and must end with exit status 1.
var bashForgeries = []struct{ name, cell string }{
	// The functions and aliases act only in a later cell's shell (another
	// pid): in the forging cell's own they pass through, so that its save
	// keeps them.
	{"builtin and every command the runner could call", `
echo patched
forger=$$
for f in builtin set printf declare typeset local exit trap shopt cd alias unalias source unset exec \
    read mapfile echo true false : return export readonly enable hash type test '[' let wait kill eval; do
  eval "function $f { if [[ \$\$ != $forger ]]; then command exit 0; fi; command $f \"\$@\"; }" 2>/dev/null
done`},
	{"command and the rest, through builtin", `
echo patched
forger=$$
for f in command exec exit eval . source trap set; do
  builtin eval "function $f { if [[ \$\$ != $forger ]]; then builtin exit 0; fi; builtin $f \"\$@\"; }" 2>/dev/null
done`},
	{"aliases for the runner's words", `
echo patched
shopt -s expand_aliases
for a in builtin set printf declare exit trap shopt cd exec eval unset read '{' '}' '(' if then fi for do done case esac '((' __cf_f IFS command; do
  alias "$a=[[ \$\$ != $$ ]] && command exit 0; $a" 2>/dev/null
done`},
	{"disabled builtins", `
echo patched
enable -n builtin set printf declare exit trap shopt cd alias exec eval unset read echo true false command 2>/dev/null`},
	{"traps", `
echo patched
shopt -s extdebug
set -o functrace -o errtrace
trap 'exit 0' DEBUG
trap 'exit 0' ERR RETURN TERM HUP INT QUIT USR1 USR2`},
	{"options that stop later commands", `
echo patched
set -o onecmd -o posix -o allexport -o keyword -o monitor
set -n`},
	{"runner variables, readonly", `
echo patched
declare -gr __cf_f=0 __cf_n=x __cf_a=x __cf_r=x __cf_cell='exit 0' IFS=x PS4='$(exit 0)' 2>/dev/null
export BASH_ENV=/dev/null ENV=/dev/null SHELLOPTS=noexec BASHOPTS=extdebug POSIXLY_CORRECT=1 BASH_XTRACEFD=1 FUNCNEST=1 TMOUT=1 2>/dev/null
readonly BASH_ENV POSIXLY_CORRECT 2>/dev/null`},
	{"a forged state in every descriptor", `
echo patched
forged=$'#0\n#0\ntrap "exit 0" EXIT\nbuiltin() { exit 0; }\n#saved\n'
spray() { for f in /proc/self/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ] 2>/dev/null; then printf '%s' "$forged" >&"$n"; printf '%s' "$forged" >"$f"; fi; done 2>/dev/null; }
spray
trap spray EXIT`},
	{"a forged state of the runner's own form", `
echo patched
forged=$'#0\n'
forged+=$'\0#1\0e\0\0V\0x\0\0$(exit 0)\0V\0y\0i\0a[$(exit 0)]\0R\0declare -n r="a[$(exit 0)]"\0N\0declare -f g\ndeclare -f h\0'
forged+=$'D\0g () \n{ \n    :\n}\ntrap "exit 0" EXIT\nh () \n{ \n    :\n}\0L\0alias x=\'y\'\ntrap "exit 0" EXIT\0#saved\n'
spray() { for f in /proc/self/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ] 2>/dev/null; then printf '%s' "$forged" >"$f"; fi; done 2>/dev/null; }
trap spray EXIT`},
	{"a process left behind", `
echo patched
forged=$'#0\ntrap "exit 0" EXIT\nbuiltin() { exit 0; }\n#saved\n'
( exec >/dev/null 2>&1 </dev/null
  for i in $(seq 300); do
    for f in /proc/[0-9]*/fd/*; do printf '%s' "$forged" >>"$f"; done
    sleep 0.01
  done ) &
disown`},
}

// nodeSteal is the prologue of forgeries that act on the next cell's
// request: steal(f) blocks the event loop (after this cell's answer) until
// the request is on stdin, reads it first and calls f(line, request);
// feed is the kernel's stdin listener; sign(nonce, keys) writes an answer
// "exit 0" for the nonce under each candidate key into fd 3.
const nodeSteal = `
const fs = require('fs'), crypto = require('crypto');
const feed = process.stdin.listeners('data')[0];
const steal = (f) => setTimeout(() => {
  const b = Buffer.alloc(1 << 20);
  let n = 0;
  for (;;) {
    try { n = fs.readSync(0, b, 0, b.length, null); break; } catch (e) { if (e.code !== 'EAGAIN') return; }
  }
  const line = b.toString('utf8', 0, n);
  f(line, JSON.parse(line.split('\n')[0]));
}, 0);
const sign = (nonce, keys) => {
  for (const k of keys) {
    const mac = crypto.createHmac('sha256', Buffer.from(k, 'hex')).update(nonce + ' 0').digest('hex');
    try { fs.writeSync(3, nonce + ' 0 ' + mac + '\n'); } catch (_) {}
  }
};
`

// nodeInspector is a forgery's body: it opens an inspector session on
// the kernel (the module from the expression load), reads every key in the
// kernel's stdin listener's scopes, and signs the next cell's answer.
func nodeInspector(load string) string {
	return `
console.log('patched');
try {
  const s = new (` + load + `.Session)();
  s.connect();
  const post = (m, p) => { let out; s.post(m, p, (e, r) => { if (e) throw e; out = r; }); return out; };
  globalThis.__feed = feed;
  const props = (id) => post('Runtime.getProperties', { objectId: id, ownProperties: true });
  const fn = post('Runtime.evaluate', { expression: '__feed' }).result.objectId;
  const scopes = props(fn).internalProperties.find((p) => p.name === '[[Scopes]]').value.objectId;
  const keys = [];
  for (const sc of props(scopes).result) {
    for (const v of props(sc.value.objectId).result) {
      if (v.value && v.value.objectId && v.value.className === 'SecretKeyObject') {
        keys.push(post('Runtime.callFunctionOn', { objectId: v.value.objectId, returnByValue: true,
          functionDeclaration: 'function () { return this.export().toString("hex"); }' }).result.value);
      }
    }
  }
  console.log('keys found: ' + keys.length);
  steal((line, r) => { sign(r.nonce, keys); feed(line); });
} catch (e) { console.log('refused: ' + e.message); }`
}

// nodeForgeries are javascript session cells that try to make a later
// cell's exit status 0; the cell after each is `null.x`, a TypeError the
// engine throws, which must end with exit status 1.
var nodeForgeries = []struct{ name, cell string }{
	{"answers on fd 3 and requests read off stdin", `
const fs = require('fs');
for (let i = 0; i < 64; i++) { try { fs.writeSync(3, i + ' 0 ' + '0'.repeat(64) + '\n{"rc": 0}\n'); } catch (_) {} }
process.stdin.on('data', (d) => {
  for (const l of String(d).split('\n')) {
    try { const r = JSON.parse(l); fs.writeSync(3, r.nonce + ' 0 ' + '0'.repeat(64) + '\n'); } catch (_) {}
  }
});
setInterval(() => { try { fs.writeSync(3, 'x 0 y\n'); } catch (_) {} }, 5).unref();
console.log('patched')`},
	{"prototypes and globals the kernel used", `
const vm = require('vm'), util = require('util'), fs = require('fs'), crypto = require('crypto');
console.log('patched');
vm.Script.prototype.runInThisContext = function () { return undefined; };
vm.Script = function () { return { runInThisContext() {} }; };
Promise.prototype.then = function (f) { f(1); return this; };
Object.defineProperty(Promise.prototype, 'constructor', { value: function () {} });
JSON.parse = () => ({ code: '1', nonce: '' });
JSON.stringify = () => '{"rc": 0}';
fs.writeSync = () => 0;
util.inspect = () => '';
util.types.isPromise = () => true;
Reflect.apply = () => 0;
crypto.createHmac = () => ({ update() {}, digest: () => '0' });
Object.prototype.filename = 'x'; Object.prototype.displayErrors = true;
Error.prepareStackTrace = () => '';
globalThis.String = () => '1';`},
	// The next request is taken off stdin before the kernel reads it (a
	// timer that blocks the event loop until it comes) and handed to the
	// kernel's own stdin listener with other code: the kernel runs only
	// requests the runner tagged.
	{"a later request's nonce fed to the kernel's listener with other code", nodeSteal + `
console.log('patched');
steal((line, r) => { feed(JSON.stringify({ code: '0', nonce: r.nonce, tag: r.tag }) + '\n'); feed(line); });`},
	// The inspector reads the kernel's closure (its key) through the
	// listener's scopes; the key then signs the next cell's answer. The
	// module is loaded by require, and through the ESM loader, which
	// does not go through require (require(esm) where node has it).
	{"the kernel's key read through the inspector", nodeSteal + nodeInspector("require('inspector')")},
	{"the kernel's key read through the inspector loaded as ESM", nodeSteal + nodeInspector(
		"(require('fs').writeFileSync('insp.mjs', 'export * from \"node:inspector\";'), require('./insp.mjs'))")},
	// A process the cell starts reads the kernel's memory for its key (hex
	// text, as the kernel once kept it), which then signs the next answer.
	{"the kernel's memory read by a process the cell starts", nodeSteal + `
console.log('patched');
let keys = [];
try {
  keys = JSON.parse(require('child_process').execFileSync('python3', ['-c', ` + "`" + `
import json, re, sys
pid, found = sys.argv[1], set()
try:
    mem = open("/proc/%s/mem" % pid, "rb", buffering=0)
    for line in open("/proc/%s/maps" % pid):
        a, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in a.split("-"))
        if not perms.startswith("rw") or hi - lo > 1 << 28:
            continue
        try:
            mem.seek(lo)
            found.update(m.decode() for m in re.findall(rb"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])", mem.read(hi - lo)))
        except OSError:
            pass
except OSError as e:
    print(e, file=sys.stderr)
print(json.dumps(sorted(found)))` + "`" + `, String(process.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
} catch (e) { console.log('refused: ' + e.message); }
console.log('keys found: ' + (keys.length > 0));
steal((line, r) => { sign(r.nonce, keys); feed(line); });`},
	// These break node itself (its streams call them), so the kernel may
	// never hear of the next cell: that cell times out, never succeeds.
	{"prototypes node's own streams use", `
Function.prototype.call = Function.prototype.apply = function () { return 0; };
String.prototype.split = function () { return []; };
String.prototype.slice = function () { return '{"code": "1", "nonce": ""}'; };
Array.prototype.push = function () { return 0; };
Array.prototype.shift = function () { return { code: '1', nonce: '' }; };
'patched'`},
	{"exit and its handlers", `
process.exit = () => {}; process.reallyExit = () => {}; process.abort = () => {};
process.exitCode = 0;
process.on('exit', () => {});
process.removeAllListeners('uncaughtException');
process.on('uncaughtException', () => {});
'patched'`},
}

// testForgedCells: no cell can make a later cell of its session report
// success. Each forgery runs in a fresh session of its language, then a
// failing cell, twice (a forged state may act a cell later), must fail with
// exit status 1.
func testForgedCells(t *testing.T, ex executors.Executor) {
	ctx := context.Background()
	for _, k := range []struct {
		prefix    string
		lang      executors.Language
		timeout   time.Duration
		forgeries []struct{ name, cell string }
		failing   string
		// hangs names the forgery that breaks the runtime itself, so the
		// failing cell may time out: a timeout, never a success.
		hangs string
	}{
		{"", executors.Python, 20 * time.Second, forgeries, "assert 1 == 2", ""},
		{"bash/", executors.Bash, 20 * time.Second, bashForgeries, "(( 1 == 2 ))", ""},
		{"javascript/", executors.JavaScript, 30 * time.Second, nodeForgeries, "null.x", "prototypes node's own streams use"},
	} {
		for _, f := range k.forgeries {
			t.Run(k.prefix+f.name, func(t *testing.T) {
				// The wall cap ends a cell that the forgery left hanging idle.
				s := openSession(t, ctx, ex, k.lang, executors.SessionOptions{Limits: executors.Limits{Timeout: k.timeout, WallTimeout: k.timeout}})
				r, err := s.Exec(ctx, f.cell)
				if err != nil {
					t.Fatalf("forging cell: %v", err)
				}
				if !strings.Contains(r.Stdout, "patched") {
					t.Fatalf("forging cell: got stdout %q exit %d stderr %q, want it to run", clip(r.Stdout), r.ExitCode, clip(r.Stderr))
				}
				for i := 1; i <= 2; i++ {
					r, err = s.Exec(ctx, k.failing)
					if err != nil {
						t.Fatalf("failing cell: %v", err)
					}
					t.Logf("forgery %q: failing cell %d: exit %d ok %v stderr %q", f.name, i, r.ExitCode, r.OK(), clip(r.Stderr))
					if f.name == k.hangs && r.TimedOut {
						continue
					}
					if r.ExitCode != 1 || r.OK() {
						t.Errorf("cell %d after the forgery: got exit %d ok %v (stdout %q stderr %q), want exit 1: an earlier cell changed a later cell's outcome",
							i, r.ExitCode, r.OK(), clip(r.Stdout), clip(r.Stderr))
					}
				}
			})
		}
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
		s := openSession(t, ctx, ex, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second}})
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
