package drivertest

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// spinners forks four children that spin on the CPU; each reports its
// own CPU time (process_time) every 10 ms of it, as "c<i> <seconds>"
// lines. The last report of each child is at most 10 ms of its CPU time
// behind what it used.
const spinners = `
import os, sys, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        nxt = 0.01
        while True:
            t = time.process_time()
            if t >= nxt:
                os.write(1, b"c%d %.4f\n" % (i, t))
                nxt = t + 0.01
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("all children ended on their own")
`

// WholeRunCPU runs four spinning children under cpu=1s: the CPU limit
// holds for the run as a whole, so together they use at most 1.2 CPU
// seconds (a per-process limit lets each use a second: 4 in all).
func WholeRunCPU(t *testing.T, ex executors.Executor) {
	r := run(t, ex, executors.Request{Language: executors.Python, Code: spinners,
		Limits: executors.Limits{CPUTime: time.Second, Timeout: 60 * time.Second}})
	last := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.HasPrefix(f[0], "c") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				last[f[0]] = v
			}
		}
	}
	var sum float64
	for _, v := range last {
		sum += v
	}
	// Each child may have used up to 10 ms past its last report.
	bound := sum + 0.01*float64(len(last))
	t.Logf("4 spinning children under cpu=1s: %.3f CPU-s reported (at most %.3f used); exit %d signal %q killed %v timed out %v",
		sum, bound, r.ExitCode, r.Signal, r.Killed, r.TimedOut)
	if len(last) != 4 {
		t.Fatalf("got reports from %d children, want 4 (stdout %q stderr %q)", len(last), clip(r.Stdout), clip(r.Stderr))
	}
	if bound > 1.2 {
		t.Errorf("the run's processes used up to %.3f CPU-s under cpu=1s, want at most 1.2 (a whole-run limit)", bound)
	}
	if r.OK() || r.TimedOut || strings.Contains(r.Stdout, "ended on their own") {
		t.Errorf("got ok %v timed out %v stdout %q: want the run stopped by its CPU limit", r.OK(), r.TimedOut, clip(r.Stdout))
	}
	if r.Signal != "SIGXCPU" {
		t.Errorf("got signal %q, want SIGXCPU (the CPU limit)", r.Signal)
	}
}

// runnerStart prints the start time of the sandbox's pid 1 (the runner,
// or docker-init): a new value means a new instance.
const runnerStart = `print(open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19])`

// mkdirs makes empty directories until it cannot: the cap on files and
// directories stops it, by killing the run or by ENOSPC.
const mkdirs = `
import os
n = 0
try:
    while True:
        os.mkdir("d%d" % n)
        n += 1
except OSError as e:
    print("mkdir failed after", n, e.strerror)
`

// InodeCap fills the scratch with empty directories for up to 6 s: the
// run is stopped at the cap on files and directories, and the thousands
// it made are not removed one by one before the next run (which took
// half a minute for 140k): the instance is replaced instead. On an
// executor with one slot.
func InodeCap(t *testing.T, ex executors.Executor) {
	before := run(t, ex, executors.Request{Language: executors.Python, Code: runnerStart, Limits: generous})
	start := time.Now()
	h := run(t, ex, executors.Request{Language: executors.Python, Code: mkdirs, Limits: executors.Limits{Timeout: 6 * time.Second}})
	ran := time.Since(start)
	capped := strings.Contains(h.Stderr, "files and directories and was killed") ||
		strings.Contains(h.Stdout, "No space left on device")
	t.Logf("mkdir run: %v, exit %d killed %v timed out %v stdout %q stderr %q", ran, h.ExitCode, h.Killed, h.TimedOut, clip(h.Stdout), clip(h.Stderr))
	if !capped || h.TimedOut {
		t.Errorf("mkdir run: got stdout %q stderr %q timed out %v, want it stopped by the cap on files and directories",
			clip(h.Stdout), clip(h.Stderr), h.TimedOut)
	}
	next := time.Now()
	after := run(t, ex, executors.Request{Language: executors.Python, Code: runnerStart + "\nimport os\nprint(len(os.listdir('/tmp/cf')), os.listdir('.'))",
		Limits: generous})
	t.Logf("next run on the slot came back after %v (runner started %s, now %s)", time.Since(next), strings.TrimSpace(before.Stdout), strings.Fields(after.Stdout + " x")[0])
	lines := strings.SplitN(after.Stdout, "\n", 2)
	if lines[0] == strings.TrimSpace(before.Stdout) {
		t.Errorf("the instance that held the directories served the next run (pid 1 started at %s both times): want it replaced", lines[0])
	}
	if len(lines) < 2 || lines[1] != "1 ['main.py']\n" {
		t.Errorf("next run: got %q, want a fresh scratch root with only its own run", after.Stdout)
	}
}

// manyThreads starts 32 threads of a ThreadPoolExecutor that all live at
// once (a barrier): under an address-space limit each thread's stack and
// malloc arena counted, and this failed under the default 512 MiB.
const manyThreads = `
import threading
from concurrent.futures import ThreadPoolExecutor
b = threading.Barrier(32)
def f(x):
    b.wait(timeout=30)
    return x * x
with ThreadPoolExecutor(32) as p:
    print(sum(p.map(f, range(32))), threading.active_count())
`
