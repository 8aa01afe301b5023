# Mutation engine for the "correct" stage. Runs INSIDE the sandbox.
#
# stdin:  {"source": str, "seed": int, "operators": [str] (empty = all), "per_operator": int}
# stdout: {"mutants": [{"operator", "kind", "code", "description", "line"}]}
#         or {"error": str}
#
# Every operator but the syntax ones edits Python's syntax tree positions: it
# finds sites with ast, then splices a small replacement into the original
# text at the node's span so the rest of the code keeps its formatting. Syntax
# operators edit tokens and lines, since a tree cannot hold a syntax error.
# The same source, seed and operators always give the same mutants.
import ast
import builtins
import io
import json
import keyword
import random
import re
import sys
import tokenize
import zlib


class Src:
    """The source as UTF-8 bytes, since ast column offsets count bytes."""

    def __init__(self, text):
        self.text = text
        self.b = text.encode("utf-8")
        self.starts = [0]
        for line in self.b.splitlines(True):
            self.starts.append(self.starts[-1] + len(line))

    def off(self, lineno, col):
        return self.starts[lineno - 1] + col

    def span(self, node):
        return (self.off(node.lineno, node.col_offset),
                self.off(node.end_lineno, node.end_col_offset))

    def seg(self, a, b):
        return self.b[a:b].decode("utf-8")

    def node_text(self, node):
        a, b = self.span(node)
        return self.seg(a, b)

    def splice(self, a, b, new):
        return (self.b[:a] + new.encode("utf-8") + self.b[b:]).decode("utf-8")


def short(s, n=40):
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


def is_str_node(n):
    return (isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes))) or isinstance(n, ast.JoinedStr)


def is_int_const(n):
    return isinstance(n, ast.Constant) and type(n.value) is int


def annotation_nodes(tree):
    """ids of nodes inside annotations, where mutations make no runtime sense."""
    skip = set()
    for n in ast.walk(tree):
        anns = []
        if isinstance(n, ast.arg) and n.annotation is not None:
            anns.append(n.annotation)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            anns.append(n.returns)
        if isinstance(n, ast.AnnAssign):
            anns.append(n.annotation)
        for a in anns:
            for m in ast.walk(a):
                skip.add(id(m))
    return skip


def op_token_span(src, left, right, pattern):
    """Byte span of the operator token between two operands, found by regex."""
    a = src.off(left.end_lineno, left.end_col_offset)
    b = src.off(right.lineno, right.col_offset)
    gap = src.seg(a, b)
    m = re.search(pattern, gap)
    if not m:
        return None
    # The gap is decoded text; convert char offsets back to bytes.
    sa = a + len(gap[: m.start()].encode("utf-8"))
    sb = a + len(gap[: m.end()].encode("utf-8"))
    return sa, sb


ATOMIC = (ast.Name, ast.Constant, ast.Call, ast.Subscript, ast.Attribute, ast.List,
          ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)


def shifted(src, node, delta):
    """Text of node with delta added, written the way a person would."""
    if is_int_const(node):
        return str(node.value + delta)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and is_int_const(node.operand):
        return str(-node.operand.value + delta)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and is_int_const(node.right):
        k = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
        k += delta
        left = src.node_text(node.left)
        if k == 0:
            return left
        return "%s + %d" % (left, k) if k > 0 else "%s - %d" % (left, -k)
    text = src.node_text(node)
    if not isinstance(node, ATOMIC + (ast.BinOp,)):
        text = "(" + text + ")"
    return "%s + %d" % (text, delta) if delta > 0 else "%s - %d" % (text, -delta)


def paren(src, node):
    text = src.node_text(node)
    return text if isinstance(node, ATOMIC) else "(" + text + ")"


# ---------------------------------------------------------------- logic

CMP_SWAP = {
    ast.Lt: (r"<(?!=)", "<="), ast.LtE: (r"<=", "<"),
    ast.Gt: (r">(?!=)", ">="), ast.GtE: (r">=", ">"),
    ast.Eq: (r"==", "!="), ast.NotEq: (r"!=", "=="),
    ast.In: (r"\bin\b", "not in"), ast.NotIn: (r"\bnot\s+in\b", "in"),
    ast.Is: (r"\bis\b(?!\s+not\b)", "is not"), ast.IsNot: (r"\bis\s+not\b", "is"),
}


def logic_compare_swap(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Compare):
            continue
        operands = [n.left] + n.comparators
        for i, op in enumerate(n.ops):
            pat, new = CMP_SWAP[type(op)]
            sp = op_token_span(src, operands[i], operands[i + 1], pat)
            if sp is None:
                continue
            old = src.seg(*sp)
            out.append((src.splice(sp[0], sp[1], new),
                        "changed the comparison `%s` to `%s` in `%s`" % (old, new, short(src.node_text(n))),
                        n.lineno))
    return out


ARITH_SWAP = {
    ast.Add: (r"\+", "-"), ast.Sub: (r"-", "+"),
    ast.Mult: (r"\*(?!\*)", "//"), ast.FloorDiv: (r"//", "*"),
    ast.Div: (r"(?<!/)/(?!/)", "*"), ast.Mod: (r"%", "//"),
}


def logic_arith_swap(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and type(n.op) in ARITH_SWAP:
            if is_str_node(n.left) or is_str_node(n.right):
                continue
            pat, new = ARITH_SWAP[type(n.op)]
            sp = op_token_span(src, n.left, n.right, pat)
        elif isinstance(n, ast.AugAssign) and type(n.op) in ARITH_SWAP:
            if is_str_node(n.value):
                continue
            pat, new = ARITH_SWAP[type(n.op)]
            pat, new = pat + "=", new + "="
            sp = op_token_span(src, n.target, n.value, pat)
        else:
            continue
        if sp is None:
            continue
        old = src.seg(*sp)
        out.append((src.splice(sp[0], sp[1], new),
                    "changed the operator `%s` to `%s` in `%s`" % (old, new, short(src.node_text(n))),
                    n.lineno))
    return out


def logic_off_by_one_range(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range"):
            continue
        if not n.args or len(n.args) > 3 or n.keywords or any(isinstance(a, ast.Starred) for a in n.args):
            continue
        targets = [("end", n.args[0])] if len(n.args) == 1 else [("start", n.args[0]), ("end", n.args[1])]
        for which, arg in targets:
            for delta in (1, -1):
                a, b = src.span(arg)
                new = shifted(src, arg, delta)
                out.append((src.splice(a, b, new),
                            "moved the %s of `%s` by %+d (`%s` became `%s`)" % (
                                which, short(src.node_text(n)), delta, short(src.node_text(arg)), new),
                            n.lineno))
    return out


def logic_off_by_one_index(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Subscript) or id(n) in skip:
            continue
        s = n.slice
        ok = is_int_const(s) or isinstance(s, ast.Name) or (
            isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub) and is_int_const(s.operand)) or (
            isinstance(s, ast.BinOp) and isinstance(s.op, (ast.Add, ast.Sub)) and is_int_const(s.right))
        if not ok:
            continue
        for delta in (1, -1):
            a, b = src.span(s)
            new = shifted(src, s, delta)
            out.append((src.splice(a, b, new),
                        "shifted the index of `%s` by %+d (`%s` became `%s`)" % (
                            short(src.node_text(n)), delta, short(src.node_text(s)), new),
                        n.lineno))
    return out


def logic_drop_return(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Return) and n.value is not None:
            a = src.off(n.lineno, n.col_offset)
            b = src.off(n.value.lineno, n.value.col_offset)
            out.append((src.splice(a, b, ""),
                        "dropped `return` from `%s`, so the value is computed but not returned" % short(src.node_text(n)),
                        n.lineno))
    return out


def logic_bool_flip(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and type(n.value) is bool and id(n) not in skip:
            a, b = src.span(n)
            new = "False" if n.value else "True"
            out.append((src.splice(a, b, new), "changed `%s` to `%s`" % (n.value, new), n.lineno))
        elif isinstance(n, ast.BoolOp):
            old, new = ("and", "or") if isinstance(n.op, ast.And) else ("or", "and")
            for i in range(len(n.values) - 1):
                sp = op_token_span(src, n.values[i], n.values[i + 1], r"\b%s\b" % old)
                if sp:
                    out.append((src.splice(sp[0], sp[1], new),
                                "changed `%s` to `%s` in `%s`" % (old, new, short(src.node_text(n))), n.lineno))
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            a = src.off(n.lineno, n.col_offset)
            b = src.off(n.operand.lineno, n.operand.col_offset)
            text = src.node_text(n.operand)
            repl = text if isinstance(n.operand, ATOMIC + (ast.Compare,)) else "(" + text + ")"
            sa, sb = src.span(n)
            out.append((src.splice(sa, sb, repl),
                        "dropped `not` from `%s`" % short(src.node_text(n)), n.lineno))
    return out


# ---------------------------------------------------------------- name

def defined_names(tree):
    names = set(dir(builtins)) | set(keyword.kwlist)
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.alias):
            names.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def typo(name, taken):
    """A plausible misspelling of name that nothing in the module defines."""
    cands = []
    if len(name) >= 4:
        i = len(name) // 2 - 1
        if name[i] != name[i + 1]:
            cands.append(name[:i] + name[i + 1] + name[i] + name[i + 2:])
        cands.append(name[:i] + name[i + 1:])
    if len(name) >= 2:
        cands.append(name + name[-1])
    cands += [name + "1", name + "_"]
    for c in cands:
        if c not in taken and c.isidentifier() and not keyword.iskeyword(c):
            return c
    return None


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def scope_nodes(stmts):
    """Every node of stmts, depth first, without descending into nested
    scopes (their def, class or lambda node is yielded, not its insides)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, SCOPES):
            stack.extend(ast.iter_child_nodes(n))


def function_locals(fn):
    """Parameters and names bound directly in fn (not in nested functions)."""
    names = set()
    a = fn.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
        if arg is not None:
            names.add(arg.arg)
    for n in scope_nodes(fn.body):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
    return names


def uses_in(fn):
    """Name loads directly in fn's body (not in nested scopes)."""
    out = [n for n in scope_nodes(fn.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def name_misspell(src, tree, skip):
    out = []
    taken = defined_names(tree)
    for fn in functions(tree):
        local = function_locals(fn)
        for n in uses_in(fn):
            if n.id not in local:
                continue
            new = typo(n.id, taken)
            if new is None:
                continue
            a, b = src.span(n)
            out.append((src.splice(a, b, new),
                        "misspelled `%s` as `%s` at one use" % (n.id, new), n.lineno))
    return out


def name_rename_param(src, tree, skip):
    out = []
    taken = defined_names(tree)
    for fn in functions(tree):
        used = {n.id for n in uses_in(fn)}
        for arg in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
            if arg.arg not in used:
                continue
            new = arg.arg[:-1] if arg.arg.endswith("s") and len(arg.arg) > 2 else arg.arg + "s"
            if new in taken:
                new = typo(arg.arg, taken)
            if new is None:
                continue
            a = src.off(arg.lineno, arg.col_offset)
            out.append((src.splice(a, a + len(arg.arg.encode("utf-8")), new),
                        "renamed the parameter `%s` of `%s` to `%s` but not its uses" % (arg.arg, fn.name, new),
                        arg.lineno))
    return out


# ---------------------------------------------------------------- type

NUMERIC_OPS = (ast.Add, ast.Sub, ast.Div, ast.FloorDiv)


def type_str_wrap(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, NUMERIC_OPS)):
            continue
        if is_str_node(n.left) or is_str_node(n.right):
            continue
        for side in (n.left, n.right):
            if not isinstance(side, (ast.Name, ast.Call, ast.Subscript, ast.Attribute, ast.Constant)):
                continue
            if isinstance(side, ast.Call) and isinstance(side.func, ast.Name) and side.func.id == "str":
                continue
            a, b = src.span(side)
            text = src.node_text(side)
            out.append((src.splice(a, b, "str(%s)" % text),
                        "converted `%s` to a string with str() in the arithmetic `%s`" % (short(text), short(src.node_text(n))),
                        n.lineno))
    return out


def type_num_to_str(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, NUMERIC_OPS + (ast.Mult, ast.Mod))):
            continue
        if is_str_node(n.left) or is_str_node(n.right):
            continue
        for side in (n.left, n.right):
            if is_int_const(side) or (isinstance(side, ast.Constant) and type(side.value) is float):
                a, b = src.span(side)
                new = "'%s'" % src.node_text(side)
                out.append((src.splice(a, b, new),
                            "wrote the number `%s` as the string %s in `%s`" % (src.node_text(side), new, short(src.node_text(n))),
                            n.lineno))
    return out


def type_drop_conversion(src, tree, skip):
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("int", "float", "len")):
            continue
        if len(n.args) != 1 or n.keywords or isinstance(n.args[0], ast.Starred):
            continue
        a, b = src.span(n)
        out.append((src.splice(a, b, paren(src, n.args[0])),
                    "dropped the `%s()` call around `%s`" % (n.func.id, short(src.node_text(n.args[0]))),
                    n.lineno))
    return out


# ---------------------------------------------------------------- timeout

def loop_body_nodes(loop):
    """Nodes of a loop's body, not descending into nested functions."""
    return [n for n in scope_nodes(loop.body) if not isinstance(n, SCOPES)]


def loop_steps(loop):
    """Statements in a while body that step a name the loop test reads."""
    tested = {n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)}
    steps = []
    for n in loop_body_nodes(loop):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in tested:
            steps.append(n)
        elif (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
              and n.targets[0].id in tested and isinstance(n.value, ast.BinOp)
              and any(isinstance(m, ast.Name) and m.id == n.targets[0].id for m in ast.walk(n.value))):
            steps.append(n)
    return sorted(steps, key=lambda n: (n.lineno, n.col_offset))


def whiles(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.While)]


def drop_statement(src, st):
    """The source with statement st removed the way a person forgets a line:
    its whole line when it stands alone, else the statement and its `;`.
    None when nothing natural can stand in its place."""
    a, b = src.span(st)
    text = src.text
    ls = text.rfind("\n", 0, a) + 1
    le = text.find("\n", b)
    le = len(text) if le < 0 else le
    before, after = text[ls:a], text[b:le]
    rest = after.strip()
    if before.strip() == "" and (rest == "" or rest == ";" or rest.startswith("#")):
        return text[:ls] + text[le + 1:] if le < len(text) else text[:ls].rstrip("\n") + "\n"
    m = re.match(r"\s*;\s*", after)
    if m and after[m.end():].strip():
        return text[:a] + text[b + m.end():]
    m = re.search(r";\s*$", before)
    if m:
        return text[:ls + m.start()] + text[b:]
    return None


def timeout_drop_increment(src, tree, skip):
    out = []
    for loop in whiles(tree):
        for st in loop_steps(loop):
            # A body of this one statement would need a `pass` in its place:
            # a telltale no programmer writes, so no mutant there.
            if st in loop.body and len(loop.body) == 1:
                continue
            code = drop_statement(src, st)
            if code is None:
                continue
            out.append((code,
                        "removed the loop step `%s`, so the while loop on line %d never advances" % (short(src.node_text(st)), loop.lineno),
                        st.lineno))
    return out


def timeout_reverse_step(src, tree, skip):
    out = []
    for loop in whiles(tree):
        for st in loop_steps(loop):
            if not (isinstance(st, ast.AugAssign) and isinstance(st.op, (ast.Add, ast.Sub))):
                continue
            old, new = ("+=", "-=") if isinstance(st.op, ast.Add) else ("-=", "+=")
            sp = op_token_span(src, st.target, st.value, re.escape(old))
            if sp is None:
                continue
            out.append((src.splice(sp[0], sp[1], new),
                        "reversed the loop step `%s` to `%s`, so the while loop on line %d moves away from its end" % (
                            short(src.node_text(st)), new, loop.lineno),
                        st.lineno))
    return out


def timeout_while_true(src, tree, skip):
    out = []
    for loop in whiles(tree):
        exits = False
        stack = list(loop.body)
        while stack:
            n = stack.pop()
            if isinstance(n, SCOPES):
                continue
            if isinstance(n, (ast.Return, ast.Raise)):
                exits = True
            if isinstance(n, ast.Break):
                exits = True
            if isinstance(n, (ast.For, ast.While, ast.AsyncFor)):
                # a break in a nested loop leaves only that loop
                for m in ast.walk(n):
                    if isinstance(m, (ast.Return, ast.Raise)):
                        exits = True
                continue
            stack.extend(ast.iter_child_nodes(n))
        if exits or (isinstance(loop.test, ast.Constant) and loop.test.value is True):
            continue
        a, b = src.span(loop.test)
        out.append((src.splice(a, b, "True"),
                    "replaced the condition `%s` of the while loop with `True`" % short(src.node_text(loop.test)),
                    loop.lineno))
    return out


# ---------------------------------------------------------------- syntax

def tokens(text):
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return []


def line_spans(text):
    lines = text.splitlines(True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    return lines, starts


def syntax_drop_colon(src, tree, skip):
    text = src.text
    toks = tokens(text)
    _, starts = line_spans(text)
    out = []
    for i, t in enumerate(toks):
        if t.type != tokenize.OP or t.string != ":":
            continue
        j = i + 1
        while j < len(toks) and toks[j].type in (tokenize.COMMENT, tokenize.NL):
            j += 1
        if j >= len(toks) or toks[j].type != tokenize.NEWLINE:
            continue  # a slice, dict, lambda or one-line body
        a = starts[t.start[0] - 1] + t.start[1]
        out.append((text[:a] + text[a + 1:],
                    "dropped the colon at the end of line %d" % t.start[0], t.start[0]))
    return out


def syntax_drop_bracket(src, tree, skip):
    text = src.text
    _, starts = line_spans(text)
    out = []
    for t in tokens(text):
        if t.type == tokenize.OP and t.string in (")", "]", "}"):
            a = starts[t.start[0] - 1] + t.start[1]
            out.append((text[:a] + text[a + 1:],
                        "dropped a closing `%s` on line %d" % (t.string, t.start[0]), t.start[0]))
    return out


def syntax_bad_indent(src, tree, skip):
    text = src.text
    lines, starts = line_spans(text)
    out = []
    seen = set()
    for n in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(n, field, None)
            if not isinstance(body, list):
                continue
            for st in body[1:]:
                if not isinstance(st, ast.stmt) or st.lineno in seen:
                    continue
                line = lines[st.lineno - 1]
                indent = len(line) - len(line.lstrip(" \t"))
                if len(line[:indent].encode("utf-8")) != st.col_offset:
                    continue  # not the first statement on its line
                seen.add(st.lineno)
                a = starts[st.lineno - 1]
                out.append((text[:a] + "  " + text[a:],
                            "indented line %d by two extra spaces" % st.lineno, st.lineno))
                if indent > 0:
                    out.append((text[:a] + text[a + 1:],
                                "removed one indentation character from line %d" % st.lineno, st.lineno))
    return out


# ---------------------------------------------------------------- driver

OPERATORS = {
    "syntax_drop_colon": ("syntax", syntax_drop_colon),
    "syntax_drop_bracket": ("syntax", syntax_drop_bracket),
    "syntax_bad_indent": ("syntax", syntax_bad_indent),
    "name_misspell": ("name", name_misspell),
    "name_rename_param": ("name", name_rename_param),
    "type_str_wrap": ("type", type_str_wrap),
    "type_num_to_str": ("type", type_num_to_str),
    "type_drop_conversion": ("type", type_drop_conversion),
    "logic_compare_swap": ("logic", logic_compare_swap),
    "logic_arith_swap": ("logic", logic_arith_swap),
    "logic_off_by_one_range": ("logic", logic_off_by_one_range),
    "logic_off_by_one_index": ("logic", logic_off_by_one_index),
    "logic_drop_return": ("logic", logic_drop_return),
    "logic_bool_flip": ("logic", logic_bool_flip),
    "timeout_drop_increment": ("timeout", timeout_drop_increment),
    "timeout_reverse_step": ("timeout", timeout_reverse_step),
    "timeout_while_true": ("timeout", timeout_while_true),
}


def compiles(code):
    try:
        compile(code, "solution.py", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def main():
    req = json.load(sys.stdin)
    source = req["source"]
    seed = int(req.get("seed", 0))
    per = int(req.get("per_operator", 2))
    ops = req.get("operators") or sorted(OPERATORS)
    for op in ops:
        if op not in OPERATORS:
            json.dump({"error": "unknown operator %r" % op}, sys.stdout)
            return
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        json.dump({"error": "the solution does not parse: %s" % e}, sys.stdout)
        return
    src = Src(source)
    skip = annotation_nodes(tree)
    mutants = []
    for op in ops:
        kind, fn = OPERATORS[op]
        cands, seen = [], set()
        for code, desc, line in fn(src, tree, skip):
            if code == source or code in seen:
                continue
            seen.add(code)
            cands.append((code, desc, line))
        rng = random.Random(seed * 1000003 + zlib.crc32(op.encode()))
        rng.shuffle(cands)
        taken = 0
        for code, desc, line in cands:
            if taken >= per:
                break
            # A syntax mutant must not compile; every other one must.
            if compiles(code) == (kind == "syntax"):
                continue
            mutants.append({"operator": op, "kind": kind, "code": code,
                            "description": desc, "line": line})
            taken += 1
    json.dump({"mutants": mutants}, sys.stdout)


if __name__ == "__main__":
    main()
