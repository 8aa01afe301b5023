
# The edge-input probe (probe.go): appended to the answer's code, with
# _PROBE_TESTS, _PROBE_NAME and _PROBE_KIND ("empty" or "single") set
# before it. It calls the function as the first test does, with the first
# collection argument emptied, or cut to its first element.
def _probe():
    import ast, sys
    call = None
    try:
        tree = ast.parse(_PROBE_TESTS)
    except SyntaxError:
        tree = None
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == _PROBE_NAME and node.args:
            call = node
            break
    try:
        args = [ast.literal_eval(a) for a in call.args] if call else None
    except Exception:
        args = None
    at = None
    for i, a in enumerate(args or ()):
        if isinstance(a, (list, str, tuple, dict, set)):
            at = i
            break
    if at is None or (_PROBE_KIND == "single" and len(args[at]) < 2):
        print("PROBE:none", flush=True)
        return
    a = args[at]
    if _PROBE_KIND == "single":
        if isinstance(a, dict):
            k = next(iter(a))
            args[at] = {k: a[k]}
        elif isinstance(a, set):
            args[at] = {next(iter(a))}
        else:
            args[at] = a[:1]
    else:
        args[at] = type(a)()
    print("PROBE:call %s(%s)" % (_PROBE_NAME, ", ".join(map(repr, args))), flush=True)
    sys.stdout.flush()
    result = globals()[_PROBE_NAME](*args)
    print("PROBE:ok %s" % repr(result)[:200], flush=True)


_probe()
