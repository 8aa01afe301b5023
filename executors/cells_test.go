package executors

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// cellCheck runs every case through the kernel's compile_fast (and the
// runner's compile_ast for a cell it hands back) and through the plain AST
// path it short-cuts (parse, pop a last expression, compile),
// executing both in fresh globals, and prints what each showed: output,
// echoed value, the exception and its line.
const cellCheck = `
import ast, io, json, sys
def ast_path(code, lines, name):
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), name, "eval")
    return [compile(tree, name, "exec")], last
def run(f, code):
    out, g = io.StringIO(), {}
    so, sys.stdout = sys.stdout, out
    try:
        try:
            body, last = f(code, code.splitlines(True), "<cell-1>")
        except SyntaxError as e:
            return "SyntaxError at %s" % e.lineno
        try:
            for co in body:
                exec(co, g)
            if last is not None:
                v = eval(last, g)
                if v is not None:
                    print(repr(v))
        except Exception as e:
            tb = e.__traceback__
            while tb.tb_next:
                tb = tb.tb_next
            print("%s at %d" % (type(e).__name__, tb.tb_lineno))
        return out.getvalue()
    finally:
        sys.stdout = so
def kernel_path(code, lines, name):
    # As kernel_loop compiles a cell (the runner, a non-ASCII one), then
    # the runner one it hands back.
    if not code.isascii():
        return compile_here(code, name)
    fast = type(ast_path)(compile_fast.__code__, {})
    r = fast(code, lines, name, compile, STATEMENT_START.match, FAST_ERRORS, len)
    return r if r is not None else compile_ast(code, name)
cases = json.load(sys.stdin)
print(json.dumps([[run(ast_path, c), run(kernel_path, c)] for c in cases]))
`

// TestCompileCell checks that the kernel's fast cell compilation (source
// split before the last statement) shows exactly what the AST path shows:
// the last expression's value, exceptions at the cell's line numbers,
// syntax errors at theirs, whatever the cell's shape.
func TestCompileCell(t *testing.T) {
	cases := []string{
		"1+1\n", "x = 3\nx\n", "x = 3\nx * 2", "def f():\n    return 1\nf()\n", "(1 +\n2)\n",
		"s = '''\nabc\n'''\ns\n", "if 1:\n    y = 2\nelse:\n    y = 3\ny\n", "x = [1,\n2]\nx\n", "print('a')\n",
		"a = 1\n\n\n1/0\n", "a = 1\nb = 0\nassert a == b\n", "x = 1 +\n", "def f(:\n  pass\nf()\n", "x = 1\n# c\n\n",
		"# only\n", "import re\nre.search(r'\\w', 'a').group()\n", "x = 5\nx  # comment\n",
		"for i in range(2):\n    print(i)\n", "x = '\\w'\nx\n", "y = (1\n,2)\ny\n", "1/0\n", "x = 1\\\n + 2\nx\n",
		"def g():\n    raise KeyError('k')\n\ng()\n", "class A:\n    pass\nA.__name__\n", "try:\n    1/0\nexcept ZeroDivisionError:\n    print('caught')\n",
		"x = 2\nx if x else\n", "from __future__ import annotations\ndef f(a: Nope): return 1\nf(1)\n", "x = 1\r\nx + 1\r\n",
		"n = 0\nwhile n < 3:\n    n += 1\nn\n", "f = lambda: (yield)\ntype(f()).__name__\n", "return 5\n", "x = 1 is 1\nx\n",
		// Tails the runner takes for statements without an eval attempt,
		// and expressions that look like them.
		"x = 1\nx += 2\n", "x = 1\nx **= 2\nx\n", "import os\n", "x = 2\nx == 2\n", "x = 2\nx <= 3\n", "iffy = 3\niffy\n",
		"def f(x=1):\n    return x\nf(\nx=2)\n", "@staticmethod\ndef f(): pass\n", "s = '''\nreturn 1'''\ns\n",
		"print('''\nx = 1''')\n", "for_ = 1\nfor_\n", "x = 1\nx = 1 is 1\n", "x = 1\ndel x\n", "assert True\n",
		"async def f():\n    pass\n", "\u00e9t\u00e9 = 1\n\u00e9t\u00e9\n", "x = 1\nx: int = 2\nx\n", "x = [1]\nx[0] = 2\nx\n",
	}
	in, _ := json.Marshal(cases)
	var got [][2]string
	runRunnerPart(t, "STATEMENT_START = ", "class Session:", "import re\n", cellCheck, in, &got)
	if len(got) != len(cases) {
		t.Fatalf("got %d answers for %d cases", len(got), len(cases))
	}
	for i, c := range cases {
		if got[i][0] != got[i][1] {
			t.Errorf("cell %q: AST path shows %q, compile_fast %q", c, got[i][0], got[i][1])
		}
	}
	if got[1][1] != "3\n" || got[9][1] != "ZeroDivisionError at 4\n" {
		t.Errorf("echo %q, line %q: the check itself is broken", got[1][1], got[9][1])
	}
}

// TestCompileFastReadsNoGlobals: the kernel runs compile_fast during every
// later cell, through a function it makes from the code object with empty
// globals (kernel_loop), so that nothing an earlier cell rebinds (a
// builtin, a module attribute, a function's __code__) runs there. A global
// or builtin it read would fail there or be such a route: it must read
// none, nor a closure's variable, nor import.
func TestCompileFastReadsNoGlobals(t *testing.T) {
	const check = `
import dis, json
def reads(co):
    out = ["free variable " + v for v in co.co_freevars]
    for ins in dis.get_instructions(co):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME"):
            out.append("%s %s" % (ins.opname, ins.argval))
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            out += reads(c)
    return out
print(json.dumps(reads(compile_fast.__code__)))
`
	var got []string
	runRunnerPart(t, "def compile_fast(", "# What makes compile_fast hand", "", check, nil, &got)
	if len(got) != 0 {
		t.Errorf("compile_fast reads %q, want no global, builtin, closure variable or import", got)
	}
}

// runRunnerPart runs runner.py from the line starting with from up to the
// one starting with to, between prefix and script, in python3 with stdin,
// and decodes what it prints as JSON into out.
func runRunnerPart(t *testing.T, from, to, prefix, script string, stdin []byte, out any) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	start, end := strings.Index(runnerPy, from), strings.Index(runnerPy, to)
	if start < 0 || end < start {
		t.Fatalf("%q ... %q not found in runner.py", from, to)
	}
	cmd := exec.Command(py, "-c", prefix+runnerPy[start:end]+script)
	cmd.Stdin = strings.NewReader(string(stdin))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v: %s", err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("bad answer %q: %v", b, err)
	}
}
