"""Disguise benchmark solutions the way a contaminated corpus holds them.

Reads a JSON array of {"id", "code"} on stdin and writes, for each task, a
JSON object of variants (null where a variant does not apply):

  renamed           every bound name renamed (functions, parameters,
                    variables, loop and comprehension targets, with/except
                    targets), builtin names used as variables included
  reordered         two adjacent independent statements swapped
  renamed_reordered both
  continued         the longest line broken with a backslash continuation
  split             a bracketed line split after a comma
  literal_rewrite   a different function body that keeps only the
                    statements holding a literal no other task's solution
                    holds (a table of four or more constants, a string of
                    eight or more characters: a regex, a format, a message)

It works on the source text with Python's own tokenizer and ast, so it is
independent of the Go code it measures. Only the standard library is used.
"""

import ast
import io
import json
import keyword
import sys
import tokenize


def bound_names(tree):
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
    return {n for n in names if not keyword.iskeyword(n) and n not in ("self", "cls")}


def tokens(src):
    return list(tokenize.generate_tokens(io.StringIO(src).readline))


def line_offsets(src):
    offs, k = [0], 0
    for line in src.splitlines(keepends=True):
        k += len(line)
        offs.append(k)
    return offs


def rename(src):
    tree = ast.parse(src)
    bound = bound_names(tree)
    if not bound:
        return None
    fresh = {}
    for i, n in enumerate(sorted(bound)):
        fresh[n] = "v%d_%s" % (i, "xq"[i % 2])
    toks = tokens(src)
    offs = line_offsets(src)
    edits = []
    depth = 0
    in_def = False
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
            if depth == 0:
                in_def = False
        if t.type != tokenize.NAME:
            continue
        if t.string == "def":
            in_def = True
        if t.string not in fresh:
            continue
        prev = toks[k - 1] if k > 0 else None
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if prev is not None and prev.string == ".":
            continue  # an attribute
        if depth > 0 and not in_def and nxt is not None and nxt.string == "=":
            continue  # a keyword argument of a call
        a = offs[t.start[0] - 1] + t.start[1]
        b = offs[t.end[0] - 1] + t.end[1]
        edits.append((a, b, fresh[t.string]))
    out = src
    for a, b, s in reversed(edits):
        out = out[:a] + s + out[b:]
    return out


def names_of(node):
    reads, writes = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                reads.add(n.id)
            else:
                writes.add(n.id)
        elif isinstance(n, ast.Call):
            reads.add("<call>")
    # x += 1 reads x too; a subscript or attribute store reads its base.
    for n in ast.walk(node):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            reads.add(n.target.id)
    return reads, writes


SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Import, ast.ImportFrom)


def independent(a, b):
    if not isinstance(a, SIMPLE) or not isinstance(b, SIMPLE):
        return False
    if isinstance(a, (ast.Import, ast.ImportFrom)) != isinstance(b, (ast.Import, ast.ImportFrom)):
        return False
    ra, wa = names_of(a)
    rb, wb = names_of(b)
    if "<call>" in ra and "<call>" in rb and (isinstance(a, ast.Expr) or isinstance(b, ast.Expr)):
        return False  # two calls for their effects (print, append) keep their order
    return not (wa & (rb | wb)) and not (wb & ra)


def reorder(src):
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for a, b in zip(body, body[1:]):
                if not independent(a, b):
                    continue
                if a.end_lineno >= b.lineno or a.col_offset != b.col_offset:
                    continue  # on one line (a; b)
                # Whole lines of a, then of b (b ends where its last line ends).
                la = lines[a.lineno - 1:a.end_lineno]
                lb = lines[b.lineno - 1:b.end_lineno]
                between = lines[a.end_lineno:b.lineno - 1]
                if not lb[-1].endswith("\n"):
                    lb[-1] += "\n"
                    la[-1] = la[-1].rstrip("\n")
                out = lines[:a.lineno - 1] + lb + between + la + lines[b.end_lineno:]
                return "".join(out)
    return None


def longest_code_line(src):
    """Index of the longest line with a space between two tokens outside
    strings and comments, and the byte offset of that space."""
    toks = tokens(src)
    best = None
    for t, u in zip(toks, toks[1:]):
        if t.end[0] != u.start[0] or u.start[1] <= t.end[1]:
            continue
        if t.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT) or u.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            continue
        row = t.end[0]
        ln = len(src.splitlines()[row - 1])
        if best is None or ln > best[0] or (ln == best[0] and row == best[1] and t.end[1] < best[2]):
            if best is None or ln > best[0] or row == best[1]:
                best = (ln, row, t.end[1])
    return best


def continued(src):
    b = longest_code_line(src)
    if b is None:
        return None
    _, row, col = b
    lines = src.splitlines(keepends=True)
    l = lines[row - 1]
    indent = len(l) - len(l.lstrip())
    lines[row - 1] = l[:col] + " \\\n" + " " * (indent + 8) + l[col:].lstrip(" ")
    return "".join(lines)


def split(src):
    toks = tokens(src)
    depth = 0
    lines = src.splitlines(keepends=True)
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
        elif t.type == tokenize.OP and t.string == "," and depth > 0:
            nxt = toks[k + 1]
            if nxt.start[0] != t.end[0] or nxt.type in (tokenize.NL, tokenize.COMMENT):
                continue
            row, col = t.end
            l = lines[row - 1]
            indent = len(l) - len(l.lstrip())
            lines[row - 1] = l[:col] + "\n" + " " * (indent + 4) + l[col:].lstrip(" ")
            return "".join(lines)
    return None


def literals_of(node):
    """The tables (list, tuple, set or dict displays of four or more
    constants) and the string constants of eight or more characters under
    node, as hashable values."""
    out = []
    for m in ast.walk(node):
        if isinstance(m, (ast.List, ast.Tuple, ast.Set)) and len(m.elts) >= 4 and all(isinstance(e, ast.Constant) for e in m.elts):
            out.append(("table", tuple(repr(e.value) for e in m.elts)))
        if isinstance(m, ast.Dict) and len(m.keys) >= 4 and all(isinstance(e, ast.Constant) for e in m.keys if e is not None):
            out.append(("dict", tuple(repr(k.value) for k in m.keys if k is not None)))
        if isinstance(m, ast.Constant) and isinstance(m.value, str) and len(m.value) >= 8 and not m.value.isspace():
            out.append(("str", m.value))
    return out


def literal_statements(src, unique=None):
    """The simple statements holding a literal (see literals_of) that is
    not a docstring and, when unique is given, is in it (held by this
    task's solution only)."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    out = []
    docs = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and n.body:
            d = n.body[0]
            if isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant) and isinstance(d.value.value, str):
                docs.add(id(d))
    for n in ast.walk(tree):
        if not isinstance(n, (ast.Assign, ast.Return, ast.Expr, ast.AugAssign)) or id(n) in docs:
            continue
        lits = literals_of(n)
        if lits and (unique is None or any(l in unique for l in lits)):
            seg = "".join(lines[n.lineno - 1:n.end_lineno])
            out.append((n, seg))
    return out


def literal_rewrite(src, unique):
    stmts = literal_statements(src, unique)
    if not stmts:
        return None
    body = []
    for n, seg in stmts:
        seg = seg.strip("\n")
        first = seg.splitlines()[0]
        ind = len(first) - len(first.lstrip())
        seg = "\n".join(l[ind:] if l[:ind].strip() == "" else l for l in seg.splitlines())
        if isinstance(n, ast.Return):
            seg = "result = " + seg[len("return"):].lstrip()
        body.append(seg)
    code = "def solve(data):\n"
    code += "    collected = []\n"
    for seg in body:
        code += "".join("    " + l + "\n" for l in seg.splitlines())
    code += "    for item in data:\n        collected.append(item)\n    return collected\n"
    try:
        ast.parse(code)
    except SyntaxError:
        return None
    return rename(code) or code


def safe(f, src):
    try:
        return f(src)
    except (SyntaxError, tokenize.TokenError, IndentationError, ValueError):
        return None


def task_literals(src):
    try:
        return set(literals_of(ast.parse(src)))
    except (SyntaxError, ValueError):
        return set()


def main():
    out = {}
    tasks = json.load(sys.stdin)
    srcs = {}
    for t in tasks:
        src = t["code"].replace("\r\n", "\n").replace("\t", "    ")
        if not src.endswith("\n"):
            src += "\n"
        srcs[t["id"]] = src
    # A literal is unique when one task's solution holds it.
    holders = {}
    for i, src in srcs.items():
        for l in task_literals(src):
            holders.setdefault(l, set()).add(i)
    for t in tasks:
        src = srcs[t["id"]]
        unique = {l for l in task_literals(src) if len(holders[l]) == 1}
        v = {
            "renamed": safe(rename, src),
            "reordered": safe(reorder, src),
            "continued": safe(continued, src),
            "split": safe(split, src),
            "literal_rewrite": safe(lambda s: literal_rewrite(s, unique), src) if unique else None,
        }
        v["renamed_reordered"] = safe(rename, v["reordered"]) if v["reordered"] else None
        out[t["id"]] = v
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
