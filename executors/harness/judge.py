# codefeedback test judge (executors/harness). One generated program per
# verdict: this fixed part, then a call with the problem and the candidate as
# literals. It prints nothing of its own except marker lines on the original
# stdout:  <marker> plan|load|case|done <json>
# The candidate's own stdout (including os.write(1, ...) and child processes)
# goes to a private temporary file and is reported inside the "done" record,
# so a candidate that prints a fake marker line or leaves early cannot forge
# a summary: it never reaches the channel the summary travels on.


def _cf_judge(P):
    import ast
    import builtins
    import copy
    import io
    import json
    import linecache
    import operator
    import os
    import signal
    import sys
    import tempfile
    import time
    import traceback
    import types

    # References taken before the candidate runs: it may patch builtins and
    # modules (print, len, json.dumps, sys.exit, os._exit ...).
    _write, _exit, _dup, _dup2, _lseek, _read, _fstat = (
        os.write, os._exit, os.dup, os.dup2, os.lseek, os.read, os.fstat)
    _dumps, _repr, _str, _len, _type, _bool = json.dumps, repr, str, len, type, bool
    _isinstance, _exec, _eval, _compile, _dict, _list = isinstance, exec, eval, compile, dict, list
    # The per-case timer counts the process's CPU time (ITIMER_PROF), as
    # the sandbox's time limit does: a loaded machine stretches wall time,
    # and a test that computes must not time out for it.
    _setitimer, _signal, _ITIMER, _SIGALRM = (
        signal.setitimer, signal.signal, signal.ITIMER_PROF, signal.SIGPROF)
    _extract_tb, _fmt_only = traceback.extract_tb, traceback.format_exception_only
    _StackSummary = traceback.StackSummary
    _AssertionError, _BaseException, _SyntaxError = AssertionError, BaseException, SyntaxError
    _monotonic = time.monotonic
    _setrec, _getrec = sys.setrecursionlimit, sys.getrecursionlimit

    marker = P["marker"]
    vcap = P["value_cap"]
    case_timeout = P["case_timeout"]
    budget = [P["output_budget"]]
    SOL = "solution.py"
    HARNESS = _cf_judge.__code__.co_filename
    started = _monotonic()

    # ---- output channels
    try:
        sys.stdout.flush()
    except Exception:
        pass
    real_fd = _dup(1)  # close-on-exec: the candidate's children do not get it
    cap_file = tempfile.TemporaryFile()
    cap_fd = cap_file.fileno()
    _dup2(cap_fd, 1)
    cand_out = io.TextIOWrapper(io.FileIO(_dup(cap_fd), "w"), encoding="utf-8",
                                errors="backslashreplace", line_buffering=False)
    sys.stdout = sys.__stdout__ = cand_out
    try:
        sys.stdin = io.StringIO("")
    except Exception:
        pass
    if hasattr(signal, "SIGXFSZ"):
        # A write past the file-size limit then fails with an OSError the
        # test reports, instead of killing the judge.
        _signal(signal.SIGXFSZ, signal.SIG_IGN)

    def emit(kind, obj):
        b = (marker + " " + kind + " " + _dumps(obj, ensure_ascii=True) + "\n").encode()
        budget[0] -= _len(b)
        while b:
            n = _write(real_fd, b)
            b = b[n:]

    def trim(s, n):
        if _len(s) <= n:
            return s
        return s[:n] + "...[%d more chars]" % (_len(s) - n)

    def safe_repr(v):
        try:
            return trim(_repr(v), vcap)
        except _BaseException as e:  # a hostile __repr__ is the candidate's problem
            if _isinstance(e, _CaseTimeout):
                raise
            return "<repr() failed: %s>" % _type(e).__name__

    def exc_name(e):
        t = _type(e)
        mod = getattr(t, "__module__", "builtins")
        if mod in ("builtins", "__main__", None):
            return t.__qualname__
        return mod + "." + t.__qualname__

    def exc_msg(e):
        try:
            return trim(_str(e), vcap * 2)
        except _BaseException:
            return "<str() failed>"

    user_files = {SOL}

    def register(name, src):
        user_files.add(name)
        linecache.cache[name] = (_len(src), None, src.splitlines(True), name)

    def fmt_tb(e):
        """The traceback from the first user frame on (harness frames
        dropped), long stacks cut in the middle with a marker."""
        frames = [f for f in _extract_tb(e.__traceback__) if f.filename != HARNESS]
        i = 0
        while i < _len(frames) and frames[i].filename not in user_files:
            i += 1
        frames = frames[i:]
        head = ""
        if _len(frames) > 14:
            cut = _len(frames) - 10
            kept = _list(frames[:4]) + _list(frames[-6:])
            lines = _StackSummary.from_list(kept[:4]).format()
            lines.append("  ... (%d frames omitted) ...\n" % (cut,))
            lines += _StackSummary.from_list(kept[4:]).format()
        else:
            lines = _StackSummary.from_list(frames).format()
        if lines:
            head = "Traceback (most recent call last):\n" + "".join(lines)
        try:
            tail = "".join(_fmt_only(_type(e), e))
        except _BaseException:
            tail = exc_name(e) + "\n"
        return trim(head, 3000) + trim(tail, 1000)

    def sol_line(e):
        """The innermost line of the candidate's code that e passed through, or 0."""
        line = 0
        try:
            for f in _extract_tb(e.__traceback__):
                if f.filename == SOL:
                    line = f.lineno
        except _BaseException:
            pass
        return line

    # ---- per-case guard: a CPU-time timer raising inside the candidate
    class _CaseTimeout(_BaseException):
        pass

    armed = [False]

    def on_alarm(signum, frame):
        if armed[0]:
            raise _CaseTimeout()

    bsnap = _dict(builtins.__dict__)
    rec_limit = _getrec()

    def restore():
        # Undo what the candidate did to shared interpreter state.
        bd = builtins.__dict__
        for k in _list(bd):
            if k not in bsnap:
                del bd[k]
        bd.update(bsnap)
        sys.stdout = sys.__stdout__ = cand_out
        try:
            _setrec(rec_limit)
        except Exception:
            pass

    def guarded(fn):
        """Runs fn under the case timer. Returns (None, None) or
        ("timeout"|"error", exception)."""
        try:
            try:
                _signal(_SIGALRM, on_alarm)
                armed[0] = True
                _setitimer(_ITIMER, case_timeout, 0.05)
                fn()
            finally:
                armed[0] = False
                _setitimer(_ITIMER, 0, 0)
        except _CaseTimeout as e:
            return "timeout", e
        except _BaseException as e:
            return "error", e
        finally:
            try:
                cand_out.flush()
            except _BaseException:
                pass
            restore()
        return None, None

    # ---- assert rewriting: every assert in test code becomes a call that
    # evaluates both sides itself, so failures say expected vs actual and
    # nothing depends on `assert` being enabled (python -O).
    OPS = {"Eq": ("==", operator.eq), "NotEq": ("!=", operator.ne),
           "Lt": ("<", operator.lt), "LtE": ("<=", operator.le),
           "Gt": (">", operator.gt), "GtE": (">=", operator.ge),
           "Is": ("is", operator.is_), "IsNot": ("is not", operator.is_not),
           "In": ("in", lambda a, b: a in b), "NotIn": ("not in", lambda a, b: a not in b)}

    class _TestFailure(_AssertionError):
        # Subclasses AssertionError: test code that catches AssertionError
        # keeps working.
        def __init__(self, info):
            _AssertionError.__init__(self, info.get("message", ""))
            self.info = info

    def cf_cmp(a, b, op, inp, src, swapped):
        sym, fn = OPS[op]
        if _bool(fn(a, b)):
            return
        actual, expected = (b, a) if swapped else (a, b)
        info = {"input": inp, "op": sym, "actual": safe_repr(actual),
                "expected": safe_repr(expected), "src": src}
        raise _TestFailure(info)

    def cf_truth(v, src, msg):
        if _bool(v):
            return
        info = {"src": src}
        if msg is not None:
            try:
                info["message"] = trim(_str(msg()), vcap)
            except _BaseException as e:
                if _isinstance(e, _CaseTimeout):
                    raise
        raise _TestFailure(info)

    def has_call(node):
        return any(_isinstance(n, ast.Call) for n in ast.walk(node))

    class Rename(ast.NodeTransformer):
        def __init__(self, old, new):
            self.old, self.new = old, new

        def visit_Name(self, n):
            if n.id == self.old:
                return ast.copy_location(ast.Name(id=self.new, ctx=n.ctx), n)
            return n

    def show(src, node, rename):
        """Source text of node; with rename (the check() argument and the
        entry point's name) the test reads as a call of the real function."""
        if rename is None:
            s = ast.get_source_segment(src, node)
            if s is not None:
                return s
        elif _isinstance(node, ast.stmt):
            node = Rename(*rename).visit(ast.parse(ast.unparse(node)).body[0])
        else:
            node = Rename(*rename).visit(ast.parse(ast.unparse(node), mode="eval").body)
        return ast.unparse(node)

    class Rewrite(ast.NodeTransformer):
        def __init__(self, src, rename):
            self.src, self.rename = src, rename

        def visit_Assert(self, node):
            self.generic_visit(node)
            src = trim(show(self.src, node, self.rename), 600)
            t = node.test
            if _isinstance(t, ast.Compare) and _len(t.ops) == 1:
                left, right = t.left, t.comparators[0]
                swapped = not has_call(left) and has_call(right)
                inp = trim(show(self.src, right if swapped else left, self.rename), vcap)
                call = ast.Call(func=ast.Name(id="__cf_cmp", ctx=ast.Load()),
                                args=[left, right, ast.Constant(_type(t.ops[0]).__name__),
                                      ast.Constant(inp), ast.Constant(src), ast.Constant(swapped)],
                                keywords=[])
            else:
                msg = ast.Constant(None)
                if node.msg is not None:
                    msg = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                                        kw_defaults=[], defaults=[]),
                                     body=node.msg)
                call = ast.Call(func=ast.Name(id="__cf_truth", ctx=ast.Load()),
                                args=[t, ast.Constant(src), msg], keywords=[])
            return ast.copy_location(ast.Expr(value=call), node)

    def compile_stmts(stmts, src, fname, rename):
        # Rewrite changes nodes in place; the plan still needs the originals.
        mod = ast.Module(body=copy.deepcopy(_list(stmts)), type_ignores=[])
        mod = Rewrite(src, rename).visit(mod)
        ast.fix_missing_locations(mod)
        return _compile(mod, fname, "exec")

    def contains_assert(node):
        return any(_isinstance(n, ast.Assert) for n in ast.walk(node))

    def splittable(body):
        """A check() body can run statement by statement at module level
        unless it returns, yields or declares scopes outside nested defs."""
        stack = _list(body)
        while stack:
            n = stack.pop()
            if _isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global,
                               ast.Nonlocal, ast.Await)):
                return False
            if _isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            stack.extend(ast.iter_child_nodes(n))
        return True

    def group(stmts):
        """Cases: each statement holding an assert, with the statements
        before it that hold none (their set-up) attached."""
        out, pend = [], []
        for s in stmts:
            pend.append(s)
            if contains_assert(s):
                out.append(pend)
                pend = []
        if pend:
            if out:
                out[-1].extend(pend)
            else:
                out.append(pend)
        return out

    # ---- plan: split the tests into cases before anything runs
    entry = P["entry_point"]
    cases = []   # dicts: src, run (callable factory), env ("ns"|"check")
    preludes = []  # (code, fname) test-module statements run once after load
    check_calls = []
    tests = P["tests"]
    for ti, tsrc in enumerate(tests):
        fname = "<test>" if _len(tests) == 1 else "<test %d>" % (ti + 1)
        register(fname, tsrc)
        try:
            tree = ast.parse(tsrc, fname)
        except _SyntaxError as e:
            cases.append({"src": trim(tsrc.strip(), 600), "broken": e})
            continue
        check = None
        for s in tree.body:
            if _isinstance(s, ast.FunctionDef) and s.name == "check":
                check = s
        if check is None:
            for g in group(tree.body):
                src = trim("\n".join(ast.get_source_segment(tsrc, s) or ast.unparse(s) for s in g), 600)
                cases.append({"src": src, "code": compile_stmts(g, tsrc, fname, None), "env": "ns"})
            continue
        # HumanEval / LeetCode style: def check(candidate) + check(entry).
        rest = [s for s in tree.body if s is not check and not (
            _isinstance(s, ast.Expr) and _isinstance(s.value, ast.Call)
            and _isinstance(s.value.func, ast.Name) and s.value.func.id == "check")]
        arg = check.args.args[0].arg if check.args.args else "candidate"
        shown = entry or arg
        preludes.append((compile_stmts(rest + [check], tsrc, fname, None), fname))
        if splittable(check.body) and any(contains_assert(s) for s in check.body):
            for g in group(check.body):
                src = trim("\n".join(show(tsrc, s, (arg, shown)) for s in g), 600)
                cases.append({"src": src, "code": compile_stmts(g, tsrc, fname, (arg, shown)),
                              "env": "check", "arg": arg, "test": ti})
        else:
            cases.append({"src": "check(%s)" % (entry or arg), "env": "call"})
        check_calls.append(True)

    per_src = max(60, 16000 // max(1, _len(cases)))
    emit("plan", {"cases": [trim(c["src"], per_src) for c in cases]})

    # ---- load: setup, candidate, test imports, entry point
    mod = types.ModuleType("__main__")
    ns = mod.__dict__
    ns["__builtins__"] = builtins
    sys.modules["__main__"] = mod

    def setup_needs_candidate(src):
        # MBPP test_setup_code builds objects from classes the solution
        # defines; LeetCode-style set-up is imports. Names the set-up uses
        # but neither defines nor gets from builtins come from the candidate.
        try:
            tree = ast.parse(src)
        except _SyntaxError:
            return False
        defined, used = set(), set()
        for n in ast.walk(tree):
            if _isinstance(n, ast.Name):
                (used if _isinstance(n.ctx, ast.Load) else defined).add(n.id)
            elif _isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(n.name)
            elif _isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    if a.name == "*":
                        return False
                    defined.add((a.asname or a.name).split(".")[0])
            elif _isinstance(n, ast.arg):
                defined.add(n.arg)
        return _bool(used - defined - set(bsnap))

    def is_preamble(src):
        # LeetCodeDataset's prompt is an import preamble the candidate may
        # rely on (List, inf); a HumanEval prompt defines the function and is
        # part of the candidate instead.
        if not src.strip():
            return False
        try:
            tree = ast.parse(src)
        except _SyntaxError:
            return False
        return not any(_isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                       for s in tree.body)

    def load_failure(kind, e, what):
        if kind == "timeout":
            # The judge's own timer is no exception of the code's.
            return {"ok": 0, "kind": kind, "stage": what,
                    "message": "timed out after %gs" % case_timeout}
        rec = {"ok": 0, "kind": kind, "stage": what, "exception": exc_name(e),
               "message": exc_msg(e), "traceback": fmt_tb(e), "line": sol_line(e)}
        if _isinstance(e, _SyntaxError):
            rec["message"] = trim(_str(e.msg), vcap)
            if what == "solution":
                rec["line"] = e.lineno or 0
        return rec

    def run_source(src, fname):
        register(fname, src)
        code = _compile(src, fname, "exec")
        st, e = guarded(lambda: _exec(code, ns))
        return st, e

    load = {"ok": 1}
    setup, setup_after = P["setup"], False
    if setup.strip():
        setup_after = setup_needs_candidate(setup)
    steps = []
    if is_preamble(P["prompt"]):
        steps.append(("prompt", P["prompt"], "prompt.py"))
    if setup.strip() and not setup_after:
        steps.append(("setup", setup, "setup.py"))
    steps.append(("solution", P["code"], SOL))
    if setup.strip() and setup_after:
        steps.append(("setup", setup, "setup.py"))
    if P["test_import"].strip():
        steps.append(("test_import", P["test_import"], "test_imports.py"))
    for what, src, fname in steps:
        try:
            st, e = run_source(src, fname)
        except _SyntaxError as e2:  # compile() of this step
            load = load_failure("syntax" if what == "solution" else "exception", e2, what)
            break
        except ValueError as e2:  # source with NUL bytes
            load = load_failure("exception", e2, what)
            break
        if st is not None:
            kind = "timeout" if st == "timeout" else "exception"
            load = load_failure(kind, e, what)
            if _isinstance(e, SystemExit):
                load["message"] = "the code called exit(%s) before the tests ran" % safe_repr(e.code)
            break
    ns["__cf_cmp"], ns["__cf_truth"] = cf_cmp, cf_truth
    if load["ok"]:
        for code, fname in preludes:
            st, e = guarded(lambda: _exec(code, ns))
            if st is not None:
                load = load_failure("timeout" if st == "timeout" else "exception", e, "tests")
                break
    cand = [None]
    if load["ok"] and check_calls:
        def resolve():
            cand[0] = _eval(_compile(entry, "<entry point>", "eval"), ns)
        if not entry:
            load = {"ok": 0, "kind": "exception", "stage": "entry_point",
                    "exception": "ValueError", "message": "the problem names no entry point"}
        else:
            st, e = guarded(resolve)
            if st is not None:
                load = load_failure("timeout" if st == "timeout" else "exception", e, "entry_point")
    emit("load", load)

    # ---- cases
    envs = {}
    if load["ok"]:
        for i, c in enumerate(cases):
            rec = {"i": i}
            if "broken" in c:
                e = c["broken"]
                rec.update(kind="exception", exception="SyntaxError",
                           message="the test itself does not parse: %s" % exc_msg(e))
                emit("case", rec)
                continue
            if c["env"] == "ns":
                st, e = guarded(lambda: _exec(c["code"], ns))
            elif c["env"] == "check":
                # One module-like dict per check(): the body's statements
                # share their variables across cases, as in the function.
                env = envs.get(c["test"])
                if env is None:
                    env = envs[c["test"]] = _dict(ns)
                    env[c["arg"]] = cand[0]
                st, e = guarded(lambda: _exec(c["code"], env))
            else:
                st, e = guarded(lambda: ns["check"](cand[0]))
            if st is None:
                rec["kind"] = "pass"
            elif st == "timeout":
                rec.update(kind="timeout", message="timed out after %gs" % case_timeout)
            elif _isinstance(e, _TestFailure):
                info = e.info
                rec["kind"] = "wrong_answer"
                rec["exception"] = "AssertionError"
                for k in ("input", "expected", "actual", "op", "message"):
                    if k in info:
                        rec[k] = info[k]
                rec["src"] = info.get("src", c["src"])
            else:
                rec.update(kind="exception", exception=exc_name(e), message=exc_msg(e), line=sol_line(e))
                if budget[0] > 0:
                    rec["traceback"] = fmt_tb(e)
                if _isinstance(e, SystemExit):
                    rec["message"] = "the code called exit(%s) during the test" % safe_repr(e.code)
            if budget[0] <= 0:  # keep the summary inside the output cap
                for k in ("traceback", "src", "message"):
                    rec.pop(k, None)
                for k in ("input", "expected", "actual"):
                    if k in rec:
                        rec[k] = trim(rec[k], 80)
            emit("case", rec)

    # ---- done: the candidate's stdout, cut to its cap
    try:
        cand_out.flush()
    except _BaseException:
        pass
    size = _fstat(cap_fd).st_size
    _lseek(cap_fd, 0, 0)
    data = _read(cap_fd, P["stdout_cap"])
    emit("done", {"stdout": data.decode("utf-8", "replace"), "stdout_bytes": size,
                  "seconds": round(_monotonic() - started, 4)})
    # Leave at once: no atexit hooks, no waiting for the candidate's threads.
    _exit(0)
