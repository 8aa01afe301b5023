package executors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// TestPythonSessionLibraries: python session cells run in a subinterpreter
// whose audit hook refuses what could reach the kernel (runner.py, "python
// kernel"). What notebooks use keeps working; what is refused fails with a
// message that says so; a thread left running fails its cell and restarts
// the session (Python 3.11 cannot run a later cell beside it).
func TestPythonSessionLibraries(t *testing.T) {
	ctx := context.Background()
	ex := bwrapPool(t)
	for _, c := range []struct {
		name   string
		cell   string
		exit   int
		stdout string // a substring of the cell's stdout
		stderr string // a substring of its stderr
		// fresh: whether the session restarted after the cell (x, set
		// before it, is gone).
		fresh bool
	}{
		{"doctest", "def add(a, b):\n    '''\n    >>> add(1, 2)\n    3\n    '''\n    return a + b\nimport doctest\nprint(doctest.testmod())",
			0, "TestResults(failed=0, attempted=1)", "", false},
		{"unittest", "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(1 + 1, 2)\nunittest.main(argv=[''], exit=False)",
			0, "", "OK", false},
		{"asyncio", "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n    return 7\nprint(asyncio.run(f()))", 0, "7\n", "", false},
		{"pickle of a class defined in a cell", "import pickle\nclass P:\n    def __init__(self, v):\n        self.v = v\nprint(pickle.loads(pickle.dumps(P(3))).v)", 0, "3\n", "", false},
		{"inspect.getsource", "def g():\n    return 1\nimport inspect\nprint(inspect.getsource(g).splitlines()[0])", 0, "def g():", "", false},
		{"__main__", "if __name__ == '__main__':\n    print('main')", 0, "main\n", "", false},
		{"subprocess", "import subprocess\nprint(subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout)", 0, "hi\n", "", false},
		{"threads joined", "import threading\nout = []\nts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]\nfor t in ts: t.start()\nfor t in ts: t.join()\nprint(sorted(out))", 0, "[0, 1, 2, 3]", "", false},
		{"a thread pool in a with block", "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(2) as p:\n    print(list(p.map(abs, [-1, -2])))", 0, "[1, 2]", "", false},
		{"cProfile is refused", "import cProfile\ncProfile.run('sum(range(10))')", 1, "", "sys.setprofile is not available in a python session cell", false},
		{"os.fork is refused", "import os\nos.fork()", 1, "", "os.fork() is not available in a python session cell", false},
		{"a non-ASCII cell (compiled by the runner, sent as code objects)", "print('h\u00e9llo')", 0, "h\u00e9llo\n", "", false},
		{"marshal of data", "import marshal\nprint(marshal.loads(marshal.dumps({'a': [1, (2, 3)]})))", 0, "{'a': [1, (2, 3)]}", "", false},
		{"pathlib", "import pathlib\npathlib.Path('f.txt').write_text('a')\nprint(open(pathlib.Path('f.txt')).read())", 0, "a\n", "", false},
		// The .pyc says V = 5; the source, rewritten after it with the same
		// size and time, says 6: importlib would take the .pyc.
		{"a .pyc another process wrote is not loaded: the source is compiled instead",
			"import os, subprocess, sys\nopen('helper.py', 'w').write('V = 5\\n')\nst = os.stat('helper.py')\n" +
				"subprocess.run([sys.executable, '-c', 'import py_compile; py_compile.compile(\"helper.py\")'], check=True)\n" +
				"open('helper.py', 'w').write('V = 6\\n')\nos.utime('helper.py', ns=(st.st_atime_ns, st.st_mtime_ns))\n" +
				"print(os.listdir('__pycache__'))\nimport helper\nprint(helper.V)", 0, "6\n", "", false},
		{"marshal of code is refused", "import marshal\nmarshal.loads(marshal.dumps(compile('1', 'x', 'eval')))", 1, "",
			"loading code objects with marshal is not available in a python session cell", false},
		{"code.replace is refused", "(lambda: 0).__code__.replace(co_consts=(1,))", 1, "",
			"making code objects (CodeType, code.replace) is not available", false},
		{"an extension module from outside /usr is refused",
			"import glob, shutil, importlib.util\nso = glob.glob('/usr/lib/python3.11/lib-dynload/_json.*.so')[0]\nshutil.copy(so, 'e.so')\n" +
				"spec = importlib.util.spec_from_file_location('_json', 'e.so')\nimportlib.util.module_from_spec(spec)", 1, "",
			"extension modules load only from /usr in a python session cell", false},
		{"the kernel's own interpreter cannot be run in", "import _xxsubinterpreters as i\ni.run_string(i.get_main(), 'print(1)')", 1, "",
			"interpreter already running", false},
		{"CPython's test modules are refused", "import _testcapi", 1, "", "CPython's test module _testcapi is not available", false},
		{"an extension module under /usr loads", "import _lzma, _bz2, bisect\nprint(bisect.bisect([1, 3], 2))", 0, "1\n", "", false},
		{"a link to /proc/self/mem is refused", "import os\nos.symlink('/proc/self/mem', 'm')", 1, "",
			"a link to a process's memory cannot be made", false},
		{"a link another process made to the kernel's memory is refused",
			"import os, subprocess\nsubprocess.run(['ln', '-s', '/proc/%d/mem' % os.getpid(), 'm2'], check=True)\nopen('m2', 'rb')", 1, "",
			"a process's memory cannot be opened in a python session cell", false},
		{"a path object naming /proc/self/mem is refused", "import pathlib\nopen(pathlib.Path('/proc/self/mem'), 'rb')", 1, "",
			"a process's memory cannot be opened in a python session cell", false},
		{"a thread left running", "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()\nprint('started')",
			1, "started", "a thread the cell started was still running when it ended", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{Limits: executors.Limits{Timeout: 20 * time.Second, WallTimeout: 60 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if r, err := s.Exec(ctx, "x = 1"); err != nil || !r.OK() {
				t.Fatalf("setting up: %v %+v", err, r)
			}
			r, err := s.Exec(ctx, c.cell)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != c.exit || !strings.Contains(r.Stdout, c.stdout) || !strings.Contains(r.Stderr, c.stderr) {
				t.Errorf("got exit %d stdout %q stderr %q, want exit %d, stdout with %q, stderr with %q", r.ExitCode, r.Stdout, r.Stderr, c.exit, c.stdout, c.stderr)
			}
			r, err = s.Exec(ctx, "print('x' in globals())")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{false: "True\n", true: "False\n"}[c.fresh]; r.Stdout != want {
				t.Errorf("after the cell got %q, want %q (fresh session: %v)", r.Stdout, want, c.fresh)
			}
		})
	}
}
