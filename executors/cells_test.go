package executors

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// cellCheck runs every case through the runner's compile_cell and through
// the plain AST path it short-cuts (parse, pop a last expression, compile),
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
cases = json.load(sys.stdin)
print(json.dumps([[run(ast_path, c), run(compile_cell, c)] for c in cases]))
`

// TestCompileCell checks that the runner's fast cell compilation (source
// split before the last statement) shows exactly what the AST path shows:
// the last expression's value, exceptions at the cell's line numbers,
// syntax errors at theirs, whatever the cell's shape.
func TestCompileCell(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	start, end := strings.Index(runnerPy, "STATEMENT_START = "), strings.Index(runnerPy, "class Session:")
	if start < 0 || end < start {
		t.Fatal("STATEMENT_START and compile_cell not found in runner.py")
	}
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
	cmd := exec.Command(py, "-c", "import re\n"+runnerPy[start:end]+cellCheck)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got [][2]string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("bad answer %q: %v", out, err)
	}
	for i, c := range cases {
		if got[i][0] != got[i][1] {
			t.Errorf("cell %q: AST path shows %q, compile_cell %q", c, got[i][0], got[i][1])
		}
	}
	if got[1][1] != "3\n" || got[9][1] != "ZeroDivisionError at 4\n" {
		t.Errorf("echo %q, line %q: the check itself is broken", got[1][1], got[9][1])
	}
}
