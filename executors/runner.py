# codefeedback in-sandbox runner.
#
# Started by a driver's Launcher as `python3 -u -s -c <this source>` inside a
# fresh sandbox instance, with PYTHONHASHSEED=0 in its environment (so every
# run hashes strings the same way; -I would ignore that variable). It speaks
# line-delimited JSON on stdin/stdout with the Go side (executors/protocol.go
# is the other half):
#
#   <- {"ready": true, "pid": N, "python": "3.11.7", "hash_seed": "0"}  once, at start
#   -> {"op": "run", "id": 1, "lang": "python", "code": "...", "stdin": "...",
#       "files": {"name": "<base64>"}, "limits": {...}}
#   <- {"id": 1, "stdout": "...", "exit_code": 0, ...}     as soon as the program ends
#   <- {"id": 1, "done": true, "tainted": false}           after the cleanup
#   -> {"op": "session", "id": 2, "lang": "python", "files": {...}, "limits": {...}}
#   -> {"op": "cell", "id": 3, "code": "..."}   -> {"op": "reset", "id": 4}
#
# One-shot runs fork a fresh child per run (forking this warm interpreter is
# much cheaper than starting python). The child gets a new session, a private
# scratch directory, default signal dispositions, rlimits and pipes; the
# parent enforces the deadline (and, where no cgroup bounds the instance, the
# run's memory across all its processes, by accounting), sends the result,
# then kills every stray process, removes the scratch and checks what a run
# could leave behind for the next one (files, IPC objects, message queues,
# keys, its own priority and rlimits), reporting it as "tainted" so the pool
# replaces the instance before its next run.
#
# Session mode turns this process into a kernel: python cells run in one
# globals dict in-process (fd 1/2 on the session's capture files), bash cells
# in a fresh bash that restores a state snapshot, sql cells on one database
# file. The runner's own files (captures, snapshots, a run's stdin) have no
# path (anon_file): the code it runs has its uid and would find them.

# copy and tokenize are not the runner's (ast is compile_ast's too): the test judge
# (executors/harness) and correct's mutation script import them on every
# run, and a run forked from this process finds them loaded instead of
# paying for the import each time.
import array
import ast
import base64
import copy  # noqa: F401
import ctypes
import gc
import io
import json
import marshal
import os
import re
import resource
import select
import selectors
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
import tokenize  # noqa: F401
import traceback

ROOT = "/tmp/cf"  # runs' scratch directories live below it
PATH = "/usr/local/bin:/usr/bin:/bin"
MARKER = "\n[... output truncated at %d bytes ...]\n"
OOM_HINTS = (b"MemoryError", b"Cannot allocate memory", b"cannot allocate memory",
             b"std::bad_alloc", b"out of memory", b"OutOfMemoryError", b"memory allocation of",
             b"Array buffer allocation failed", b"Allowed memory size of", b"not enough memory")
# The sandbox's own cgroup OOM-kill counter (cgroup v2, then v1). Docker mounts
# the container's cgroup at /sys/fs/cgroup; bwrap binds the instance's cgroup
# there where it made one (else a run's OOM shows only through its rlimit,
# OOM_HINTS, or the runner's accounting).
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")

# -c puts the working directory first on sys.path; the runner imports only
# the standard library.
if sys.path and sys.path[0] == "":
    sys.path.pop(0)

# Protocol pipes move to high, close-on-exec descriptors; 0 and 1 become
# /dev/null so stray writes by session code cannot corrupt the protocol.
P_IN = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
P_OUT_FD = os.dup(1)
for _fd in (P_IN.fileno(), P_OUT_FD):
    os.set_inheritable(_fd, False)
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
os.close(_null)


def send(obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        n = os.write(P_OUT_FD, data)
        data = data[n:]


def ancestors():
    """pid 1, this process and its ancestors: never killed by the sweep."""
    keep = {1, os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in keep:
        keep.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return keep


KEEP = ancestors()


def read_oom_kills(path):
    """The oom_kill count in a memory.events or memory.oom_control file."""
    try:
        with open(path, "rb") as f:
            for line in f:
                key, _, value = line.partition(b" ")
                if key == b"oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def find_oom_counter():
    for path in OOM_COUNTERS:
        if read_oom_kills(path) is not None:
            return path
    return None


OOM_FILE = find_oom_counter()


OOM_FD = [None]


def oom_kills():
    """How many processes the sandbox's cgroup has OOM-killed so far (None
    without a cgroup counter). The counter file stays open and is re-read
    with pread: opening it twice per session cell was a sixth of the
    cell's cost."""
    if not OOM_FILE:
        return None
    try:
        if OOM_FD[0] is None:
            OOM_FD[0] = os.open(OOM_FILE, os.O_RDONLY | os.O_CLOEXEC)
        data = os.pread(OOM_FD[0], 4096, 0)
    except OSError:
        OOM_FD[0] = None  # closed under us (a session cell can): reopen next time
        return read_oom_kills(OOM_FILE)
    # One find, not a split of every line: this runs twice per session cell.
    i = 0 if data.startswith(b"oom_kill ") else data.find(b"\noom_kill ") + 1
    if i >= 0 and data.startswith(b"oom_kill ", i):
        i += 9
        end = data.find(b"\n", i)
        try:
            return int(data[i:end] if end >= 0 else data[i:])
        except ValueError:
            pass
    return read_oom_kills(OOM_FILE)


def oom_killed_since(before, signaled):
    """Whether the cgroup OOM-killed something since before was read. The
    kernel counts a kill just after sending SIGKILL, so when a process died
    of SIGKILL and the count has not moved yet, look once more."""
    if before is None:
        return False
    after = oom_kills()
    # The kernel counts the kill after it sent SIGKILL and logged its
    # report, which on a loaded machine takes a while: wait up to 250 ms,
    # and only for a run that SIGKILL ended.
    for _ in range(50):
        if after is None or after != before or not signaled:
            break
        time.sleep(0.005)
        after = oom_kills()
    return after is not None and after > before


def prefer_oom_kill():
    """Makes this process (and what it forks) the OOM killer's first choice,
    ahead of the runner; raising one's own score needs no privilege."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def set_dumpable(flag):
    """A non-dumpable runner cannot be ptraced (or have its /proc files read)
    by the same-uid code it runs; children are made dumpable again."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, flag, 0, 0, 0)  # PR_SET_DUMPABLE
    except Exception:
        pass


def read_keys():
    try:
        with open("/proc/keys") as f:
            return f.read()
    except OSError:
        return ""


def proc_stat(pid):
    """(state, pgrp) of pid, or None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[2])
    except (OSError, ValueError, IndexError):
        return None


# Exit statuses that reap() collected for processes the runner waits on
# itself (a python session's kernel), by pid.
REAPED = {}
WATCHED = set()


def reap():
    """As pid 1 the runner inherits orphans: collect their exit statuses."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in WATCHED:
            REAPED[pid] = status


def sigkill(*pids):
    """SIGKILLs each of pids (a negative one: that process group), ignoring
    those already gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def sweep(pgid, keep=()):
    """SIGKILL every process but the runner, its ancestors and keep (a
    session's kernel). Returns the number of live processes found outside
    the run's own process group (such as daemons that called setsid): they
    mean the run tampered."""
    strays = 0
    for _ in range(50):
        found = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if pid in KEEP or pid in keep:
                continue
            st = proc_stat(pid)
            if st is None or st[0] in ("Z", "X"):
                continue
            found += 1
            if st[1] != pgid:
                strays += 1
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not found:
            break
        time.sleep(0.002)
        if os.getpid() == 1:
            reap()
    if os.getpid() == 1:
        reap()
    return strays


def safe_name(name):
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError("bad file name %r" % name)
    return name


def write_files(scratch, files):
    for name, b64 in (files or {}).items():
        path = os.path.join(scratch, safe_name(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(b64))


def anon_file(name, data=b""):
    """A read-write, close-on-exec file that no path names: a memfd, else an
    unlinked file in ROOT. The runner's own files (a run's stdin, a
    session's captured output, bash's saved state) are kept this way because
    the code it runs has the runner's uid: a file with a path would show in
    its find /tmp, and hand it the harness's state."""
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        fd, path = tempfile.mkstemp(dir=ROOT)
        os.unlink(path)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def read_only(fd):
    """A read-only descriptor of fd's file at offset 0 (a program must not
    write into what the runner handed it), or fd itself without /proc."""
    try:
        return os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
    except OSError:
        return fd


def capture_file(name):
    """A session's stdout or stderr: O_APPEND, so every writer (subprocesses,
    leftover background jobs) writes at the end, and a truncation by the
    runner rewinds them all."""
    import fcntl
    fd = anon_file(name)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return fd


def place_fds(pairs):
    """In a child about to exec: puts each source descriptor at its target
    number (pairs: {target: source}), whatever the overlaps between them, and
    closes every other descriptor but 0-2."""
    targets = set(pairs)
    burned, fresh = [], {}
    for t, src in pairs.items():
        n = os.dup(src)
        while n in targets:  # a free number that is some other pair's target
            burned.append(n)
            n = os.dup(src)
        fresh[t] = n
    for t, n in fresh.items():
        os.dup2(n, t)  # inheritable
    lo = 3
    for t in sorted(targets) + [1 << 16]:
        if t > lo:
            os.closerange(lo, t)
        lo = t + 1


def set_limits(lim, cpu=True):
    def lim1(res, v):
        if res is not None and v and v > 0:
            try:
                resource.setrlimit(res, (v, v))
            except (ValueError, OSError):
                pass
    lim1(resource.RLIMIT_AS, address_space(lim))
    if cpu and lim.get("cpu_seconds"):
        c = int(lim["cpu_seconds"])
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (c, c + 1))
        except (ValueError, OSError):
            pass
    lim1(resource.RLIMIT_NPROC, lim.get("processes"))
    lim1(resource.RLIMIT_FSIZE, lim.get("file_bytes"))
    lim1(resource.RLIMIT_NOFILE, lim.get("open_files"))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # POSIX message queues are kernel memory no cgroup may see: keep them small.
    lim1(getattr(resource, "RLIMIT_MSGQUEUE", None), MSGQUEUE_BYTES)


MSGQUEUE_BYTES = 1 << 20


def address_space(lim):
    """The address-space rlimit for a run's processes. An address-space
    limit counts reservations, not memory: at the memory limit itself
    ThreadPoolExecutor(32) failed under 512 MiB (each thread's stack and
    malloc arena reserve tens of MiB). Where the instance's memory cgroup
    holds the run's memory, the limit is relaxed to twice the memory plus
    512 MiB: reservations fit, and an allocation far past the limit still
    fails at once with MemoryError rather than after the kernel's slow
    reclaim and OOM kill. Without the cgroup it stays the memory limit."""
    mem = lim.get("memory_bytes")
    if mem and mem > 0 and lim.get("cgroup_memory"):
        return 2 * mem + (512 << 20)
    return mem


def reset_signals(python):
    """Default dispositions and an empty mask, as a freshly exec'd program
    has: the runner ignores SIGTERM and friends, and a forked child would
    inherit that (a multiprocessing pool's terminate() could then never stop
    its workers). A python child then gets what python3 itself sets up."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if python:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def child_env(scratch):
    return {"PATH": PATH, "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PWD": scratch}


def decode(data, cap, truncated):
    s = data.decode("utf-8", "replace")
    if truncated:
        s += MARKER % cap
    return s


# ---------------------------------------------------------------- languages

def sql_statements(code):
    buf = ""
    for ch in code:
        buf += ch
        if ch == ";" and sqlite3.complete_statement(buf):
            if buf.strip(" \t\r\n;"):
                yield buf.strip()
            buf = ""
    if buf.strip():
        yield buf.strip()


def cell_text(v):
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return "x'" + v.hex() + "'"
    return str(v)


def print_table(cur, out):
    cols = [d[0] for d in cur.description]
    rows = [[cell_text(v) for v in r] for r in cur.fetchall()]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    out.write(" | ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for r in rows:
        out.write(" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")
    out.write("(%d row%s)\n" % (len(rows), "" if len(rows) == 1 else "s"))


def run_sql(conn, code, out, err):
    """Runs statements in order, printing each result set as a table. Stops
    at the first error, printed as 'Error: ...'. Returns the exit code."""
    try:
        for stmt in sql_statements(code):
            cur = conn.execute(stmt)
            if cur.description is not None:
                print_table(cur, out)
    except sqlite3.Error as e:
        out.flush()
        err.write("Error: %s\n" % e)
        return 1
    return 0


def open_db(scratch):
    path = os.path.join(scratch, "db.sqlite")
    conn = sqlite3.connect(path, isolation_level=None)
    # A statement runs in sqlite's C code, where the cell timer's handler
    # cannot run: the progress handler gives it a chance every so many
    # steps, and stops the statement once the cell is past a limit.
    conn.set_progress_handler(cell_over, 20000)
    return conn


def print_exception(e, skip):
    tb = e.__traceback__
    for _ in range(skip):
        if tb is not None:
            tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def child_python(code, setup_fd=None):
    import atexit
    import threading
    import types
    # Bound before the program runs: it may rebind os._exit, sys.exit or
    # the runner's own functions, and its exit status must not follow.
    exit_, show, base_exc, sys_exit, isinstance_, int_, str_ = (
        os._exit, traceback.print_exception, BaseException, SystemExit, isinstance, int, str)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    mod = types.ModuleType("__main__")
    mod.__file__ = "main.py"
    mod.__builtins__ = __builtins__
    sys.modules["__main__"] = mod
    sys.argv = ["main.py"]
    sys.path.insert(0, os.getcwd())
    if setup_fd is not None:
        os.close(setup_fd)  # set up: the program starts
    rc = 0
    try:
        try:
            obj = compile(code, "main.py", "exec")
        except (SyntaxError, ValueError) as e:
            show(type(e), e, None)
            rc = 1
        else:
            exec(obj, mod.__dict__)
            threading._shutdown()
    except sys_exit as e:
        c = e.code
        if c is None:
            rc = 0
        elif isinstance_(c, int_):
            rc = c & 0xFF
        else:
            rc = 1
            try:
                sys.stderr.write(str_(c) + "\n")
            except base_exc:
                pass
    except base_exc as e:
        try:
            show(type(e), e, e.__traceback__.tb_next)
        except base_exc:
            pass
        rc = 1
    try:
        atexit._run_exitfuncs()
    except base_exc:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except base_exc:
            pass
    exit_(rc)


# In a run's child until its program starts: where a failure of the
# runner's own set-up is reported (close-on-exec, so an exec closes it).
SETUP_FD = 3


def child(req, scratch, stdin_fd, out_w, err_w, plan=None, setup_w=None):
    """Runs in the forked child; never returns. A failure before the
    program starts is the sandbox's, not the program's: it goes to
    SETUP_FD, which the runner turns into an error."""
    setup = False
    try:
        os.setsid()
        set_dumpable(1)
        prefer_oom_kill()
        os.dup2(read_only(stdin_fd), 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        if setup_w is not None:
            os.dup2(setup_w, SETUP_FD)
            os.set_inheritable(SETUP_FD, False)
            setup = True
        os.closerange(SETUP_FD + 1 if setup else 3, 1 << 16)
        os.chdir(scratch)
        env = child_env(scratch)
        os.environ.clear()
        os.environ.update(env)
        os.umask(0o077)
        lang = req.get("lang")
        if lang in LANGS:  # langs.py
            reset_signals(False)
            lang_exec(req, plan)
        set_limits(req.get("limits") or {})
        code = req.get("code", "")
        reset_signals(lang == "python")
        if lang == "python":
            child_python(code, SETUP_FD if setup else None)
        elif lang == "bash":
            os.execve("/bin/bash", ["bash", "main.sh"], env)
        elif lang == "sql":
            if setup:
                os.close(SETUP_FD)
                setup = False
            conn = open_db(scratch)
            out = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
            err = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="replace")
            rc = run_sql(conn, code, out, err)
            out.flush()
            err.flush()
            os._exit(rc)
        else:
            os.write(2, b"unknown language\n")
            os._exit(2)
    except BaseException as e:
        msg = ("runner: %s: %s\n" % (type(e).__name__, e)).encode()
        try:
            os.write(SETUP_FD if setup else 2, msg)
        except BaseException:
            try:
                os.write(2, msg)
            except BaseException:
                pass
    os._exit(127)


# How often the runner looks at a run's whole-run limits (memory where no
# cgroup bounds the instance, CPU time, files created); runs shorter than
# this are never polled.
ACCOUNT_EVERY = 0.02

# Files and directories a run may leave for the cleanup; past it the
# instance is replaced rather than cleaned.
CLEAN_MAX = 2000


def collect(fds, cap, deadline, pidfd, watch=None):
    """Reads the child's pipes (capped) until the child exits, the deadline
    passes or watch (a RunWatch) finds a whole-run limit passed. Returns
    (bufs, truncated, exited, open_fds, the limit passed or None)."""
    sel = selectors.DefaultSelector()
    bufs = {fd: bytearray() for fd in fds}
    trunc = {fd: False for fd in fds}
    for fd in fds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    sel.register(pidfd, selectors.EVENT_READ)
    exited, over = False, None
    open_fds = set(fds)
    try:
        while True:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                # A program that ended exactly at its deadline is not late.
                exited = pidfd_ready(pidfd)
                break
            if watch is not None:
                over = watch.check(now)
                if over:
                    break
                left = min(left, max(0.0, watch.next - now))
            for key, _ in sel.select(left):
                fd = key.fd
                if fd == pidfd:
                    exited = True
                    sel.unregister(pidfd)
                    continue
                read_into(fd, bufs, trunc, cap, sel, open_fds)
            if exited:
                break
    finally:
        sel.close()
    return bufs, trunc, exited, open_fds, over


def pidfd_ready(pidfd):
    p = select.poll()
    p.register(pidfd, select.POLLIN)
    return bool(p.poll(0))


# ---------------------------------------------------------- run accounting

def pss_anon(pid):
    """Anonymous memory of pid, shared pages split between their sharers
    (so forked children are not counted twice), in bytes."""
    pss = None
    try:
        with open("/proc/%d/smaps_rollup" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"Pss_Anon:"):
                    return int(line.split()[1]) * 1024
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return pss or 0


def fs_used(path):
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def sysv_shm_bytes():
    """Resident bytes of every SysV shared memory segment (the rss column)."""
    total = 0
    try:
        with open("/proc/sysvipc/shm") as f:
            head = f.readline().split()
            col = head.index("rss") if "rss" in head else head.index("size")
            for line in f:
                total += int(line.split()[col])
    except (OSError, ValueError, IndexError):
        pass
    return total


def run_memory():
    """What a run holds now: anonymous memory of every process but the
    runner, the tmpfs mounts it can write and SysV shared memory. Used where
    no cgroup bounds the instance."""
    total = 0
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in KEEP:
            total += pss_anon(int(name))
    return total + fs_used("/tmp") + fs_used("/dev/shm") + sysv_shm_bytes()


# The instance's own CPU counter (cgroup v2 cpu.stat, v1 cpuacct.usage),
# as the sandbox sees it: Docker mounts the container's cgroups at
# /sys/fs/cgroup; bwrap binds the instance's there. It counts every process
# of the instance, the runner included.
CPU_COUNTERS = (("/sys/fs/cgroup/cpu.stat", 1e-6), ("/sys/fs/cgroup/cpuacct/cpuacct.usage", 1e-9),
                ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", 1e-9))
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def read_cgroup_cpu(path, scale):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        if path.endswith("cpu.stat"):
            for line in data.split(b"\n"):
                if line.startswith(b"usage_usec "):
                    return int(line.split()[1]) * scale
            return None
        return int(data) * scale
    except (ValueError, IndexError):
        return None


def find_cpu_counter():
    for path, scale in CPU_COUNTERS:
        if read_cgroup_cpu(path, scale) is not None:
            return path, scale
    return None


CPU_COUNTER = find_cpu_counter()


def self_cpu():
    t = os.times()
    return t.user + t.system


def proc_cpu():
    """CPU seconds of every process but the runner and its ancestors, each
    with what its reaped children used, plus what the runner's reaped
    children used: the fallback where no cgroup counts the instance."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in KEEP:
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
        except (OSError, ValueError, IndexError):
            pass
    t = os.times()
    return total / CLOCK_TICK + t.children_user + t.children_system


def run_cpu():
    """CPU seconds the instance used so far, less the runner's own."""
    if CPU_COUNTER is not None:
        v = read_cgroup_cpu(*CPU_COUNTER)
        if v is not None:
            return v - self_cpu()
    return proc_cpu()


def inodes_used():
    """Files and directories on the instance's writable tmpfs mounts."""
    total = 0
    for path in ("/tmp", "/dev/shm"):
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        total += st.f_files - st.f_ffree
    return total


class RunWatch:
    """A run's limits that hold for all its processes together and that
    no kernel mechanism enforces here: memory where no cgroup bounds the
    instance (the accounting fallback), CPU time (the cgroup's counter,
    else /proc), and the files and directories it may create. check() is
    called from collect; next is when it wants to look again."""

    def __init__(self, lim, start, time_limit=0.0):
        self.budget = int(lim.get("run_memory_bytes") or 0)
        self.cpu = float(lim.get("run_cpu_seconds") or 0)
        # The run's time limit, in CPU-seconds of all its processes: a
        # timeout, where passing cpu is SIGXCPU.
        self.time = float(time_limit or 0)
        self.inodes = int(lim.get("inodes") or 0)
        self.cpu0 = run_cpu() if self.cpu or self.time else 0
        self.inodes0 = inodes_used() if self.inodes else 0
        # CPU cannot pass its limit before this many seconds of wall time
        # on every CPU the run may use: no polling of short runs.
        ncpu = len(os.sched_getaffinity(0)) or 1
        first = min(x for x in (self.cpu, self.time, float("inf")) if x > 0)
        self.cpu_from = start + first / ncpu * 0.9 if first != float("inf") else float("inf")
        self.next = start + ACCOUNT_EVERY
        self.used_cpu = 0.0
        self.used_inodes = 0

    def active(self):
        return bool(self.budget or self.cpu or self.time or self.inodes)

    def check(self, now):
        if now < self.next:
            return None
        self.next = now + ACCOUNT_EVERY
        if self.inodes:
            self.used_inodes = inodes_used() - self.inodes0
            if self.used_inodes > self.inodes:
                return "inodes"
        if self.budget and run_memory() > self.budget:
            return "memory"
        if (self.cpu or self.time) and now >= self.cpu_from:
            self.used_cpu = run_cpu() - self.cpu0
            if self.cpu and self.used_cpu > self.cpu:
                return "cpu"
            if self.time and self.used_cpu > self.time:
                return "time"
        return None


# ------------------------------------------------------------ cell limits
#
# A session cell's time limit is CPU time, as a run's is: of every process
# of the instance (the kernel, what the cell spawned, the runner's own few
# microseconds of a cell's bookkeeping, and an SQL cell, which runs in the
# runner), so splitting the work across processes or threads escapes
# nothing. The wall clock only caps a cell that waits (a generous hang
# guard, the session's wall_seconds). The runner blocks on the cell (the
# kernel's answer, bash's exit, node's reply), so the checks come from a
# timer signal, armed only once the cell could have used its CPU limit on
# every CPU: short cells cost two setitimer calls and one counter read.
# Past a limit the handler kills every process but the runner's own, which
# ends the wait; the cell is reported as timed out, naming the limit, and
# the session starts again empty.

CELL = [None]  # the CellWatch of the cell in progress


NCPU = len(os.sched_getaffinity(0)) or 1


class CellWatch:
    """timer: checks come from SIGALRM (bash, node, sql cells); without it
    the caller's wait calls check() at self.next (a python cell's poll on
    the kernel, which takes a timeout for free: two system calls fewer)."""

    def __init__(self, lim, timer=True):
        self.limits = lim
        self.time = float(lim.get("timeout_seconds") or 10)
        self.wall = max(float(lim.get("wall_seconds") or 0), self.time)
        self.over = None
        self.used = 0.0
        self.timer = timer
        self.start = time.monotonic()
        self.cpu0 = instance_cpu()
        CELL[0] = self
        self.arm(max(0.001, min(self.time / NCPU * 0.9, self.wall)))

    def arm(self, after):
        self.next = time.monotonic() + after
        if self.timer:
            signal.setitimer(signal.ITIMER_REAL, after)

    def check(self):
        """Passes a limit (killing the cell's processes), or re-arms."""
        left = self.wall - (time.monotonic() - self.start)
        if left <= 0:
            self.over = "wall"
        else:
            self.used = instance_cpu() - self.cpu0
            if self.used > self.time:
                self.over = "cpu"
        if self.over:
            kill_others()
            return
        self.arm(max(0.001, min(ACCOUNT_EVERY, left)))

    def wait_ms(self):
        """poll()'s timeout until the next check (-1 once past a limit:
        the kill ends the wait)."""
        if self.over:
            return -1
        return max(1, int((self.next - time.monotonic()) * 1000) + 1)

    def stop(self):
        if self.timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
        CELL[0] = None

    def note(self):
        return cell_note(self.over, self.limits)


def cell_note(over, lim):
    """What a cell stopped at a limit (over: "cpu" or "wall") says."""
    timeout = float(lim.get("timeout_seconds") or 10)
    if over == "cpu":
        return ("[sandbox: the cell used more than %g CPU-seconds (its processes together); it was "
                "stopped and the session restarted: its state is lost]\n" % timeout)
    wall = max(float(lim.get("wall_seconds") or 0), timeout)
    return ("[sandbox: the cell ran past its wall-clock cap of %g s; it was stopped and the "
            "session restarted: its state is lost]\n" % wall)


def on_alarm(sig, frame):
    w = CELL[0]
    if w is not None and w.over is None:
        w.check()


def cell_over():
    """Whether the cell in progress was stopped at a limit."""
    w = CELL[0]
    return w is not None and w.over is not None


def kill_others():
    """SIGKILLs every process but the runner and its ancestors, once, and
    reaps nothing (the cell's own wait collects its status); the session's
    reset sweeps whatever a fork in flight left."""
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in KEEP:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


CPU_FD = [None]


def instance_cpu():
    """CPU seconds of every process of the instance, the runner included:
    its cgroup counter (kept open and re-read with pread, as it is read for
    every cell), else the processes in /proc and the runner's own."""
    if CPU_COUNTER is not None:
        path, scale = CPU_COUNTER
        try:
            if CPU_FD[0] is None:
                CPU_FD[0] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            data = os.pread(CPU_FD[0], 4096, 0)
            if path.endswith("cpu.stat"):
                i = data.index(b"usage_usec ") + 11
                end = data.find(b"\n", i)
                data = data[i:end] if end >= 0 else data[i:]
            return int(data) * scale
        except (OSError, ValueError):
            CPU_FD[0] = None  # closed under us (a cell can): reopen next time
            v = read_cgroup_cpu(path, scale)
            if v is not None:
                return v
    return proc_cpu() + self_cpu()


def read_into(fd, bufs, trunc, cap, sel, open_fds):
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if not data:
        if sel is not None:
            sel.unregister(fd)
        open_fds.discard(fd)
        return
    b = bufs[fd]
    room = cap - len(b)
    if room > 0:
        b += data[:room]
    if len(data) > room:
        trunc[fd] = True


def drain(fds, bufs, trunc, cap, until):
    """After every writer is dead: read what is left, up to a short bound."""
    sel = selectors.DefaultSelector()
    for fd in fds:
        sel.register(fd, selectors.EVENT_READ)
    open_fds = set(fds)
    try:
        while open_fds and time.monotonic() < until:
            for key, _ in sel.select(max(0.0, until - time.monotonic())):
                read_into(key.fd, bufs, trunc, cap, sel, open_fds)
    finally:
        sel.close()


def signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "SIG%d" % sig


# ------------------------------------------------------------ taint checks

def sysv_ipc_counts():
    counts = {}
    for kind in ("shm", "sem", "msg"):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                counts[kind] = sum(1 for _ in f) - 1
        except OSError:
            pass
    return counts


def message_queues():
    try:
        return sorted(os.listdir("/dev/mqueue"))
    except OSError:
        return []


def all_rlimits():
    out = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            try:
                out[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    return out


def instance_state():
    """What the runner can compare before and after a run: things a run can
    change for later runs that the cleanup cannot undo."""
    return {"keys": read_keys(), "ipc": sysv_ipc_counts(), "mqueue": message_queues(),
            "nice": os.getpriority(os.PRIO_PROCESS, 0), "rlimits": all_rlimits()}


# Directories every run may write in, which outlive the run: a run that
# changed their owner, mode or extended attributes (user.* on a tmpfs)
# would leave the next run on the slot a message or a different sandbox.
SHARED_DIRS = ("/tmp", ROOT, "/dev/shm", "/var/tmp", "/run/lock")


def dir_state():
    """(owner, mode, extended attributes) of SHARED_DIRS, and the TCP
    sockets of the instance's network namespace (a closed connection stays
    in TIME_WAIT for a minute, in the next run's /proc/net/tcp)."""
    out = {}
    for d in SHARED_DIRS:
        try:
            st = os.stat(d)
            out[d] = (st.st_uid, st.st_gid, st.st_mode)
        except OSError:
            out[d] = None
            continue
        try:
            names = sorted(os.listxattr(d))
            out[d] += tuple((n, os.getxattr(d, n)) for n in names)
        except OSError:
            pass
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f, "rb") as fh:
                out[f] = sum(1 for _ in fh) - 1
        except OSError:
            out[f] = None
    return out


def check_taint():
    """Problems a run left for the next one. Files are removed by the
    cleanup; whatever shows here cannot be, and the pool replaces the
    instance."""
    problems = []
    try:
        extra = sorted(set(os.listdir("/tmp")) - {"cf"})
        if extra:
            problems.append("files in /tmp: %s" % extra[:5])
        left = os.listdir(ROOT)
        if left:
            problems.append("files left in scratch root: %s" % left[:5])
    except OSError as e:
        problems.append("scratch root: %s" % e)
    for d in ("/dev/shm", "/var/tmp", "/run/lock"):
        try:
            if os.listdir(d):
                problems.append("files in %s" % d)
        except OSError:
            pass
    now = instance_state()
    if now["keys"] != BASELINE["keys"]:
        problems.append("kernel keys added")
    for kind, n in now["ipc"].items():
        if n != BASELINE["ipc"].get(kind, 0):
            problems.append("SysV %s objects: %d" % (kind, n))
    if now["mqueue"] != BASELINE["mqueue"]:
        problems.append("POSIX message queues: %s" % now["mqueue"][:5])
    if now["nice"] != BASELINE["nice"]:
        problems.append("runner priority changed to %d" % now["nice"])
    if now["rlimits"] != BASELINE["rlimits"]:
        changed = sorted(k for k in now["rlimits"] if now["rlimits"][k] != BASELINE["rlimits"].get(k))
        problems.append("runner rlimits changed: %s" % changed)
    dirs = dir_state()
    changed = sorted(k for k in dirs if dirs[k] != BASELINE["dirs"].get(k))
    if changed:
        problems.append("owner, mode, extended attributes or sockets changed: %s" % changed)
    return problems


def remove_tree(path):
    def fix(func, p, exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        func(p)
    try:
        shutil.rmtree(path, onerror=fix)
    except OSError:
        pass


def do_run(req):
    """Runs one program. Returns its result and a cleanup function whose
    answer (the "done" line) says whether the instance is still clean; the
    result is sent first, so the cleanup never counts against the run."""
    lim = req.get("limits") or {}
    cap = int(lim.get("output_bytes") or 65536)
    timeout = float(lim.get("timeout_seconds") or 10)
    # The time limit counts CPU time (RunWatch); the wall clock only caps
    # a run that waits instead of computing.
    wall = max(float(lim.get("wall_seconds") or 0), timeout)
    budget = int(lim.get("run_memory_bytes") or 0)
    inodes = int(lim.get("inodes") or 0)
    scratch = tempfile.mkdtemp(prefix="run-", dir=ROOT)
    stdin = [None]

    def close_stdin():
        if stdin[0] is not None:
            os.close(stdin[0])
            stdin[0] = None

    def remove_scratch():
        remove_tree(scratch)
        close_stdin()

    try:
        write_files(scratch, req.get("files"))
        lang = req.get("lang")
        code = req.get("code", "")
        if lang == "python":
            with open(os.path.join(scratch, "main.py"), "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(code)
        elif lang == "bash":
            with open(os.path.join(scratch, "main.sh"), "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(code)
        # The program's stdin is the runner's, not the program's: a file
        # without a path, so the run cannot find it next to its scratch.
        stdin[0] = anon_file("stdin", (req.get("stdin") or "").encode("utf-8", "surrogatepass"))
        plan = lang_prepare(req, scratch) if lang in LANGS else None  # langs.py: compile
        if plan is not None and "argv" not in plan:
            remove_scratch()
            if "result" not in plan:  # no toolchain: an error, no cleanup line
                return {"id": req.get("id"), "error": plan.get("error"), "missing_toolchain": True}, None
            out = plan["result"]  # a failed compile is the run's result
            out["id"] = req.get("id")

            def compiled_cleanup():
                problems = check_taint()
                done = {"id": req.get("id"), "done": True}
                if problems:
                    done["tainted"] = True
                    done["taint"] = "; ".join(problems)
                return done
            return out, compiled_cleanup
    except (OSError, ValueError) as e:
        remove_scratch()
        return {"id": req.get("id"), "error": "preparing run: %s" % e}, None

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ooms = oom_kills()
    # The child's garbage collector would otherwise walk every object it
    # inherited, writing to each and so copying most of the runner's heap
    # page by page: a third of a judged run's CPU. Frozen objects are not
    # walked; the runner unfreezes its own at once and collects as before.
    # Timed from before the fork: the child can run (and spend CPU) before
    # the parent is scheduled again, and a run's duration must cover it.
    start = time.monotonic()
    watch = RunWatch(lim, start, timeout)
    setup_r, setup_w = os.pipe()
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        child(req, scratch, stdin[0], out_w, err_w, plan, setup_w)
    gc.unfreeze()
    os.close(setup_w)
    close_stdin()
    os.close(out_w)
    os.close(err_w)
    pidfd = os.pidfd_open(pid)
    bufs, trunc, exited, open_fds, over = collect([out_r, err_r], cap, start + wall, pidfd,
                                                  watch if watch.active() else None)
    timed_out = (not exited and not over) or over == "time"
    if not exited:
        sigkill(-pid, pid)
    _, status = os.waitpid(pid, 0)
    duration = time.monotonic() - start
    os.close(pidfd)
    strays = 0
    if over:
        # Past the run's memory budget: everything of the run goes now,
        # daemons included, so nothing keeps growing while we report.
        strays = sweep(pid)
    sigkill(-pid)
    drain(list(open_fds), bufs, trunc, cap, time.monotonic() + 0.5)
    os.close(out_r)
    os.close(err_r)
    os.set_blocking(setup_r, False)
    try:
        setup_err = os.read(setup_r, 4096)
    except OSError:
        setup_err = b""
    os.close(setup_r)

    res = {"id": req.get("id"), "exit_code": 0, "signal": "", "timed_out": timed_out,
           "oom": over == "memory", "killed": bool(over), "duration_ns": int(duration * 1e9)}
    if over == "cpu":
        # As the per-process CPU rlimit ends a process: SIGXCPU.
        res["signal"], res["exit_code"] = "SIGXCPU", 128 + signal.SIGXCPU
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        res["signal"] = signame(sig)
        res["exit_code"] = 128 + sig
        res["killed"] = True
    else:
        res["exit_code"] = os.WEXITSTATUS(status)
    if timed_out:
        res["killed"] = True
        res["time_limit"] = "cpu" if over == "time" else "wall"
    out, err = bytes(bufs[out_r]), bytes(bufs[err_r])
    if not timed_out and res["exit_code"] != 0 and any(h in err[-4096:] for h in OOM_HINTS):
        res["oom"] = True
    # The cgroup's memory limit kills with SIGKILL and leaves no message; its
    # counter tells (any process of the run: the sweep has ended them all).
    if oom_killed_since(ooms, res["signal"] == "SIGKILL" or res["exit_code"] == 137):
        res["oom"] = True
    if over == "memory":
        err += (b"\n[sandbox: the run's processes together used more than %d bytes of memory "
                b"and were killed]\n" % budget)
    elif over == "cpu":
        err += (b"\n[sandbox: the run's processes together used more than %g CPU-seconds "
                b"and were killed]\n" % watch.cpu)
    elif over == "inodes":
        err += (b"\n[sandbox: the run created more than %d files and directories "
                b"and was killed]\n" % inodes)
    res["stdout"] = decode(out, cap, trunc[out_r])
    res["stderr"] = decode(err, cap, trunc[err_r])
    res["stdout_truncated"] = trunc[out_r]
    res["stderr_truncated"] = trunc[err_r]
    if plan is not None:
        res.update(plan["info"])  # langs.py: compile time, artifact

    def cleanup():
        n = strays + sweep(pid)
        # Removing many files takes long (140k directories: 30 s) and would
        # hold up the next run on this instance: past CLEAN_MAX the
        # instance is replaced instead, so the run that made them pays.
        left = inodes_used() - watch.inodes0 if inodes else 0
        if left > CLEAN_MAX:
            close_stdin()
            done = {"id": req.get("id"), "done": True, "tainted": True,
                    "taint": "the run left %d files and directories: replaced rather than cleaned" % left}
            return done
        remove_scratch()
        problems = check_taint()
        if n:
            problems.insert(0, "%d stray process(es) outlived the run" % n)
        done = {"id": req.get("id"), "done": True}
        if problems:
            done["tainted"] = True
            done["taint"] = "; ".join(problems)
        return done

    if setup_err:
        # The runner could not start the program (the run's limits leave
        # it no descriptor or process to do so, say): a sandbox error, not
        # the program's result. The cleanup comes first; the error says
        # whether the instance is still clean.
        done = cleanup()
        err_res = {"id": req.get("id"), "error": "the sandbox could not start the program: %s" %
                   setup_err.decode("utf-8", "replace").strip()}
        if done.get("tainted"):
            err_res["tainted"], err_res["taint"] = True, done.get("taint")
        return err_res, None
    return res, cleanup


# ------------------------------------------------------------------ sessions

# A bash cell runs in a fresh `/bin/bash -c CELL` whose BASH_ENV (read
# before the cell, through /proc/self/fd: no path in the sandbox's file
# system names it) is the prologue: it sets an EXIT trap that saves the
# shell's state, then restores the state the last cell saved. Every file
# the runner gives bash is a descriptor without a path (anon_file); the
# prologue's is sealed, and only the one the trap writes to is open while
# the cell runs.
#
# Nothing a cell leaves can change a later cell's exit status:
# - The status is bash's own wait status, which the runner reads. The
#   trap never calls `exit`: bash keeps the status it had when the trap
#   began, and the trap's only work, the save, runs in a subshell (a
#   fork), so a function named `builtin`, `set` or `printf`, an alias or
#   errexit inside the save cannot touch it.
# - The trap runs no code of the cell's either: a function named `builtin`
#   (or `command`) would shadow every `\builtin` of the save, and ran in
#   the NEXT cell's trap, where it could reach that cell's bash (its
#   /proc/PID/mem, its capture descriptors). The save's subshell first
#   turns on posix mode by an assignment (POSIXLY_CORRECT=y: no function
#   can shadow an assignment), where `unset`, a POSIX special builtin, is
#   found before any function; it removes the function named `builtin`,
#   and posix mode goes again (unless the cell had it on). Until then it
#   runs only keywords and assignments; if posix mode cannot be turned on
#   (POSIXLY_CORRECT made readonly) nothing is saved. A function named
#   `builtin` is so never part of a saved state.
# - bash is started from an execute-only memfd copy of /bin/bash
#   (bash_exe): a process started from a file it cannot read is not
#   dumpable, so no other process of the sandbox can open its
#   /proc/PID/mem or /proc/PID/fd. And no process outlives its cell
#   (Session.end_strays): nothing an earlier cell started is left to try.
# - The saved state is data, never code the next cell runs as written.
#   The trap writes it as NUL-separated fields (bash_parse reads them) and
#   the runner writes the next prologue from those fields alone: names
#   checked, values quoted byte by byte, options from a list. A cell can
#   write anything into the trap's descriptor, or replace the trap; what
#   it writes is read as data too. Function bodies are the one part that
#   is code: each is read back by a clean bash (bash_check_functions)
#   through bash's own function import, which accepts exactly one
#   function definition, and the definition bash prints back is what the
#   prologue holds; the functions come last in the prologue, after the
#   last command it runs.
# - Options that would stop a later cell's commands from running (noexec,
#   onecmd) are not restored: an interactive shell ignores them too.
#
# The trap turns off alias expansion before the save's code is parsed (an
# eval in the subshell): the cell's aliases cannot reach it. Under a
# `set -v` bash echoes the trap's line as it reads it, after all the cell
# printed: Session.cell cuts it off.
BASH_SKIP = ("BASH*|EUID|PPID|UID|SHELLOPTS|FUNCNAME|GROUPS|RANDOM|SRANDOM|SECONDS|LINENO|HISTCMD|EPOCH*|"
             "DIRSTACK|PIPESTATUS|_|__cf_*|COMP*|OPT*|PWD|OLDPWD|SHLVL|HOSTNAME|HOSTTYPE|MACHTYPE|OSTYPE|"
             "IFS|PS4|PS1|PS2|POSIXLY_CORRECT")
# The save, run by eval in the trap's subshell with aliases off; no single
# quote in it (it sits in one). Variables: V name attrs value, U name attrs
# (declared, no value), A name attrs count keys... values..., R `declare -p`
# of a nameref. Then P the working directory, N `declare -F`, D `declare
# -f`, L `alias -p`.
BASH_DUMP = (
    "\\builtin set +euvx; \\builtin unset IFS; "
    "\\builtin printf \"%s\\0%s\\0\" \"$EPOCHREALTIME\" \"$__cf_f\"; \\builtin set +o; \\builtin printf \"\\0\"; "
    "for __cf_n in " + " ".join("${!%s*}" % c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") +
    "; do case $__cf_n in " + BASH_SKIP + ") ;; *) "
    "if [[ -R $__cf_n ]]; then \\builtin printf \"R\\0\"; \\builtin declare -p \"$__cf_n\"; \\builtin printf \"\\0\"; "
    "else __cf_a=${!__cf_n@a}; case $__cf_a in "
    "*[aA]*) \\builtin declare -n __cf_r=$__cf_n; "
    "\\builtin printf \"A\\0%s\\0%s\\0%s\\0\" \"$__cf_n\" \"$__cf_a\" \"${#__cf_r[@]}\"; "
    "if ((${#__cf_r[@]})); then \\builtin printf \"%s\\0\" \"${!__cf_r[@]}\" \"${__cf_r[@]}\"; fi ;; "
    "*) if [[ -v $__cf_n ]]; then \\builtin printf \"V\\0%s\\0%s\\0%s\\0\" \"$__cf_n\" \"$__cf_a\" \"${!__cf_n}\"; "
    "else \\builtin printf \"U\\0%s\\0%s\\0\" \"$__cf_n\" \"$__cf_a\"; fi ;; esac; fi ;; esac; done; "
    "\\builtin printf \"P\\0%s\\0N\\0\" \"$PWD\"; \\builtin declare -F; \\builtin printf \"\\0D\\0\"; \\builtin declare -f; "
    "\\builtin printf \"\\0L\\0\"; \\builtin alias -p; \\builtin printf \"\\0#saved\\n\"")

SAVED = b"#saved\n"


# The shopt options that turning posix mode on and then off (as the trap
# does) changes, in bash 5.2's posix_initialize.
BASH_POSIX_SHOPT = ("expand_aliases", "inherit_errexit", "interactive_comments", "shift_verbose", "sourcepath")


def bash_trap(new):
    """The EXIT trap's action, saving into descriptor new. It runs no
    command in the cell's shell: the save is a subshell, and `|| (( 1 ))`
    keeps a failed save from ending the shell under errexit with the
    save's status. The subshell records $- and the shell options first,
    then turns off alias expansion and runs BASH_DUMP. It runs inside a
    second subshell whose stderr is /dev/null: a save killed by a signal
    (its file-size limit, say) is reported by the shell that waits for
    it, and that report quotes the save's source. (The second subshell
    has a command after the first, or bash would not fork for it.)
    Before any command, posix mode (an assignment) lets the special
    builtin `unset` remove a function named `builtin`, which would
    otherwise run in place of every `\\builtin` below; then posix mode
    is left as the cell had it (see the comment above BASH_SKIP), and
    the shopt options turning posix mode on and off changes are set
    back from $BASHOPTS (read first: an expansion, no command)."""
    return ("( ( __cf_f=$- __cf_o=$BASHOPTS __cf_p=; [[ -o posix ]] && __cf_p=1; POSIXLY_CORRECT=y; "
            "if [[ -o posix ]]; then \\unset -f builtin; \\unset POSIXLY_CORRECT; "
            "[[ -n $__cf_p ]] && \\builtin set -o posix; "
            "for __cf_x in " + " ".join(BASH_POSIX_SHOPT) + "; do if [[ :$__cf_o: == *:$__cf_x:* ]]; "
            "then \\builtin shopt -s \"$__cf_x\"; else \\builtin shopt -u \"$__cf_x\"; fi; done; "
            "\\builtin shopt -p; \\builtin printf \"\\0\"; \\builtin shopt -u expand_aliases extdebug; "
            "\\builtin eval '" + BASH_DUMP + "'; fi ) >&" + str(new) + "; (( 1 )) ) 2>/dev/null || (( 1 ))")


def bash_prologue(fds, restore, functions):
    """BASH_ENV: the trap, then the state (restore: commands written by
    bash_restore; functions: definitions from bash_check_functions), in
    one group parsed before any of it runs (so no alias the state defines
    applies to it, and with extglob on, which function bodies may need).
    The group closes the prologue's descriptor and marks the cell's start
    before the functions are defined: after them it runs no command."""
    prologue, _, new, _ = fds
    return (b"builtin unset BASH_ENV\n"
            b"builtin trap -- '" + bash_trap(new).replace("'", "'\\''").encode() + b"' EXIT\n"
            b"builtin shopt -s extglob\n"
            b"{\n" + restore +
            b"builtin exec %d<&-\nbuiltin printf '#%%s\\n' \"$EPOCHREALTIME\" >&%d\n" % (prologue, new) +
            functions + b"} >/dev/null 2>&1\n")


def bash_quote(data):
    """data (bytes) as one bash word that expands to exactly those bytes:
    $'...' with everything but letters, digits and a few marks escaped."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    out = bytearray(b"$'")
    for c in data:
        if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c in b"_./-:,@%+=":
            out.append(c)
        else:
            out += b"\\x%02x" % c
    return bytes(out) + b"'"


BASH_NAME = None  # compiled on first use (re is the runner's only for bash)
# set -o options a cell may leave on; noexec and onecmd would stop a later
# cell's commands from running (an interactive shell ignores both), and
# errexit, nounset, verbose and xtrace come from $- (the trap turned them
# off before set +o ran).
BASH_SET_OPTIONS = {"allexport", "braceexpand", "emacs", "errtrace", "functrace", "hashall", "histexpand",
                    "history", "ignoreeof", "interactive-comments", "keyword", "monitor", "noclobber",
                    "noglob", "nolog", "notify", "physical", "pipefail", "posix", "privileged", "vi"}
BASH_FLAGS = {"e": "errexit", "u": "nounset", "v": "verbose", "x": "xtrace"}
BASH_INT = None


def bash_parse(data):
    """The state a cell's trap saved (everything after the start line),
    as a dict, or None when it is incomplete or malformed. Nothing in it
    is trusted: a cell may have written it."""
    import re
    global BASH_NAME, BASH_INT
    if BASH_NAME is None:
        BASH_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*\Z")
        BASH_INT = re.compile(rb"-?[0-9]+\Z")
    if not data.endswith(b"\0" + SAVED):
        return None
    tok = data[:-len(SAVED) - 1].split(b"\0")
    if len(tok) < 4:
        return None
    st = {"shopt": [], "set": [], "vars": [], "pwd": None, "fnames": [], "ftext": b"", "aliases": []}
    for line in tok[0].split(b"\n"):
        m = re.match(rb"shopt -([su]) ([a-z_0-9]+)\Z", line)
        if m:
            st["shopt"].append((m.group(1), m.group(2)))
    try:
        st["end"] = float(tok[1])
    except ValueError:
        st["end"] = None
    st["flags"] = bytes(c for c in tok[2] if chr(c) in BASH_FLAGS)
    for line in tok[3].split(b"\n"):
        m = re.match(rb"set ([-+])o ([a-z-]+)\Z", line)
        if m and m.group(2).decode() in BASH_SET_OPTIONS:
            st["set"].append((m.group(1), m.group(2)))
    i = 4
    n = len(tok)
    ok_attrs = set(b"aAilrtux")
    while i < n:
        tag = tok[i]
        if tag == b"V" and i + 3 < n:
            name, attrs, value = tok[i + 1:i + 4]
            i += 4
            if BASH_NAME.match(name) and set(attrs) <= ok_attrs and not set(attrs) & set(b"aA"):
                if b"i" in attrs and not BASH_INT.match(value):
                    continue
                st["vars"].append((b"-" + (attrs or b"-"), name, bash_quote(value)))
        elif tag == b"U" and i + 2 < n:
            name, attrs = tok[i + 1:i + 3]
            i += 3
            if BASH_NAME.match(name) and set(attrs) <= ok_attrs and not set(attrs) & set(b"aA"):
                st["vars"].append((b"-" + (attrs or b"-"), name, None))
        elif tag == b"A" and i + 3 < n:
            name, attrs = tok[i + 1:i + 3]
            try:
                count = int(tok[i + 3])
            except ValueError:
                return None
            keys, values = tok[i + 4:i + 4 + count], tok[i + 4 + count:i + 4 + 2 * count]
            i += 4 + 2 * count
            if len(values) != count or not BASH_NAME.match(name) or not set(attrs) <= ok_attrs:
                continue
            assoc = b"A" in attrs
            if b"i" in attrs and not all(BASH_INT.match(v) for v in values):
                continue
            if not assoc and not all(k.isdigit() for k in keys):
                continue
            if assoc and not all(keys):
                continue
            items = b" ".join(b"[" + (bash_quote(k) if assoc else k) + b"]=" + bash_quote(v) for k, v in zip(keys, values))
            st["vars"].append((b"-" + attrs, name, b"(" + items + b")"))
        elif tag == b"R" and i + 1 < n:
            m = re.match(rb"declare -([a-zA-Z]*n[a-zA-Z]*) ([A-Za-z_][A-Za-z0-9_]*)=\"([A-Za-z_][A-Za-z0-9_]*)\"\n?\Z", tok[i + 1])
            i += 2
            if m and set(m.group(1)) <= set(b"nrtx"):
                st["vars"].append((b"-" + m.group(1), m.group(2), bash_quote(m.group(3))))
        elif tag == b"P" and i + 1 < n:
            st["pwd"] = tok[i + 1]
            i += 2
        elif tag == b"N" and i + 1 < n:
            for line in tok[i + 1].split(b"\n"):
                m = re.match(rb"declare -f([a-z]*) (\S+)\Z", line)
                if m:
                    st["fnames"].append((m.group(2), m.group(1)))
            i += 2
        elif tag == b"D" and i + 1 < n:
            st["ftext"] = tok[i + 1]
            i += 2
        elif tag == b"L" and i + 1 < n:
            for m in re.finditer(rb"^alias ([^\s=/$`'\"\\]+)='((?:[^']|'\\\\'')*)'$", tok[i + 1], re.M):
                st["aliases"].append((m.group(1), m.group(2).replace(b"'\\''", b"'")))
            i += 2
        else:
            return None
    return st


# A function name the prologue writes as is: no quoting, globbing or
# expansion can apply to it.
BASH_FUNC_NAME = None


def bash_split_functions(st):
    """{name: the `declare -f` text of that function} from a parsed state:
    `declare -f` prints the functions in `declare -F`'s order, each
    starting `NAME () ` on a line of its own. A split a function body
    could fool only loses functions: each piece is checked on its own."""
    import re
    global BASH_FUNC_NAME
    if BASH_FUNC_NAME is None:
        BASH_FUNC_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.:@+,%^~-]*\Z")
    text, out, pos, names = st["ftext"], {}, 0, []
    for name, _ in st["fnames"]:
        if BASH_FUNC_NAME.match(name) and not name.startswith(b"__cf_"):
            names.append(name)
    starts = []
    for name in names:
        head = name + b" () \n"
        at = text.find(head, pos) if text.startswith(head, pos) else text.find(b"\n" + head, pos)
        if at < 0:
            starts.append(None)
            continue
        if not text.startswith(head, at):
            at += 1
        starts.append(at)
        pos = at + len(head)
    bounds = [s for s in starts if s is not None] + [len(text)]
    for name, s in zip(names, starts):
        if s is None:
            continue
        end = min(b for b in bounds if b > s)
        out[name] = text[s + len(name) + 4:end].lstrip(b"\n").rstrip(b"\n")
    return out


def bash_check_functions(bodies, known):
    """{name: definition} for the function bodies ({name: "{ ... }"}) that
    bash imports as exactly one function definition: a clean bash, with
    extglob on and no state, imports each from its environment under a
    name of its own and prints it back; that printed definition, under
    the function's name, is what the next prologue holds. known caches
    earlier answers (body -> definition)."""
    import subprocess
    out, todo = {}, {}
    for name, body in bodies.items():
        if body in known:
            if known[body] is not None:
                out[name] = name + b" () \n" + known[body]
        else:
            todo[name] = body
    if not todo:
        return out
    env = {"PATH": PATH, "LC_ALL": "C.UTF-8"}
    order = list(todo)
    for k, name in enumerate(order):
        env["BASH_FUNC___cf_%d%%%%" % k] = (b"() " + todo[name]).decode("utf-8", "surrogateescape")
    script = ("for __cf_n in %s; do builtin declare -F \"$__cf_n\" >/dev/null && "
              "builtin printf '%%s\\0' \"$__cf_n\" && builtin declare -f \"$__cf_n\" && builtin printf '\\0'; done"
              % " ".join("__cf_%d" % k for k in range(len(order))))
    try:
        p = subprocess.run(["/bin/bash", "-O", "extglob", "-c", script], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60, close_fds=True)
        tok = p.stdout.split(b"\0")
    except (OSError, subprocess.SubprocessError):
        return out
    got = {}
    for j in range(0, len(tok) - 1, 2):
        k, text = tok[j], tok[j + 1]
        head = k + b" () \n"
        if k.startswith(b"__cf_") and text.startswith(head):
            got[k.decode()] = text[len(head):].rstrip(b"\n") + b"\n"
    for k, name in enumerate(order):
        body = got.get("__cf_%d" % k)
        if len(known) > 4096:
            known.clear()
        known[todo[name]] = body
        if body is not None:
            out[name] = name + b" () \n" + body
    return out


def bash_restore(st):
    """The prologue's commands for a parsed state (bash_parse), up to the
    function definitions, and those definitions (bash_check_functions
    fills st["functions"])."""
    lines = []
    if st["pwd"]:
        lines.append(b"builtin cd -- " + bash_quote(st["pwd"]))
    later = []
    for flag, name in st["shopt"]:
        # extdebug is left off: set while bash starts, it looks for a
        # debugger and warns on every cell.
        if name in (b"extglob", b"expand_aliases", b"extdebug", b"login_shell", b"restricted_shell"):
            if name in (b"extglob", b"expand_aliases"):
                later.append(b"builtin shopt -%s %s" % (flag, name))
            continue
        lines.append(b"builtin shopt -%s %s" % (flag, name))
    # declare itself, not through builtin: only then does bash read
    # name=(...) as an array. No function exists yet to stand in for it.
    for attrs, name, value in st["vars"]:
        if value is None:
            lines.append(b"declare %s %s" % (attrs, name))
        else:
            lines.append(b"declare %s %s=%s" % (attrs, name, value))
    for name, value in st["aliases"]:
        lines.append(b"builtin alias -- " + bash_quote(name + b"=" + value))
    for flag, name in st["set"]:
        lines.append(b"builtin set %so %s" % (flag, name))
    if not any(name == b"extglob" for _, name in st["shopt"]):
        later.append(b"builtin shopt -u extglob")  # the prologue turned it on to read functions
    lines += later
    for f in st["flags"]:
        lines.append(b"builtin set -" + bytes([f]))
    restore = b"".join(l + b"\n" for l in lines)
    funcs = st.get("functions") or {}
    defs = b"".join(funcs[name] for name in sorted(funcs))
    # Attributes of functions (exported, traced) can only be set after
    # they exist, when a function named builtin would run instead.
    if funcs and b"builtin" not in funcs:
        attrs = dict(st["fnames"])
        for flag in b"xt":
            names = [n for n in sorted(funcs) if bytes([flag]) in attrs.get(n, b"")]
            if names:
                defs += b"builtin declare -f%s %s\n" % (bytes([flag]), b" ".join(names))
    return restore, defs


# A cell is passed to bash as its -c argument, so bash names errors as it
# does InterCode's `/bin/bash -c` ("/bin/bash: line 2: ..."). The kernel
# bounds one argument to 128 KiB (MAX_ARG_STRLEN): a larger cell is read
# from a descriptor and run by an eval on the -c string's first line, so
# its errors read the same. (Under a restored xtrace such a cell shows as
# one `+ eval '...'` line.)
BASH_ARG_MAX = 96 << 10
# Its words are quoted so that no alias of the state's applies; with a
# function named builtin in the state the cell runs as a file instead
# (Session.bash_cell).
BASH_BIG_CELL = (b"IFS= \\builtin read -r -d '' __cf_cell </proc/self/fd/%(fd)d 2>/dev/null || \\builtin :; "
                 b"\\builtin exec %(fd)d<&- 2>/dev/null; \\builtin eval \"$__cf_cell\"")


def bash_fds():
    """The descriptor numbers bash's files take in a cell: (prologue,
    state, new state, large cell). High, out of the way of the 3-9 users
    pick and of the 10 and up bash takes for its own redirections, below
    255 (bash's own for a script it runs), and under the open-files limit,
    which dup2 obeys. Capped at 256 so the numbers a cell may see do not
    change with the limit."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = 256 if soft == resource.RLIM_INFINITY or soft > 256 else max(soft, 8)
    return top - 4, top - 3, top - 2, top - 5


# A line that starts a statement no expression can start: a keyword only
# statements begin with, a decorator, or a plain or augmented assignment to
# a name. compile_fast then skips its eval attempt for the last statement.
STATEMENT_START = re.compile(
    r"(?:(?:def|class|for|while|if|with|try|import|from|return|raise|assert|del|pass|break|continue|"
    r"global|nonlocal|async)\b|@|[^\W\d]\w*[ \t]*(?:\*\*|//|>>|<<|[-+*/%&|^@])?=(?!=))")


def compile_fast(code, lines, name, compile_, match, errors, len_):
    """Compiles a python cell as ([code objects to exec], the last statement
    as an expression to eval and echo, or None), as an interpreter prompt
    does, or returns None when the AST must decide (compile_ast). Parsing
    to an AST and compiling that costs twice compiling the source, most of
    a small cell's time, so the source is split before its last line at
    column 0 instead: when both halves compile on their own, neither ends
    inside a bracket, string or continuation, so that line starts the last
    statement. Otherwise (or on a syntax error, to report it once and
    exactly) the AST decides.

    The kernel runs this (kernel_loop) through a function it makes for each
    cell from this code object, and passes in everything it calls: it reads
    no global and no builtin, so nothing a cell rebinds reaches it."""
    i = len_(lines) - 1
    while i >= 0 and (not lines[i].strip() or lines[i][0] in " \t#"):
        i -= 1
    if i < 0 or lines[i][0] in ")]}" or "__future__" in code:
        return None
    # Blank lines keep the tail's line numbers those of the cell.
    tail = "\n" * i + "".join(lines[i:])
    try:
        body = [compile_("".join(lines[:i]), name, "exec")] if i else []
        if match(lines[i]):
            # Not an expression: a failed eval compile would cost more
            # than compiling the tail.
            body.append(compile_(tail, name, "exec"))
            return body, None
        try:
            return body, compile_(tail, name, "eval")
        except errors:
            body.append(compile_(tail, name, "exec"))
            return body, None
    except errors:
        return None


# What makes compile_fast hand a cell to the AST: a warning counts when a
# cell made warnings errors. Others (RecursionError, MemoryError: a cell
# too deeply nested) are the cell's failure, as in one process.
FAST_ERRORS = (SyntaxError, ValueError, Warning)

# The warnings filters the kernel compiles a cell under, in a warnings
# module of its own made for that compile: the warnings a cell's module
# would show are errors, which hand the cell back (the runner's compile
# shows them), and those the default filters ignore for it stay ignored.
# The cell's own warnings module, which an earlier cell may have patched
# (its filters, _showwarnmsg), is never called from compile_fast.
COMPILE_FILTERS = (("ignore", None, DeprecationWarning, None, 0), ("ignore", None, PendingDeprecationWarning, None, 0),
                   ("ignore", None, ImportWarning, None, 0), ("ignore", None, ResourceWarning, None, 0),
                   ("error", None, Warning, None, 0))


def compile_here(code, name):
    """The runner's compile of a cell with a non-ASCII character: the
    compiler imports unicodedata for a non-ASCII name, and an import in
    the kernel runs whatever a cell put in its import system, so such a
    cell is compiled here. As in the kernel, but a SyntaxWarning sends the
    cell to the AST too, so that it is reported once."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", SyntaxWarning)
        compiled = compile_fast(code, code.splitlines(True), name, compile, STATEMENT_START.match, FAST_ERRORS, len)
    return compiled if compiled is not None else compile_ast(code, name)


def compile_ast(code, name):
    """compile_fast's result for a cell it handed back, decided by the AST
    (a SyntaxError for a cell that does not compile)."""
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), name, "eval")
    return [compile(tree, name, "exec")], last


# ------------------------------------------------------------ python kernel
#
# A python session's cells run in a kernel process of their own, forked from
# the runner when the session starts, never in the runner: a cell can patch
# anything in the process it runs in (builtins, sys.exit, os._exit, the
# runner's own functions found through gc.get_objects or sys.modules,
# sys.stdout, atexit, signal handlers), and those patches stay for later
# cells. The runner keeps the protocol, the cell's limits and outcome, reads
# the output from the capture files and builds the result.
#
# Inside the kernel the cells run in a subinterpreter of their own, never in
# the interpreter that runs the kernel's loop (kernel_loop): a cell left
# behind by an earlier one (a patched builtin, a wrapper around print) runs
# during a later cell, and in one interpreter it could walk up to the loop's
# frame and answer for that cell. The subinterpreter has its own modules,
# builtins and frames; the loop's frames are out of its reach, and an audit
# hook set before any cell (KERNEL_SETUP) refuses what would reach them or
# the process's memory: sys._current_frames, new interpreters, trace and
# profile functions (a tracer may rewrite a running frame's locals), new
# audit hooks, gc's object walks, ctypes, /proc/*/mem, and os.fork (a
# forked subinterpreter cannot run).
#
# Each cell runs through KERNEL_STUB, which has the hook vouch that exec
# and the driver's code object are the interpreter's own and the one the
# setup made, and runs KERNEL_DRIVER. The driver has the hook vouch for every
# other function whose replacement could change which code runs or what
# status is sent, and for the request (its tag under a second key, subkey,
# and a counter the hook has not seen: a cell cannot swap in another cell's
# source or replay an earlier request), compiles the cell (compile_fast, or the
# runner's compile_ast when it hands the cell back), runs it, and writes one
# status message: "R <exit code>", "A" (handed back) or "T" (a thread the
# cell started is still running: 3.11 cannot run a later cell then). After
# the driver returns, the loop writes "E", the cell's nonce and an HMAC of
# them under a key drawn for the kernel that only the loop and the runner
# hold (and the host, where the runner hands it the kernel: take_channel).
# The runner takes a cell's status only when exactly one status
# message came before that "E": a cell that writes a status of its own adds
# a second one, and nothing a cell leaves behind runs after the driver's
# (no thread outlives a cell, and the driver drops every object of the
# cell's before it writes). Requests carry an HMAC too, so that a cell
# that swaps the request socket cannot have the loop run a cell of its own.
# A tampered status fails the cell and restarts the session.
#
# Code that reads the process's memory finds the key. The hook closes the
# routes to it that it can see: extension modules from outside /usr and
# CPython's _test* modules, code objects a cell makes (CodeType,
# code.replace, marshal.loads of anything but the loop's tagged requests
# and the system's .pyc files), /proc/*/mem by name or link
# (which the kernel, not dumpable, cannot open anyway). What stays open: a
# route no event reports that is neither, and a class of the loop's
# interpreter the loop uses, patched (kernel_loop checks the one it uses,
# RunFailedError, before each cell).

# The subinterpreter's setup, run once before any cell.
KERNEL_SETUP = r"""
def _setup(scratch, pattern, driver, subkey, status_fd):
    import gc, io, os, re, sys, types, marshal, _hashlib, _thread
    # What the stub and the driver run with, as it is before any cell: each
    # checks its own against these by identity (vouch), never by name. The
    # driver's code object is made here once, before the hook: code objects
    # are immutable, so every cell's stub runs this one (a marshal.loads of
    # the driver per cell was a tenth of the stub and driver's own time).
    driver_code = marshal.loads(driver)
    stub_tools, driver_tools = (exec, driver_code), (exec, compile, eval, marshal.loads, sys.exc_info,
                                                     _thread._count, os.write, sys._getframe)
    blocked = frozenset((
        "sys.addaudithook", "sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions",
        "cpython.PyInterpreterState_New", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "os.fork", "os.forkpty", "marshal.load"))
    # Everything the hook calls is bound here. It must never run a cell's
    # code: code it called could read the hook's frame, and with it subkey.
    # So it reads no dict a cell can fill, calls no method of a cell's
    # class, takes a subclass of str or bytes by the base type's copy, and
    # checks with the collector off (hook), which would run finalizers.
    T, str_, bytes_, int_, dict_, len_ = type, str, bytes, int, dict, len
    err, denied, base_exc = RuntimeError, PermissionError, BaseException
    MRO = T.__dict__["__mro__"].__get__
    as_str, as_bytes, as_int, item = str_.__str__, bytes_.__bytes__, int_.__int__, tuple.__getitem__
    loads, mac, same, ident = marshal.loads, _hashlib.hmac_digest, _hashlib.compare_digest, _thread.get_ident
    stat, fileio, write = os.stat, io.FileIO, os.write
    gc_enabled, gc_off, gc_on = gc.isenabled, gc.disable, gc.enable
    getframe, coroutine = sys._getframe, types.coroutine.__code__
    code_t, plain, tuple_ = T(coroutine), (tuple, list, set, frozenset), tuple
    func_t = T(lambda: 0)
    defaults, from_bytes = func_t.__dict__["__defaults__"].__get__, int_.from_bytes
    last = [0]  # the counter of the last request vouched for
    current = [None]  # its marshalled cell, which marshal.loads may make code objects from
    procfs = item(stat("/proc/self"), 2)  # st_dev
    pyc = {}  # thread -> the .pyc under /usr it opened last (importlib's next marshal.loads)
    inner = [None]  # the thread in has_code's own marshal.loads

    def exact(p):
        t = T(p)
        if t is str_ or t is bytes_ or t is int_:
            return p
        for c in MRO(t):
            if c is str_:
                return as_str(p)
            if c is bytes_:
                return as_bytes(p)
            if c is int_:
                return as_int(p)
        return None

    def system(p):
        # /usr is read-only in every sandbox (bwrap binds it so; Docker's
        # root is read-only): nothing under it is a cell's. Its links lead
        # into /etc, read-only in both too.
        return p[:5] == "/usr/" and "/../" not in p and "/./" not in p

    def has_code(data):
        inner[0] = ident()
        try:
            todo = [loads(data)]
        except base_exc:
            return False  # the real loads fails the same way
        finally:
            inner[0] = None
        while todo:
            o = todo.pop()
            t = T(o)
            if t is code_t:
                return True
            if t in plain:
                todo.extend(o)
            elif t is dict_:
                todo.extend(o.keys())
                todo.extend(o.values())
        return False

    def mem(p):
        if T(p) is bytes_:
            p = p.decode("utf-8", "surrogateescape")
        if p == "mem" or p[-4:] == "/mem":
            return True
        if system(p):
            return False
        try:
            st = stat(p)  # through links: a link to /proc/PID/mem is that file
        except base_exc:
            return False
        # st_dev, st_mode: in /proc only */mem is a regular rw------- file.
        return item(st, 2) == procfs and item(st, 0) == 0o100600

    def vouch(f):
        # The stub and the driver name what they run with in the defaults of
        # a lambda whose __code__ they read: that read calls this hook from
        # C, whatever a cell rebound. It raises unless every one is the
        # interpreter's own (by identity), the driver's code is the setup's,
        # and the request is the loop's (its tag under subkey) and newer than
        # any before: a cell cannot swap the loop's request, the driver, or
        # a function that decides which code runs or what status is written.
        d = defaults(f)
        if T(d) is not tuple_ or len_(d) < 1 or T(item(d, 0)) is not str_:
            return
        m = item(d, 0)
        if m == "cf-stub":
            if len_(d) == 3 and item(d, 1) is item(stub_tools, 0) and item(d, 2) is item(stub_tools, 1):
                return
        elif m == "cf-fail":
            # The stub's except clause: something raised before the driver
            # wrote its status (a tool that failed its vouch; a key of the
            # namespace whose __eq__ raised at the stub's or the driver's
            # lookup, maybe after writing a status of its own). A message
            # that is no status makes the cell's outcome one no runner or
            # host takes, whatever a cell's code wrote before it.
            write(status_fd, b"F")
            return
        elif m == "cf-driver":
            if len_(d) != 10:
                raise err("a python session cell's driver was tampered with")
            i = 0
            while i < 8:
                if item(d, i + 1) is not item(driver_tools, i):
                    raise err("a python session cell's driver was tampered with")
                i += 1
            b = item(d, 9)
            if T(b) is bytes_ and len_(b) > 43:
                n = from_bytes(b[:8], "big")
                if n > last[0] and same(mac(subkey, b[:-32], "sha256"), b[-32:]):
                    last[0] = n
                    current[0] = b[11:-32]
                    return
        else:
            return
        raise err("a python session cell's driver was tampered with")

    def hook(event, args):
        # The collector runs finalizers (a cell's code) at any allocation of
        # a tracked object, and one that ran inside the hook read subkey
        # from vouch's closure through the hook's frame (a drivertest
        # forgery: objects made by has_code's marshal.loads collected it):
        # it is off while the hook checks.
        if not gc_enabled():
            return check(event, args)
        gc_off()
        try:
            return check(event, args)
        finally:
            gc_on()

    def check(event, args):
        if event == "object.__getattr__":
            if len_(args) == 2 and T(item(args, 0)) is func_t and T(item(args, 1)) is str_ and item(args, 1) == "__code__":
                vouch(item(args, 0))
            return
        if event in blocked or event[:7] == "ctypes.":
            if event[:7] == "os.fork":
                raise err("os.fork() is not available in a python session cell (cells run in a "
                          "subinterpreter); use subprocess")
            raise err(event + " is not available in a python session cell: it could reach the kernel "
                      "that reports later cells' outcomes")
        if event == "open":
            p = exact(args[0]) if args else None
            if p is None or T(p) is int_:
                return  # a descriptor already open (open() converts path objects before this event)
            if mem(p):
                raise err("a process's memory cannot be opened in a python session cell")
            if T(p) is str_ and p[-4:] == ".pyc":
                if system(p):
                    pyc[ident()] = p
                elif "/__pycache__/" in p:
                    # importlib compiles the source instead.
                    raise denied(13, "a .pyc outside /usr is not loaded in a python session cell", p)
        elif event == "marshal.loads":
            me = ident()
            if inner[0] == me:
                return  # has_code's own
            d = args[0]  # bytes the event made from the buffer: no cell's class
            if d == current[0]:
                return  # the cell of the request vouched for last (vouch)
            p = pyc.pop(me, None)
            if p is not None:
                try:
                    with fileio(p) as f:
                        body = f.readall()[16:]
                except base_exc:
                    body = None
                pyc.pop(me, None)  # set again by fileio's own open
                if body == d:
                    return  # a system .pyc, as it is on disk
            if has_code(d):
                raise err("loading code objects with marshal is not available in a python session cell: "
                          "crafted bytecode could read the kernel's memory")
        elif event == "code.__new__":
            if getframe(2).f_code is not coroutine:  # above check and hook: types.coroutine sets a flag, no more
                raise err("making code objects (CodeType, code.replace) is not available in a python "
                          "session cell: crafted bytecode could read the kernel's memory")
        elif event == "import":
            m = exact(args[0]) if args else None
            if T(m) is str_ and (m[:5] == "_test" or m == "_ctypes_test" or m == "_xxtestfuzz"):
                # CPython's test modules make code objects and read marshal
                # data through C calls no event reports.
                raise err("CPython's test module " + m + " is not available in a python session cell")
            if len_(args) > 1 and args[1] is not None:
                p = exact(args[1])
                if T(p) is not str_ or not system(p):
                    raise err("extension modules load only from /usr in a python session cell (one the "
                              "session built could read the kernel's memory): " +
                              (p if T(p) is str_ else "?"))
        elif event == "os.symlink" and args:
            p = exact(args[0])
            if T(p) is bytes_:
                p = p.decode("utf-8", "surrogateescape")
            if T(p) is str_ and (p == "mem" or p[-4:] == "/mem" or p[-5:] == "/mem/"):
                raise err("a link to a process's memory cannot be made in a python session cell")

    sys.addaudithook(hook)
    sys.dont_write_bytecode = True  # a .pyc a session wrote would not be loaded (hook)

    # Setting no trace function where there is none changes nothing, and
    # doctest does it after every example: such calls pass without the
    # refused one (the hook refuses any other, however it is reached).
    def quiet(real, get):
        def set_(fn):
            if fn is None and get() is None:
                return None
            return real(fn)
        set_.__name__ = real.__name__
        return set_

    sys.settrace = quiet(sys.settrace, sys.gettrace)
    sys.setprofile = quiet(sys.setprofile, sys.getprofile)
    so = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
    se = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                          errors="backslashreplace", line_buffering=True)
    si = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdin, sys.stdout, sys.stderr = si, so, se
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = si, so, se
    sys._codefeedback_stdio = so, se  # what each cell starts with (KERNEL_DRIVER)
    sys.path.insert(0, scratch)
    sys._codefeedback_statement = re.compile(pattern).match
    return driver_code


# The stub runs it from here: a cell that rebinds the name has its next
# cell fail the hook's vouch (by identity), as tampered with.
__cf_C = _setup(__cf_scratch, __cf_pattern, __cf_d0, __cf_sk, __cf_sf)
del _setup, __cf_scratch, __cf_pattern, __cf_d0, __cf_sk, __cf_sf
"""

# Run for each cell, in the cells' namespace: short, since the
# subinterpreter compiles it every time (3.11's run_string takes source
# only). Every name it reads a cell can rebind, so it has the hook vouch
# (KERNEL_SETUP's vouch) for exec and the driver's code object, both bound
# once as the outer lambda's arguments, before it runs the driver with
# them. A bare except: nothing it runs may raise out of run_string (a
# RunFailedError a cell patched would run its code in the loop's
# interpreter). The except clause has the hook write a message that is no
# status ("cf-fail"): a cell's key in the namespace whose __eq__ writes a
# status of its own and then raises, at a lookup before the driver writes
# its status, left that one status alone before the loop's end, and the
# runner took it (a drivertest forgery). It names nothing a cell can bind.
KERNEL_STUB = """try:(lambda E,D:(lambda m="cf-stub",e=E,d=D:0).__code__ and E(D,{}))(exec,__cf_C)
except:(lambda m="cf-fail":0).__code__
"""

# The driver (see the section's comment). It trusts only what it checks:
# C functions by type, name and module, classes by being static (no cell
# makes one), and data it holds in immutable objects before any code of
# a cell's can run.
KERNEL_DRIVER = r'''
def _cell():
    T = (0).__class__.__class__
    B = (0).__round__.__class__
    TD = T.__dict__
    MRO, FLAGS, NAME, DICT = TD["__mro__"].__get__, TD["__flags__"].__get__, TD["__name__"].__get__, TD["__dict__"].__get__
    INT, TUPLE, FT = (0).__class__, ().__class__, (lambda: 0).__class__

    def static(c, name):
        return T(c) is T and not FLAGS(c) & 512 and NAME(c) == name

    def base(e, names):
        for c in MRO(T(e)):
            if not FLAGS(c) & 512 and NAME(c) in names:
                return c
        return None

    # Whatever these are, the hook vouches for them below or the cell ends
    # here, with no status: the runner takes the cell as tampered with.
    E, C, V = exec, compile, eval
    S = __import__("sys")
    XI, GF, M = S.exc_info, S._getframe, S.modules
    L, TC, W = M["marshal"].loads, M["_thread"]._count, M["posix"].write
    g = GF(1).f_globals  # the stub's: the cells' namespace
    pop = {}.__class__.pop
    blob = pop(g, "__cf_b", None)
    (lambda m="cf-driver", a=E, b=C, c=V, d=L, e=XI, f=TC, h=W, i=GF, k=blob: 0).__code__
    S, bm, M = XI.__self__, E.__self__, None
    # The request's kind, the status socket and the cell come from the
    # request the hook vouched for, never from the namespace: a key there
    # that answers for "__cf_f" would send the status elsewhere while its
    # __eq__ wrote one of its own.
    kind, fd = blob[8:9], INT.from_bytes(blob[9:11], "big")
    cell = L(blob[11:-32])
    name, code = cell[0], cell[1]
    lines = TUPLE(code.splitlines(True))  # a tuple: what linecache holds (a cell's to change) is a copy
    body = last = res = None
    rc, compiling = 1, kind == b"s"
    try:
        S.stdout, S.stderr = S.__dict__["_codefeedback_stdio"]
    except:
        pass
    try:
        __import__("linecache").cache[name] = (len(code), None, [*lines], name)
    except:
        pass
    try:
        if compiling:
            errs = (bm.SyntaxError, bm.ValueError, bm.Warning)
            if static(errs[0], "SyntaxError") and static(errs[1], "ValueError") and static(errs[2], "Warning"):
                # Warnings are errors while compiling, in a warnings module of
                # this cell's compile only: the runner's compile shows them.
                warnings = T(S)("warnings")
                warnings.filters = [("ignore", None, bm.DeprecationWarning, None, 0),
                                    ("ignore", None, bm.PendingDeprecationWarning, None, 0),
                                    ("ignore", None, bm.ImportWarning, None, 0),
                                    ("ignore", None, bm.ResourceWarning, None, 0),
                                    ("error", None, bm.Warning, None, 0)]
                modules = S.modules
                real = modules.get("warnings")
                modules["warnings"] = warnings
                match = S.__dict__.get("_codefeedback_statement")
                if B not in MRO(T(match)):  # a pattern's match is a builtin_method
                    match = lambda s: False
                try:
                    # "<compile_fast>" is compile_fast's code object in the
                    # driver as the runner marshals it (kernel_code).
                    res = FT("<compile_fast>", {})(code, TUPLE(lines), name, C, match, errs, TUPLE.__len__)
                finally:
                    if real is None:
                        modules.pop("warnings", None)
                    else:
                        modules["warnings"] = real
                    real = warnings = modules = None
            compiling = False
            if res is not None:
                body, last = TUPLE(res[0]), res[1]
        else:
            body, last = TUPLE(cell[2]), cell[3]
        if body is None:
            rc = -1  # handed back: the runner compiles it (compile_ast)
        else:
            res = cell = None
            for co in body:
                E(co, g)
            if last is not None:
                v = V(last, g)
                if v is not None:
                    g["_"] = v
                    so = S.stdout
                    so.write(repr(v))
                    so.write("\n")
                v = so = None
            rc = 0
    except:
        t, e, tb = XI()
        rc = 1
        se = base(e, ("SystemExit",))
        if se is not None and not compiling:
            c = DICT(se)["code"].__get__(e)
            if c is None:
                rc = 0
            elif INT in MRO(T(c)):
                rc = INT.__and__(c, 255)
            else:
                try:
                    S.stderr.write(str(c) + "\n")
                except:
                    pass
        else:
            try:
                # Past this frame, and compile_fast's: the kernel's code is
                # not the cell's.
                buf = __import__("io").StringIO()
                tb = tb.tb_next
                if compiling and tb is not None:
                    tb = tb.tb_next
                if tb is None:  # the compiler's own error: as exec() of the cell shows it
                    buf.write("Traceback (most recent call last):\n")
                __import__("traceback").print_exception(t, e, tb, file=buf)
                S.stderr.write(buf.getvalue())
            except:
                pass
        t = e = tb = se = c = buf = None
    v = so = body = last = res = cell = None
    for s in ("stdout", "stderr"):
        try:
            getattr(S, s).flush()
        except:
            pass
    # Made before the threads are counted: nothing allocates after, so no
    # finalizer of a cell's runs between the count and the status.
    status = b"A" if rc == -1 else b"R %d" % rc
    if TC() != 0:
        status = b"T"
    W(fd, status)
'''

_KERNEL_CODE = []  # the marshalled driver, made once


def kernel_code():
    """The code object of KERNEL_DRIVER's _cell, marshalled, with
    compile_fast's code object in place of its "<compile_fast>": the
    subinterpreter's setup loads both at once. The stub execs the function's code
    itself, so no name is looked up between the stub and the driver (a
    finalizer that runs at an allocation could plant a key in the driver's
    globals that answers for "_cell")."""
    if not _KERNEL_CODE:
        mod = compile(KERNEL_DRIVER, "<kernel>", "exec")
        cell = [c for c in mod.co_consts if type(c) is type(mod) and c.co_name == "_cell"][0]
        consts = tuple(compile_fast.__code__ if type(c) is str and c == "<compile_fast>" else c for c in cell.co_consts)
        _KERNEL_CODE.append(marshal.dumps(cell.replace(co_consts=consts)))
    return _KERNEL_CODE[0]


# Cells' nonces are cut from a pool of random bytes, one getrandom per 256
# cells: on this path every system call counts (see kernel_call). They need
# not be secret: they only tell one cell's answer from another's.
NONCES = [b"", 0]  # the pool and the next nonce's offset in it


def cell_nonce():
    pool, at = NONCES
    if at + 16 > len(pool):
        pool, at = os.urandom(4096), 0
        NONCES[0] = pool
    NONCES[1] = at + 16
    return pool[at:at + 16]


# The channel to the host (a Unix socket bwrap passes in; None without
# one): where kernel_start hands the host a python kernel, so that cells go
# from the host to the kernel without the runner (Session.direct_end, and
# docs/sandbox.md, "Python cells without the runner").
CHANNEL = [None]


def take_channel(fd):
    """Makes fd (the channel, as the launcher passed it) the runner's
    alone: moved to a high close-on-exec descriptor. Every child the runner
    forks closes it before any code of a run or cell runs (child,
    kernel_child, place_fds, node_session_start), and the runner is not
    dumpable, so no process of the sandbox can reach it through /proc."""
    if CHANNEL[0] is not None:
        return
    high = fcntl_dupfd(fd, 900)
    os.close(fd)
    CHANNEL[0] = socket.socket(fileno=high)
    # As pid 1 the runner reaps orphans when it handles a cell (reap); the
    # host's cells never wake it, so it reaps them as they end.
    signal.signal(signal.SIGCHLD, lambda sig, frame: reap())


def fcntl_dupfd(fd, lowest):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, lowest)


def kernel_start(sess):
    import _hashlib
    sess.open_capture()
    driver = kernel_code()
    key = os.urandom(32)
    req_k, req_r = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    st_k, st_r = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    st_r.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    for f in (sess.so, sess.se):
        f.flush()
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        try:
            kernel_child(sess, req_k.fileno(), st_k.fileno(), key, driver)
        finally:
            os._exit(127)
    gc.unfreeze()
    req_k.close()
    st_k.close()
    WATCHED.add(pid)
    pidfd = os.pidfd_open(pid)
    # One poll set for the kernel's life: building a selector per cell was
    # a tenth of a small cell's cost in the runner.
    waits = select.poll()
    waits.register(st_r, select.POLLIN)
    waits.register(pidfd, select.POLLIN)
    sess.kernel = (pid, req_r, st_r, pidfd, waits, key, _hashlib.hmac_digest)
    if CHANNEL[0] is not None:
        # The host runs this kernel's cells itself (Session.direct): it gets
        # the key, the kernel's pid and the sockets and capture files, on
        # the channel only the runner holds. The runner keeps its own
        # copies for the cells the host hands back.
        CHANNEL[0].sendmsg([key + pid.to_bytes(4, "big")],
                           [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                             array.array("i", [req_r.fileno(), st_r.fileno(), sess.out, sess.err]))])


def kernel_stop(sess):
    k, sess.kernel = sess.kernel, None
    if k is None:
        return
    pid, req, st, pidfd = k[:4]
    for f in (req.close, st.close, lambda: os.close(pidfd)):
        try:
            f()
        except OSError:
            pass
    sigkill(-pid, pid)
    kernel_wait(pid)


def kernel_wait(pid):
    """The kernel's exit status (None when someone else reaped it)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = REAPED.pop(pid, None)
    WATCHED.discard(pid)
    REAPED.pop(pid, None)
    return status


def kernel_call(sess, name, code, compiled=None):
    """Sends one cell: its source for the kernel to compile, or with
    compiled, the (body, last) of compile_ast. Returns ("ok", exit code)
    from the kernel's status, ("ast", None) when the kernel handed a source
    back (compile_fast), ("thread", None) when a thread the cell started
    outlived it, ("tampered", None) when the status cannot be trusted, or
    ("died", wait status or None) when the kernel ended."""
    pid, req, st, pidfd, waits, key, mac = sess.kernel
    nonce = cell_nonce()
    if compiled is None:
        kind, blob = b"s", marshal.dumps((name, code))
    else:
        kind, blob = b"c", marshal.dumps((name, code) + compiled)
    data = memoryview(len(blob).to_bytes(8, "big") + nonce + kind + mac(key, nonce + kind + blob, "sha256") + blob)
    # The kernel is idle, reading: a blocking send does not wait long. A
    # kernel that is gone fails it (no SIGPIPE: the runner would die).
    try:
        while data:
            data = data[req.send(data, socket.MSG_NOSIGNAL):]
    except OSError:
        pass
    end = (b"E" + nonce + mac(key, b"E" + nonce, "sha256"), b"X" + nonce + mac(key, b"X" + nonce, "sha256"))
    got = []
    sfd = st.fileno()
    watch = CELL[0]
    while True:
        try:
            ready = waits.poll(watch.wait_ms() if watch is not None else None)
        except InterruptedError:
            continue
        if not ready:
            watch.check()  # the cell's limits (CellWatch); a kill ends the wait
            continue
        if any(fd == sfd for fd, _ in ready):
            if kernel_messages(st, pid, end, got):
                return kernel_status(got)
        if any(fd == pidfd for fd, _ in ready):
            # A status whose "E" came just before the kernel ended still counts.
            done = kernel_messages(st, pid, end, got)
            sess.kernel = None
            for f in (req.close, st.close, lambda: os.close(pidfd)):
                try:
                    f()
                except OSError:
                    pass
            status = kernel_wait(pid)
            if done:
                st = kernel_status(got)
                if st[0] in ("ok", "tampered"):
                    return st
            return "died", status


def kernel_messages(st, pid, end, got):
    """Reads what is queued on the status socket: the kernel's messages go
    to got until its "E" (or "X") for this cell (end), which returns True;
    others' (a process a cell left) are dropped. False when nothing more is
    queued."""
    while True:
        try:
            data, anc, _, _ = st.recvmsg(256, socket.CMSG_SPACE(12),  # struct ucred: pid, uid, gid
                                         socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False
        if not data:
            return False
        sender = None
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(cdata) >= 12:
                sender = int.from_bytes(cdata[:4], sys.byteorder, signed=True)  # struct ucred's pid
        if sender != pid:
            continue
        if data in end:
            if data == end[1]:  # the kernel found its own interpreter patched
                got.append(b"X")
            return True
        got.append(data)


def kernel_status(got):
    """The cell's outcome from the messages before its "E": exactly one
    status, else ("tampered", None)."""
    if len(got) != 1:
        return "tampered", None
    m = got[0]
    if m == b"A":
        return "ast", None
    if m == b"T":
        return "thread", None
    if m[:2] == b"R " and m[2:].isdigit() and len(m) <= 5:
        return "ok", int(m[2:])
    return "tampered", None


def kernel_child(sess, req_fd, st_fd, key, driver):
    """The kernel process: the session's fds 1 and 2, its two sockets and
    nothing else of the runner's; then the loop, which never returns."""
    os.setsid()
    reset_signals(True)
    prefer_oom_kill()
    # Not dumpable: processes a cell leaves behind cannot read the kernel's
    # memory (its key) through /proc/PID/mem.
    set_dumpable(0)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(sess.out, 1)
    os.dup2(sess.err, 2)
    keep = sorted({req_fd, st_fd})
    lo = 3
    for fd in keep + [1 << 16]:
        if fd > lo:
            os.closerange(lo, fd)
        lo = fd + 1
    for fd in keep:
        os.set_inheritable(fd, False)
    scratch = sess.scratch
    sess = None  # nothing of the runner's session object is needed past here
    exit_ = os._exit
    try:
        kernel_loop(req_fd, st_fd, key, driver, scratch)
    finally:
        exit_(70)


def kernel_loop(req_fd, st_fd, key, driver, scratch):
    """Runs cells in the subinterpreter until the request socket ends.
    Everything it calls is bound here, before the subinterpreter exists:
    a cell can reach this interpreter's modules (through the classes all
    interpreters share) and rebind what they hold."""
    import _hashlib
    import _xxsubinterpreters
    read, write, exit_ = os.read, os.write, os._exit
    run, mac = _xxsubinterpreters.run_string, _hashlib.hmac_digest
    from_bytes, to_bytes, len_, base_exc, os_error = int.from_bytes, int.to_bytes, len, BaseException, OSError
    stub, setup, pattern = KERNEL_STUB, KERNEL_SETUP, STATEMENT_START.pattern
    # A failed run_string raises RunFailedError, a class of this
    # interpreter's that a cell can reach and patch (an __init__ of its
    # own would run here): each cell's run_string starts only while it is
    # as it was made.
    rfe, type_ = _xxsubinterpreters.RunFailedError, type
    rfe_dict, rfe_mro = type.__dict__["__dict__"].__get__, type.__dict__["__mro__"].__get__
    made = tuple(rfe_dict(rfe).items())
    mro, missing = rfe_mro(rfe), object()

    def pristine():
        d = rfe_dict(rfe)
        if len_(d) != len_(made) or rfe_mro(rfe) is not mro or type_(rfe) is not type_:
            return False
        for k, v in made:
            if d.get(k, missing) is not v:
                return False
        return True

    # No finalizer of this interpreter's may run past here (a class a cell
    # patched could have one).
    gc.collect()
    gc.disable()
    sub = _xxsubinterpreters.create(isolated=False)
    # subkey tags each request (a counter, its kind, the marshalled cell)
    # for the subinterpreter's hook, which vouches for it once (vouch) and
    # lets marshal.loads make code objects only from it and the system's
    # .pyc files (the setup loads the driver, which holds compile_fast's
    # code, before it sets the hook).
    subkey, count, fd_bytes = os.urandom(32), 0, to_bytes(st_fd, 2, "big")
    run(sub, setup, {"__cf_scratch": scratch, "__cf_pattern": pattern, "__cf_d0": driver,
                     "__cf_sk": subkey, "__cf_sf": st_fd})
    while True:
        # The request: the marshalled cell's length (8 bytes), the cell's
        # nonce (16 bytes), its kind (b"s": name and source, b"c": name,
        # source and compile_ast's code objects), the HMAC of nonce, kind
        # and cell (32 bytes), then the marshalled cell. A small cell comes
        # in the first read, with its head.
        head, parts, need = b"", [], -1
        while need != 0:
            try:
                if need < 0:
                    chunk = read(req_fd, 65536)
                else:
                    chunk = read(req_fd, need if need < 1048576 else 1048576)
            except os_error:
                exit_(70)  # the socket is gone (a cell closed it): nothing more to run
            except base_exc:
                continue
            if not chunk:
                exit_(0)
            if need < 0:
                head += chunk
                if len_(head) >= 57:
                    need = from_bytes(head[:8], "big") - (len_(head) - 57)
                    parts.append(head[57:])
                    head = head[:57]
            else:
                parts.append(chunk)
                need -= len_(chunk)
        nonce, kind, tag = head[8:24], head[24:25], head[25:57]
        blob = b"".join(parts)
        parts = head = chunk = None
        if mac(key, nonce + kind + blob, "sha256") != tag:
            exit_(70)  # not the runner's: the request socket was swapped
        if not pristine():
            # Say so, under the key: the runner fails the cell as tampered with.
            try:
                write(st_fd, b"X" + nonce + mac(key, b"X" + nonce, "sha256"))
            finally:
                exit_(70)
        # For the hook (vouch): a counter it has not seen, the kind, the
        # status socket and the marshalled cell, tagged under subkey.
        count += 1
        blob = to_bytes(count, 8, "big") + kind + fd_bytes + blob
        try:
            run(sub, stub, {"__cf_b": blob + mac(subkey, blob, "sha256")})
        except base_exc:
            exit_(70)
        blob = None
        end = b"E" + nonce + mac(key, b"E" + nonce, "sha256")
        while True:
            try:
                write(st_fd, end)
                break
            except os_error:
                exit_(70)
            except base_exc:
                continue

# Size past which a session's capture file is truncated before a cell.
CAPTURE_ROTATE = 8 << 20


class Session:
    def __init__(self, req):
        self.lang = req.get("lang")
        self.files = req.get("files") or {}
        self.limits = req.get("limits") or {}
        self.cap = int(self.limits.get("output_bytes") or 65536)
        self.n = 0
        self.out = self.err = None
        self.prologue = None  # bash: the sealed prologue (bash_prologue)
        self.bash_state = None  # bash: (restore, functions) of the last saved state
        self.bash_known = {}  # bash: checked function bodies (bash_check_functions)
        self.trap_echo = None
        self.kernel = None  # python: (pid, request socket, status socket, pidfd, poll set)
        self.pid1 = os.getpid() == 1  # the runner reaps orphans as pid 1
        if self.lang == "javascript":
            lang_set_limits("javascript", self.limits, cpu=False)  # langs.py: V8 needs RLIMIT_DATA
        else:
            set_limits(self.limits, cpu=False)
        self.start()

    def start(self):
        os.makedirs(ROOT, mode=0o700, exist_ok=True)  # a cell may have removed it
        self.scratch = tempfile.mkdtemp(prefix="scratch-", dir=ROOT)
        write_files(self.scratch, self.files)
        os.chdir(self.scratch)
        os.environ.clear()
        os.environ.update(child_env(self.scratch))
        if self.lang == "bash":
            self.set_bash_state(None)
        import types
        mod = types.ModuleType("__main__")
        mod.__builtins__ = __builtins__
        sys.modules["__main__"] = mod
        self.globals = mod.__dict__
        self.db = open_db(self.scratch) if self.lang == "sql" else None
        if self.lang == "python":
            sys.path.insert(0, self.scratch)
            kernel_start(self)  # the cells' own process; the runner stays out of their reach
        if self.lang == "javascript":
            node_session_start(self)  # langs.py

    def reset(self):
        if self.db is not None:
            self.db.close()
        if self.lang == "python" and self.scratch in sys.path:
            sys.path.remove(self.scratch)
        os.chdir("/")
        if self.lang == "javascript":
            node_session_stop(self)  # langs.py
        if self.lang == "python":
            kernel_stop(self)
        sweep(-1)
        remove_tree(self.scratch)
        self.start()

    def open_capture(self):
        """Puts fd 1 and 2 on the capture files, for the whole session (the
        protocol uses other descriptors)."""
        if self.out is not None:
            return
        self.out = capture_file("stdout")
        self.err = capture_file("stderr")
        os.dup2(self.out, 1)
        os.dup2(self.err, 2)
        self.so = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
        self.se = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                   errors="backslashreplace", line_buffering=True)

    def cell(self, req):
        if self.pid1:
            reap()
        # A direct session's host numbers its cells (it runs most of them
        # without the runner): the names in tracebacks stay <cell-N>.
        self.n = int(req["n"]) if req.get("n") else self.n + 1
        code = req.get("code", "")
        self.open_capture()
        # A cell's output is what its capture files gained: they are only
        # appended to (O_APPEND) and truncated once they grow large, since
        # truncating them for every cell cost more than the cell's I/O.
        # Bytes a leftover process wrote between cells are skipped, as a
        # truncation would drop them.
        begin = []
        for fd in (self.out, self.err):
            size = os.fstat(fd).st_size
            if size > CAPTURE_ROTATE:
                os.ftruncate(fd, 0)
                size = 0
            begin.append(size)
        ooms = oom_kills()
        rc, sig = 0, ""
        died = False
        watch = CellWatch(self.limits, timer=self.lang != "python")
        start = watch.start
        try:
            if self.lang == "python":
                rc, sig, died = self.python_cell(code, begin, bool(req.get("ast")))
            elif self.lang == "bash":
                rc, sig = self.bash_cell(code)
                if self.cell_seconds is not None:
                    start = time.monotonic() - self.cell_seconds
            elif self.lang == "javascript":
                rc, sig, died = node_session_cell(self, code)  # langs.py
                # Stopped at a limit, the session starts again empty (cell_result).
                died = died and not cell_over()
            elif self.lang == "sql":
                rc = run_sql(self.db, code, self.so, self.se)
                self.so.flush()
                self.se.flush()
        finally:
            watch.stop()
        if self.lang != "bash":  # bash_cell did, before it read the state
            self.end_strays()
        duration = time.monotonic() - start
        return self.cell_result(req, begin, ooms, rc, sig, died, watch.over, watch.over and watch.note(), duration)

    def end_strays(self):
        """No process outlives its cell: what a cell left running (setsid,
        a double fork, nohup) is SIGKILLed as the cell ends, before its
        result is read; only the session's kernel (python, node) stays.
        A process left behind would keep the capture files, where it
        could rewrite a later cell's output, and would use CPU between
        cells, which no cell's limit counts. (bash: the cell's bash has
        exited; sql runs in the runner.)"""
        keep = ()
        if self.kernel is not None:
            keep = (self.kernel[0],)
        node = getattr(self, "node", None)
        if node is not None:
            keep = (node[0],)
        sweep(-1, keep)

    def cell_result(self, req, begin, ooms, rc, sig, died, over, note, duration):
        """The cell's result: its status, what its capture files gained
        since begin, and whether the cgroup OOM-killed something since
        ooms was read. over: the limit it passed (its note is written)."""
        res = {"id": req.get("id"), "exit_code": rc, "signal": sig, "timed_out": False,
               "oom": False, "killed": bool(sig) or died, "duration_ns": int(duration * 1e9)}
        if over:
            # Stopped at a limit: whatever the cell's processes died of,
            # it is a timeout, and the session starts again empty (a python
            # kernel that died was restarted already).
            if not died:
                self.reset()
            os.write(self.err, note.encode())
            res.update(exit_code=128 + signal.SIGKILL, signal="SIGKILL", timed_out=True, killed=True,
                       time_limit=over)
        for (key, fd), at in zip((("stdout", self.out), ("stderr", self.err)), begin):
            size = os.fstat(fd).st_size
            if size < at:  # the cell truncated its own stream
                at = 0
            size -= at
            echo = self.trap_echo
            if echo and size >= len(echo) and os.pread(fd, len(echo), at + size - len(echo)) == echo:
                size -= len(echo)  # set -v's echo of the bash trap (bash_trap)
            data = os.pread(fd, min(self.cap, size), at) if size > 0 else b""
            res[key] = decode(data, self.cap, size > self.cap)
            res[key + "_truncated"] = size > self.cap
        if rc != 0 and "MemoryError" in res["stderr"][-4096:]:
            res["oom"] = True
        if not over and oom_killed_since(ooms, sig == "SIGKILL" or rc == 137):
            res["oom"] = True
        return res

    def direct_end(self, req):
        """Ends a python cell the host ran on the kernel itself (through
        the channel, take_channel) where only the runner can: the kernel
        died during it, its status was a thread's or could not be trusted,
        or the cell passed a limit (the host reads the instance's counters).
        The same kills, notes, restart and result as a cell of the
        runner's own (cell). begin and ooms: what the host read before the
        cell."""
        self.n = int(req.get("n") or self.n)
        begin = [int(x) for x in req.get("begin") or (0, 0)]
        what = req.get("what")
        over = note = None
        if what in ("cpu", "wall"):
            kill_others()
            kernel_stop(self)
            self.reset()
            over, note = what, cell_note(what, self.limits)
            rc, sig, died = 128 + signal.SIGKILL, "SIGKILL", True
        elif what == "died":
            k, self.kernel = self.kernel, None
            status = None
            if k is not None:
                for f in (k[1].close, k[2].close, lambda: os.close(k[3])):
                    try:
                        f()
                    except OSError:
                        pass
                status = kernel_wait(k[0])
            rc, sig, died = self.kernel_died(status)
        else:
            rc, sig, died = self.kernel_refused(what)
        return self.cell_result(req, begin, req.get("ooms"), rc, sig, died, over, note,
                                int(req.get("duration_ns") or 0) / 1e9)

    def python_cell(self, code, begin, handed_back=False):
        """Runs the cell in the session's kernel process (kernel_loop),
        which compiles it and reports its exit status; a cell the kernel
        hands back is compiled here. begin: the capture files' sizes before
        the cell; handed_back: the kernel handed it back to the host (the
        direct path), so it is compiled here at once. Returns (exit code,
        signal name, whether the kernel died and the session was
        restarted)."""
        name = "<cell-%d>" % self.n
        if self.kernel is not None and self.kernel_ended():
            # The kernel ended between cells (a signal from a process an
            # earlier cell left, say): not this cell's doing. It runs in
            # a fresh session, and says so.
            kernel_stop(self)
            os.write(self.err, b"[sandbox: the session's process ended between cells; "
                     b"the session was restarted and its state is lost]\n")
            self.reset()
            handed_back = False
        if self.kernel is None:
            kernel_start(self)
        if handed_back:
            status = ("ast", None)
        else:
            status = kernel_call(self, name, code) if code.isascii() else None
        if status is None or status[0] == "ast":
            try:
                if status is None:
                    compiled = compile_here(code, name)
                else:
                    # What the kernel wrote while compiling (a warning of a
                    # part it compiled) goes: the AST compiles the cell
                    # here once, and reports its warnings and errors once.
                    for fd, at in zip((self.out, self.err), begin):
                        os.ftruncate(fd, at)
                    compiled = compile_ast(code, name)
            except (SyntaxError, ValueError) as e:
                import linecache
                linecache.cache[name] = (len(code), None, code.splitlines(True), name)
                sys.stdout, sys.stderr = self.so, self.se
                try:
                    print_exception(e, 99)
                finally:
                    self.se.flush()
                    linecache.cache.pop(name, None)
                return 1, "", False
            status = kernel_call(self, name, code, compiled)
        if status[0] == "ok":
            return status[1], "", False
        if status[0] in ("thread", "tampered"):
            return self.kernel_refused(status[0])
        return self.kernel_died(status[1])

    def kernel_refused(self, what):
        """The kernel cannot run a later cell (what: "thread", one still
        runs), or its status for this one is not the driver's alone
        ("tampered"): the cell fails, and the session starts again empty."""
        if what == "thread":
            note = (b"[sandbox: a thread the cell started was still running when it ended; a python "
                    b"session cell must end its threads (join them, or use an executor in a with "
                    b"block). The session was restarted and its state is lost]\n")
        else:
            note = (b"[sandbox: the cell's exit status could not be trusted (the kernel's messages "
                    b"were tampered with); the session was restarted and its state is lost]\n")
        os.write(self.err, note)
        self.reset()
        return 1, "", True

    def kernel_died(self, st):
        """The kernel ended during the cell (os._exit, a crash, the OOM
        killer; st its wait status, None when unknown): its status is the
        cell's, and the session starts again empty, as a notebook whose
        kernel died."""
        if st is None:
            rc, sig, what = 137, "SIGKILL", "ended"
        elif os.WIFSIGNALED(st):
            rc, sig = 128 + os.WTERMSIG(st), signame(os.WTERMSIG(st))
            what = "was killed by %s" % sig
        else:
            rc, sig, what = os.WEXITSTATUS(st), "", "exited with status %d" % os.WEXITSTATUS(st)
        if not cell_over():  # else the cell's note names the limit (cell)
            note = "[sandbox: the cell's process %s; the session was restarted and its state is lost]\n" % what
            os.write(self.err, note.encode())
        self.reset()
        return rc, sig, True

    def kernel_ended(self):
        """Whether the kernel ended between cells. As pid 1 the runner has
        just reaped (cell), and a kernel that ended is in REAPED: no poll
        of its pidfd, a system call per cell, is needed."""
        if self.pid1:
            return self.kernel[0] in REAPED
        return any(fd == self.kernel[3] for fd, _ in self.kernel[4].poll(0))

    def set_bash_state(self, state):
        """Makes state ((restore, functions), None for a fresh shell) the
        next cell's, in a new sealed prologue when it changed."""
        if state is None:
            state = (b"builtin shopt -u extglob\n", b"")
        if state == self.bash_state and self.prologue is not None:
            return
        if self.prologue is not None:
            os.close(self.prologue)
        self.bash_state = state
        self.prologue = sealed_file("prologue", bash_prologue(bash_fds(), *state))

    def bash_cell(self, code):
        fds = bash_fds()
        if self.trap_echo is None:
            self.trap_echo = (bash_trap(fds[2]) + "\n").encode()
        # An argument cannot hold a NUL byte, and bash drops those it reads.
        src = code.encode("utf-8", "surrogatepass").replace(b"\0", b"")
        new = anon_file("state")
        pairs = {fds[0]: self.prologue, fds[2]: new}
        exe = bash_exe()
        exe_at = None
        if exe is not None:
            exe_at = 3
            while exe_at in fds:
                exe_at += 1
            pairs[exe_at] = exe
        big = None
        argv = ["/bin/bash", "-c", src]
        if len(src) > BASH_ARG_MAX:
            big = sealed_file("cell", src)
            pairs[fds[3]] = big
            if b"builtin () \n" in self.bash_state[1]:
                # The state's own builtin would run the wrapper: the cell
                # runs as a file (its errors then name that file).
                argv = ["/bin/bash", "/proc/self/fd/%d" % fds[3]]
            else:
                argv = ["/bin/bash", "-c", BASH_BIG_CELL % {b"fd": fds[3]}]
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                reset_signals(False)
                prefer_oom_kill()
                os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
                place_fds(pairs)
                try:
                    os.getcwd()
                except OSError:
                    # An earlier cell removed the directory the runner is
                    # in (rm -rf /tmp/*): a fresh bash started there would
                    # begin every cell with "shell-init: error retrieving
                    # current directory"; the saved cwd is restored if it
                    # still exists.
                    os.chdir("/")
                env = dict(os.environ)
                env["BASH_ENV"] = "/proc/self/fd/%d" % fds[0]
                if exe_at is not None:
                    os.set_inheritable(exe_at, False)  # bash must not hold its own file
                    os.execve(exe_at, argv, env)
                os.execve("/bin/bash", argv, env)
            finally:
                os._exit(127)
        if big is not None:
            os.close(big)
        _, status = os.waitpid(pid, 0)
        # Before the state is read and checked (by a bash of the runner's):
        # no process of the cell is left to change either.
        self.end_strays()
        self.cell_seconds = None
        try:
            size = os.fstat(new).st_size
            data = os.pread(new, min(size, BASH_STATE_MAX), 0) if size <= BASH_STATE_MAX else b""
        except OSError:
            data = b""
        os.close(new)
        start, _, rest = data.partition(b"\n")
        st = bash_parse(rest) if start.startswith(b"#") else None
        if st is not None:
            try:
                if st["end"] is not None:
                    self.cell_seconds = max(0.0, st["end"] - float(start[1:]))
            except ValueError:
                pass
            st["functions"] = bash_check_functions(bash_split_functions(st), self.bash_known)
            self.set_bash_state(bash_restore(st))
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status), signame(os.WTERMSIG(status))
        return os.WEXITSTATUS(status), ""


# The largest state a bash cell may save; past it the last state is kept.
BASH_STATE_MAX = 64 << 20

BASH_EXE = [None]  # an O_PATH descriptor of the execute-only bash (bash_exe)


def bash_exe():
    """An O_PATH descriptor of a sealed memfd copy of /bin/bash with mode
    0111, made once per runner, for bash cells to start from (fexecve): a
    process started from a file it cannot read is not dumpable, so no
    other process of the sandbox (one a cell started) can open its
    /proc/PID/mem or /proc/PID/fd and change its exit status or output,
    as node's kernel starts from an execute-only binary. The memfd has no
    path, no process but the runner holds it, and the mode is checked
    before each use. None where it cannot be made (no memfd, or exec of
    memfds forbidden): /bin/bash itself, dumpable, is used then."""
    import fcntl
    fd = BASH_EXE[0]
    if fd is not None:
        try:
            if os.fstat(fd).st_mode & 0o7777 == 0o111:
                return fd
        except OSError:
            pass
        BASH_EXE[0] = None
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        mfd = os.memfd_create("bash", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        return None
    try:
        with open("/bin/bash", "rb") as f:
            view = memoryview(f.read())
        while view:
            view = view[os.write(mfd, view):]
        fcntl.fcntl(mfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
        os.fchmod(mfd, 0o111)
        # exec refuses a file open for writing (ETXTBSY): keep only a
        # path-only descriptor, which needs no permission to open.
        fd = os.open("/proc/self/fd/%d" % mfd, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        os.close(mfd)
    BASH_EXE[0] = fd
    return fd


def sealed_file(name, data):
    """anon_file with data no one can change: a sealed memfd (a process a
    cell leaves behind could otherwise reopen it through /proc and write
    the next cell's prologue), else a read-only unlinked file."""
    import fcntl
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        fd = anon_file(name, data)
        os.fchmod(fd, 0o400)
        return fd
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    return fd


BASELINE = {}


def main():
    global BASELINE
    set_dumpable(0)
    BASELINE = instance_state()
    os.makedirs(ROOT, mode=0o700, exist_ok=True)
    BASELINE["dirs"] = dir_state()  # with ROOT made
    os.chdir(ROOT)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, on_alarm)  # session cells' limits (CellWatch)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, signal.SIG_IGN)
    send({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
          "hash_seed": os.environ.get("PYTHONHASHSEED", "random")})
    session = None
    while True:
        line = P_IN.readline()
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError as e:
            send({"error": "bad request: %s" % e})
            continue
        op = req.get("op")
        try:
            if op == "run":
                res, cleanup = do_run(req)
                send(res)
                if cleanup is not None:
                    send(cleanup())
            elif op == "session":
                if req.get("channel_fd") is not None and req.get("lang") == "python":
                    take_channel(int(req["channel_fd"]))
                session = Session(req)
                send({"id": req.get("id"), "ok": True})
            elif op == "cell" and session is not None:
                send(session.cell(req))
            elif op == "cell_end" and session is not None:
                send(session.direct_end(req))
            elif op == "strays" and session is not None:
                # The host ran a python cell on the kernel itself and saw
                # processes the cell left (Session.end_strays).
                session.end_strays()
                send({"id": req.get("id"), "ok": True})
            elif op == "kernel" and session is not None:
                # The host saw the kernel end just after a cell's status:
                # a fresh one, with the session's files, as the runner's
                # own path does when it sees that (kernel_call).
                kernel_stop(session)
                session.end_strays()  # what the ended kernel's cell left
                kernel_start(session)
                send({"id": req.get("id"), "ok": True})
            elif op == "reset" and session is not None:
                session.reset()
                send({"id": req.get("id"), "ok": True})
            elif op == "langs":
                send({"id": req.get("id"), "ok": True, "langs": lang_list()})  # langs.py
            elif op == "ping":
                send({"id": req.get("id"), "ok": True})
            else:
                send({"id": req.get("id"), "error": "unknown op %r" % op})
        except Exception as e:
            send({"id": req.get("id"), "error": "%s: %s" % (type(e).__name__, e)})


main()
