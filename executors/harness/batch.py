# codefeedback batch judge (executors/harness, batch.go). One sandbox run
# judges several candidates of one problem with the judge (judge.py) loaded
# once, each in the same interpreter, instead of one forked run each: on a
# virtual machine a fork's copy-on-write faults cost more than judging a
# small MBPP candidate. The items are given ({code, group, accept, gate}),
# or made in the run by a prelude's cf_items(arg), which returns (data for
# the caller, items). Each item's payload is the problem's template with its
# code and the marker "<batch marker>.<i>": the payload its own program
# has, apart from the marker. Its judge writes its records into a private
# file; the batch passes them on and adds one status line per item:
#   <batch marker> data <json>    once each, when a prelude made the items
#   <batch marker> items [...]
#   <batch marker> item {"i": N, "clean": true, "seconds": S, "observed": "..."}
#   <batch marker> skip {"i": N}
# An item is clean only when nothing in its run could differ from a run of
# its own program in a fresh process: it reached the judge's end, wrote
# nothing to stderr, left os._exit alone, and no test timed out (the timer
# here is shorter than the program's) or ran out of stack or memory.
# Whatever is not clean is judged again on its own by the caller.


def _cf_batch(B):
    import gc
    import os
    import signal
    import sys
    import tempfile
    import time

    judge = _cf_boot()
    bm = B["marker"]
    quota = B["quota"]
    counts = {}
    real_exit = os._exit
    limit0 = sys.getrecursionlimit()
    stdin0, stdout0, stderr0 = sys.stdin, sys.stdout, sys.stderr
    main0 = sys.modules.get("__main__")

    class _BatchExit(BaseException):
        pass

    def put(b):
        while b:
            n = os.write(1, b)
            b = b[n:]

    def status(kind, rec):
        import json
        put((bm + " " + kind + " " + json.dumps(rec) + "\n").encode())

    def observed(marker, data):
        # Verdict.Outcome (harness.go) on the judge's records, module prefix
        # dropped as correct's newRun does.
        import json
        plan = load = None
        cases = {}
        done = False
        pre = (marker + " ").encode()
        for line in data.split(b"\n"):
            if not line.startswith(pre):
                continue
            kind, _, body = line[len(pre):].decode("utf-8", "replace").partition(" ")
            try:
                rec = json.loads(body)
            except ValueError:
                continue
            if kind == "plan" and plan is None:
                plan = rec
            elif kind == "load" and load is None:
                load = rec
            elif kind == "case":
                cases.setdefault(rec.get("i"), rec)
            elif kind == "done" and plan is not None and load is not None:
                done = True
        if not done:
            return None, False
        n = len(plan.get("cases") or [])
        out = None
        if not load.get("ok"):
            out = "timeout" if load.get("kind") == "timeout" else (load.get("exception") or "error")
        else:
            for i in range(n):
                c = cases.get(i)
                if c is None:
                    return None, False
                k = c.get("kind")
                if k == "pass":
                    continue
                out = k if k in ("timeout", "wrong_answer") else (c.get("exception") or "error")
                break
            if out is None:
                out = "pass" if n > 0 else "error"
        bad = out in ("timeout", "RecursionError", "MemoryError") or any(
            c.get("kind") == "timeout" or c.get("exception") in ("RecursionError", "MemoryError")
            for c in cases.values())
        return out.rsplit(".", 1)[-1], not bad

    items = B.get("items")
    if items is None:
        data, items = cf_items(B["arg"])  # noqa: F821 (the prelude's)
        status("data", data)
        status("items", [{"code": it["code"], "group": it.get("group") or "",
                          "accept": list(it.get("accept") or ()), "gate": 1 if it.get("gate") else 0}
                         for it in items])
    for i, item in enumerate(items):
        group = item.get("group") or ""
        if group and counts.get(group, 0) >= quota:
            status("skip", {"i": i})
            continue
        P = dict(B["template"])
        P["code"] = item["code"]
        P["marker"] = "%s.%d" % (bm, i)
        P["case_timeout"] = min(P["case_timeout"], B["case_timeout"])
        exits = []

        def fake_exit(code=0):
            exits.append(code)
            raise _BatchExit()

        out_f = tempfile.TemporaryFile()
        err_f = tempfile.TemporaryFile()
        keep1, keep2 = os.dup(1), os.dup(2)
        fds0 = set(os.listdir("/proc/self/fd"))
        os.dup2(out_f.fileno(), 1)
        os.dup2(err_f.fileno(), 2)
        os._exit = fake_exit
        # Stricter than a run of its own, never looser: the stack here is a
        # few frames deeper or shallower than there.
        sys.setrecursionlimit(max(100, limit0 - 50))
        start = time.monotonic()
        try:
            judge(P)
        except _BatchExit:
            pass
        except BaseException:
            exits.append("judge failed")
        seconds = time.monotonic() - start
        os._exit = real_exit
        try:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)  # the judge's case timer
        except Exception:
            pass
        sys.setrecursionlimit(limit0)
        os.dup2(keep1, 1)
        os.dup2(keep2, 2)
        os.close(keep1)
        os.close(keep2)
        sys.stdin, sys.stdout, sys.stderr = stdin0, stdout0, stderr0
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = stdin0, stdout0, stderr0
        if main0 is not None:
            sys.modules["__main__"] = main0
        # The judge's file objects close their descriptors when collected;
        # what is left is its raw duplicate of the output channel.
        gc.collect()
        for fd in set(os.listdir("/proc/self/fd")) - fds0:
            try:
                os.close(int(fd))
            except (OSError, ValueError):
                pass
        out_f.seek(0)
        data = out_f.read()
        err_f.seek(0, 2)
        wrote_err = err_f.tell() > 0
        out_f.close()
        err_f.close()
        obs, clean = observed(P["marker"], data)
        clean = clean and exits == [0] and not wrote_err
        put(data)
        status("item", {"i": i, "clean": clean, "seconds": round(seconds, 6), "observed": obs})
        # An outcome that proves the group counts even when the caller must
        # confirm it alone: it most likely will.
        if group and obs in item.get("accept", ()):
            counts[group] = counts.get(group, 0) + 1
        if clean and item.get("gate") and obs != "pass":
            break
    sys.stdout.flush()
    real_exit(0)
