# codefeedback InterCode python judge, run in a fresh sandbox process.
#
# Two modes, chosen by job.json's "mode":
#
# "record" (untrusted: runs the agent's cells). Replays the agent's cells in a
#   fresh namespace, binds the gold function name to the submitted function,
#   then evaluates each test with every name the test takes from the agent's
#   namespace wrapped so that its return values are recorded (as plain data).
#   Only these recordings leave the process; the test's own verdict here is
#   ignored, so nothing the agent's code does to builtins, modules, the test
#   or this judge can forge a pass: the most it can do is choose the values
#   its functions return, which a hard-coded solution could do anyway.
#
# "judge" (trusted: never runs agent code). Runs the gold solution and each
#   test in fresh namespaces for InterCode's gold outcomes, then each test
#   again with the recorded names replaced by stubs that hand back the
#   recorded values in call order, and prints one verdict per test.
import ast
import builtins
import importlib
import json
import math
import os
import sys

CLEAN_BUILTINS = dict(builtins.__dict__)
MAX_ITEMS = 10000


def encode(v, depth=0):
    """Plain data only, by exact type: an agent's object with a forged
    __eq__ cannot cross into the trusted process."""
    if depth > 50:
        return {"t": "opaque", "v": "deep"}
    t = type(v)
    if v is None or t is bool or t is str:
        return {"t": "j", "v": v}
    if t is int:
        return {"t": "int", "v": str(v)}
    if t is float:
        return {"t": "float", "v": v.hex()}
    if t is complex:
        return {"t": "complex", "v": [v.real.hex(), v.imag.hex()]}
    if t is bytes:
        return {"t": "bytes", "v": v.hex()}
    if t in (list, tuple, set, frozenset):
        items = list(v)[:MAX_ITEMS]
        return {"t": t.__name__, "v": [encode(x, depth + 1) for x in items]}
    if t is dict:
        return {"t": "dict", "v": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in list(v.items())[:MAX_ITEMS]]}
    if t is range:
        return {"t": "range", "v": [v.start, v.stop, v.step]}
    if t.__name__ in ("map", "filter", "zip", "generator", "enumerate", "reversed", "list_iterator",
                      "tuple_iterator", "range_iterator", "dict_keys", "dict_values", "dict_items",
                      "set_iterator", "str_iterator", "itertools.chain") or t.__module__ == "itertools":
        items = []
        for x in v:
            items.append(encode(x, depth + 1))
            if len(items) >= MAX_ITEMS:
                break
        return {"t": "iter", "v": items}
    # Subclasses of plain types (Counter, OrderedDict, namedtuples, an
    # agent's own) cross as their plain base, read with the base's own
    # methods, so an overridden __eq__ or __iter__ stays behind.
    for base, read in ((bool, bool.__bool__), (int, int.__index__), (float, float.__float__),
                       (str, str.__str__), (bytes, bytes.__bytes__ if hasattr(bytes, "__bytes__") else bytes),
                       (dict, lambda d: dict(dict.items(d))), (list, lambda l: list(list.__iter__(l))),
                       (tuple, lambda x: tuple(tuple.__iter__(x))), (set, lambda x: set(set.__iter__(x))),
                       (frozenset, lambda x: frozenset(frozenset.__iter__(x)))):
        if isinstance(v, base):
            try:
                return encode(read(v), depth + 1)
            except BaseException:  # noqa: B902
                break
    return {"t": "opaque", "v": t.__name__}


class Opaque:
    """Stands for a value that is not plain data: equal only to itself."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "<%s>" % self.name


def decode(e):
    t, v = e["t"], e["v"]
    if t == "j":
        return v
    if t == "int":
        return int(v)
    if t == "float":
        return float.fromhex(v)
    if t == "complex":
        return complex(float.fromhex(v[0]), float.fromhex(v[1]))
    if t == "bytes":
        return bytes.fromhex(v)
    if t == "list":
        return [decode(x) for x in v]
    if t == "tuple":
        return tuple(decode(x) for x in v)
    if t == "set":
        return set(decode(x) for x in v)
    if t == "frozenset":
        return frozenset(decode(x) for x in v)
    if t == "dict":
        return {decode(k): decode(x) for k, x in v}
    if t == "range":
        return range(*v)
    if t == "iter":
        return iter([decode(x) for x in v])
    return Opaque(str(v))


def top_names(code):
    """Names the code binds at top level (defs, classes, assignments)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out


def test_names(test, setup_names, gold_names=()):
    """Names a test reads that neither builtins nor the setup code define
    (a builtin the gold solution redefines, like MBPP's own sum, counts)."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.comprehension,)):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    bound.add(n.id)
        elif isinstance(node, ast.Lambda):
            for a in node.args.args:
                bound.add(a.arg)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            n = node.id
            if n in out or n in bound or n in setup_names or (n in CLEAN_BUILTINS and n not in gold_names):
                continue
            out.append(n)
    return out


def outcome(code, ns):
    """InterCode compares each test's execution result: here, no error, or
    the exception's type and message."""
    try:
        exec(compile(code, "<test>", "exec"), ns)
        return ""
    except BaseException as e:  # noqa: B902 - a test's SystemExit is an outcome too
        return "%s: %s" % (type(e).__name__, e)


def fresh_ns():
    return {"__builtins__": dict(CLEAN_BUILTINS), "__name__": "__main__"}


def setup_ns(setup):
    ns = fresh_ns()
    if setup:
        outcome(setup, ns)
    return ns


def record(job, out):
    entry, submitted = job["entry"], job.get("submitted") or job["entry"]
    agent = fresh_ns()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    for i, cell in enumerate(job["cells"]):
        try:
            exec(compile(cell, "<cell-%d>" % (i + 1), "exec"), agent)
        except BaseException:  # noqa: B902 - the session saw the same error and went on
            pass
    # InterCode: `<gold name> = <submitted name>` in the agent's namespace;
    # a missing name leaves whatever the agent bound to the gold name.
    if submitted in agent:
        agent[entry] = agent[submitted]
    setup = job.get("test_setup") or ""
    setup_names = set(setup_ns(setup)) - set(fresh_ns())
    gold_names = top_names(job.get("gold") or "") | {entry}
    for ti, test in enumerate(job["tests"]):
        calls = {}
        ns = setup_ns(setup)
        missing = []
        for name in test_names(test, setup_names, gold_names):
            if name not in agent:
                missing.append(name)
                continue
            v = agent[name]
            if type(v) is type(os):
                # A module the agent imported: the trusted side imports its own.
                calls[name] = [{"module": v.__name__}]
                ns[name] = v
            elif callable(v):
                calls[name] = []

                def wrap(*a, __f=v, __log=calls[name], **kw):
                    try:
                        r = __f(*a, **kw)
                    except BaseException as e:  # noqa: B902
                        if len(__log) < MAX_ITEMS:
                            __log.append({"raise": type(e).__name__, "msg": str(e)[:500]})
                        raise
                    if len(__log) < MAX_ITEMS:
                        __log.append({"ret": encode(r)})
                    return r
                ns[name] = wrap
            else:
                calls[name] = [{"value": encode(v)}]
                ns[name] = v
        outcome(test, ns)
        line = json.dumps({"test": ti, "calls": calls, "missing": missing}, allow_nan=True)
        os.write(out, (line + "\n").encode())


class Replay:
    def __init__(self, name, log):
        self.name, self.log, self.i = name, log, 0

    def __call__(self, *a, **kw):
        if self.i >= len(self.log):
            raise RuntimeError("%s called more often than recorded" % self.name)
        e = self.log[self.i]
        self.i += 1
        if "raise" in e:
            exc = getattr(builtins, e["raise"], None)
            if not (isinstance(exc, type) and issubclass(exc, BaseException)):
                exc = RuntimeError
            raise exc(e["msg"])
        return decode(e["ret"])


def judge(job, out):
    setup = job.get("test_setup") or ""
    gold_ns = setup_ns(setup)
    gold_err = outcome(job["gold"], gold_ns)
    gold = [outcome(t, gold_ns) for t in job["tests"]]
    recs = {r["test"]: r for r in job.get("records") or []}
    verdicts = []
    for ti, test in enumerate(job["tests"]):
        r = recs.get(ti)
        if r is None:
            got = "no record (the submission's run ended before this test)"
        elif r.get("missing"):
            got = "NameError: name %r is not defined" % r["missing"][0]
        else:
            ns = setup_ns(setup)
            for name, log in r["calls"].items():
                if len(log) == 1 and "module" in log[0]:
                    try:
                        ns[name] = importlib.import_module(log[0]["module"])
                    except BaseException:  # noqa: B902
                        ns[name] = Opaque(log[0]["module"])
                elif len(log) == 1 and "value" in log[0]:
                    ns[name] = decode(log[0]["value"])
                else:
                    ns[name] = Replay(name, log)
            got = outcome(test, ns)
        verdicts.append({"test": test, "got": got, "gold": gold[ti], "pass": got == gold[ti]})
    os.write(out, (json.dumps({"verdicts": verdicts, "gold_error": gold_err}) + "\n").encode())


def main():
    with open("job.json", encoding="utf-8") as f:
        job = json.load(f)
    out = os.dup(1)
    if job["mode"] == "record":
        record(job, out)
    else:
        judge(job, out)
    os._exit(0)


main()
