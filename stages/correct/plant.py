# codefeedback correct: the prelude of a planting batch (dialogue.go,
# harness.JudgeBatchFrom). In one sandbox run it plants the mutants with
# mutate.py (_CF_MUTATE, prepended) and lists what the batch judges: the
# reference solution first (a gate), then the mutants not meant to hang, in
# the order the stage tries them (the same FNV-1a rank), each kind a group
# whose quota the stage's per_kind sets. The stage re-ranks and checks
# everything it is handed; a difference only costs runs.


def cf_items(arg):
    import io
    import json
    import sys

    ns = {"__name__": "cfmutate", "__builtins__": __builtins__}
    exec(compile(_CF_MUTATE, "mutate.py", "exec"), ns)  # noqa: F821 (prepended)
    stdin0, stdout0 = sys.stdin, sys.stdout
    out = io.StringIO()
    sys.stdin, sys.stdout = io.StringIO(json.dumps(arg["request"])), out
    try:
        ns["main"]()
    finally:
        sys.stdin, sys.stdout = stdin0, stdout0
    res = json.loads(out.getvalue())

    def rank(op):
        h = 2166136261
        for b in ("%d\x00%s\x00%s" % (arg["seed"], arg["problem"], op)).encode("utf-8"):
            h = ((h ^ b) * 16777619) & 0xFFFFFFFF
        return h

    items = [{"code": arg["solution"], "gate": 1}]
    for m in sorted(res.get("mutants") or [], key=lambda m: rank(m["operator"])):
        if m["kind"] != "timeout":
            items.append({"code": m["code"], "group": m["kind"], "accept": arg["accept"].get(m["kind"], [])})
    return res, items
