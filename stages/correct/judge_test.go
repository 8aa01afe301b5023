package correct

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// TestCheckerObserves judges one candidate per outcome and checks what the
// run reads as: the outcome, the code line at fault, the feedback text, and
// that the recorded program re-runs to the same outcome.
func TestCheckerObserves(t *testing.T) {
	ex := sandbox(t)
	c := &checker{Exec: ex, LoopTimeout: 1500e6}
	p := &schema.Problem{Query: schema.Query{ID: "t/add"}, Tests: []string{"assert add(1, 2) == 3", "assert add(2, 2) == 4"}}
	cases := []struct {
		name, code string
		loop       bool
		want       string
		line       int
	}{
		{"pass", "def add(a, b):\n    return a + b\n", false, observedPass, 0},
		{"wrong", "def add(a, b):\n    return a - b\n", false, observedWrongAnswer, 0},
		{"name", "def add(a, b):\n    return a + c\n", false, "NameError", 2},
		{"type", "def add(a, b):\n    return str(a) + b\n", false, "TypeError", 2},
		{"syntax", "def add(a, b)\n    return a + b\n", false, "SyntaxError", 1},
		{"indent", "def add(a, b):\n    s = a\n      return s + b\n", false, "IndentationError", 3},
		{"timeout", "def add(a, b):\n    while True:\n        pass\n", true, observedTimeout, 0},
		{"other", "def add(a, b):\n    return [a][b]\n", false, "IndexError", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Check(context.Background(), p, tc.code, tc.loop)
			if err != nil {
				t.Fatal(err)
			}
			if r.Observed != tc.want {
				t.Fatalf("observed %q, want %q; output:\n%s", r.Observed, tc.want, r.Output())
			}
			if r.Line != tc.line {
				t.Errorf("line %d, want %d; output:\n%s", r.Line, tc.line, r.Output())
			}
			out := r.Output()
			switch tc.want {
			case observedPass:
				if !strings.Contains(out, "All 2 tests passed.") {
					t.Errorf("pass output %q lacks the pass line", out)
				}
			case observedWrongAnswer:
				if !strings.Contains(out, "Test failed for input add(1, 2): expected 3, got -1") || r.FailedTest != "assert add(1, 2) == 3" {
					t.Errorf("wrong-answer output %q / failed test %q, want expected 3, got -1 for the first test", out, r.FailedTest)
				}
			case observedTimeout:
				if !strings.Contains(out, "timed out after 1.5s") || !r.Execution(c.Exec.Info()).TimedOut {
					t.Errorf("timeout output %q does not name the time limit, or the record is not timed out", out)
				}
			default:
				if !strings.Contains(out, tc.want) || !strings.Contains(out, `File "solution.py"`) {
					t.Errorf("output %q lacks %s or the solution frame", out, tc.want)
				}
			}
			again, err := c.Rerun(context.Background(), r.Execution(c.Exec.Info()))
			if err != nil {
				t.Fatal(err)
			}
			if again.Observed != r.Observed || again.Line != r.Line || again.FailedTest != r.FailedTest {
				t.Errorf("re-run observed %q line %d test %q, want %q %d %q", again.Observed, again.Line, again.FailedTest, r.Observed, r.Line, r.FailedTest)
			}
		})
	}
}

// TestCheckerSetupAfterSolution covers MBPP's test setup that uses a class
// the solution defines.
func TestCheckerSetupAfterSolution(t *testing.T) {
	c := &checker{Exec: sandbox(t)}
	p := &schema.Problem{Query: schema.Query{ID: "t/tree"}, Setup: "root = Node(1)\r\nroot.left = Node(2)\r\n",
		Tests: []string{"assert size(root) == 2"}}
	code := "class Node:\n    def __init__(self, v):\n        self.v, self.left, self.right = v, None, None\n\ndef size(n):\n    return 0 if n is None else 1 + size(n.left) + size(n.right)\n"
	r, err := c.Check(context.Background(), p, code, false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed() {
		t.Fatalf("observed %s, want pass; output:\n%s", r.Observed, r.Output())
	}
}

// TestLoopLimit checks how the limit of runs expected to hang follows the
// reference solution's run time.
func TestLoopLimit(t *testing.T) {
	ref := func(d time.Duration) judgedRun {
		var r judgedRun
		r.Verdict.Result.Duration = d
		return r
	}
	tests := []struct {
		c    checker
		ref  time.Duration
		want time.Duration
	}{
		{checker{LoopFactor: 10}, 20 * time.Millisecond, 500 * time.Millisecond}, // the floor
		{checker{LoopFactor: 10}, 61 * time.Millisecond, 750 * time.Millisecond}, // 610 ms up to a quarter second
		{checker{LoopFactor: 10}, time.Second, 2 * time.Second},                  // capped at the default loop_timeout
		{checker{LoopFactor: 10, LoopTimeout: 5 * time.Second}, time.Second / 3, 3500 * time.Millisecond},
		{checker{LoopFactor: 10, LoopTimeout: 300 * time.Millisecond}, 0, 300 * time.Millisecond}, // loop_timeout below the floor wins
		{checker{}, 20 * time.Millisecond, 2 * time.Second},                                       // factor 0: always loop_timeout
	}
	for _, tt := range tests {
		if got := tt.c.LoopLimit(ref(tt.ref)); got != tt.want {
			t.Errorf("%+v with a %v reference: %v, want %v", tt.c, tt.ref, got, tt.want)
		}
	}
}

// TestProveTimeout: a timeout label must hold on a longer re-check with
// CPU time. A real endless loop is proven; code that only outlasted the
// loop limit (it computes a little longer, then fails) finishes on the
// re-check, which names its real outcome.
func TestProveTimeout(t *testing.T) {
	c := &checker{Exec: sandbox(t)}
	p := &schema.Problem{Query: schema.Query{ID: "t/add"}, Tests: []string{"assert add(1, 2) == 3"}}
	cases := []struct {
		name, code string
		proven     bool
		want       string // the proof's outcome when not proven
	}{
		{"endless loop", "def add(a, b):\n    while True:\n        pass\n", true, ""},
		// 0.65 CPU-seconds of work: past the 0.5 s limit, within the
		// re-check's 1 s.
		{"slow, then IndexError", "import time\ndef add(a, b):\n    t = time.process_time()\n    while time.process_time() - t < 0.65:\n        pass\n    return [a][b]\n", false, "IndexError"},
	}
	const limit = 500 * time.Millisecond
	// The limit counts CPU time: code that waits past it is no timeout
	// at all, and shows its real outcome at once.
	waits := "import time\ndef add(a, b):\n    time.sleep(1)\n    return [a][b]\n"
	if r, err := c.CheckWithin(context.Background(), p, waits, limit); err != nil || r.Observed != "IndexError" {
		t.Errorf("code that sleeps 1 s under a 0.5 s limit: observed %q (err %v), want IndexError", r.Observed, err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, err := c.CheckWithin(context.Background(), p, tc.code, limit)
			if err != nil {
				t.Fatal(err)
			}
			if first.Observed != observedTimeout {
				t.Fatalf("first check: observed %q, want a timeout under %v", first.Observed, limit)
			}
			proof, proven, err := c.ProveTimeout(context.Background(), p, tc.code, limit)
			if err != nil {
				t.Fatal(err)
			}
			res := proof.Verdict.Result
			t.Logf("proof: proven %v observed %q signal %q timed out %v after %v", proven, proof.Observed, res.Signal, res.TimedOut, res.Duration)
			if proven != tc.proven {
				t.Fatalf("proven %v, want %v (observed %q, output %q)", proven, tc.proven, proof.Observed, proof.Output())
			}
			if !proven && proof.Observed != tc.want {
				t.Errorf("the re-check observed %q, want %q", proof.Observed, tc.want)
			}
		})
	}
}

// TestReferenceRetried: a reference that runs out of time is run again
// with a doubled limit rather than lost.
func TestReferenceRetried(t *testing.T) {
	g := &mutationGenerator{Checker: &checker{Exec: sandbox(t), Timeout: time.Second}}
	p := &schema.Problem{Query: schema.Query{ID: "t/add"}, Tests: []string{"assert add(1, 2) == 3"}}
	code := "import time\ndef add(a, b):\n    time.sleep(1.2)\n    return a + b\n"
	r, err := g.checkReference(context.Background(), p, code)
	if err != nil {
		t.Fatal(err)
	}
	if r.Observed != observedPass {
		t.Errorf("observed %q, want pass once the limit is doubled (output %q)", r.Observed, r.Output())
	}
}
