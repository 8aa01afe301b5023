package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
)

// cellLoop is the baseline: the same cells, in order, by exec() in one
// python3 process with one globals dict, each cell compiled and its
// output and traceback captured, as a session cell's are. It prints its
// own wall and CPU seconds, so interpreter start and a first, warming
// round are not counted.
const cellLoop = `import io, json, sys, time, traceback
cells, rounds = json.loads(sys.stdin.read()), int(sys.argv[1])
g = {"__name__": "__main__"}
so, se = sys.stdout, sys.stderr
def run(rounds):
    for _ in range(rounds):
        for i, code in enumerate(cells):
            sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
            try:
                exec(compile(code, "<cell-%d>" % i, "exec"), g)
            except BaseException:
                traceback.print_exc()
    sys.stdout, sys.stderr = so, se
run(1)  # warm, as the session is: imports cached
t0, c0 = time.perf_counter(), time.process_time()
run(rounds)
print(time.perf_counter() - t0, time.process_time() - c0)`

// cellSet is a workload: cells run in order, rounds times.
type cellSet struct {
	name  string
	cells []string
	// rounds at scale 1; one round is one pass over the cells.
	rounds int
}

// codeFeedbackCells are the python blocks of the assistant turns of the
// Code-Feedback sample under the -cells-data directory, in dialogue order;
// nil when no directory was given or the sample is not in it.
func codeFeedbackCells(e *env) ([]string, error) {
	dir := e.cellsData
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "codefeedback-sample", "code_feedback_sample.jsonl"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cells []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var d struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return nil, fmt.Errorf("code-feedback sample: %w", err)
		}
		for _, m := range d.Messages {
			if m.Role != "assistant" {
				continue
			}
			for _, bl := range parse.CodeBlocks(m.Content) {
				if bl.Lang == "python" && !bl.Unclosed && strings.TrimSpace(bl.Code) != "" {
					cells = append(cells, bl.Code)
				}
			}
		}
	}
	return cells, nil
}

// benchCells: cells of one Python session against the same cells run by
// exec() in one Python process. Three workloads: a trivial cell (the
// protocol's fixed cost, which no sandboxed session can bring near an
// in-process exec of microseconds), an MBPP-sized one, and the python
// cells of the Code-Feedback sample, which the target is judged on.
func benchCells(ctx context.Context, e *env) ([]row, error) {
	sets := []cellSet{{"trivial", []string{"x = 1\n"}, 400}, {"mbpp", []string{mbpp}, 400}}
	cf, err := codeFeedbackCells(e)
	if err != nil {
		return nil, err
	}
	if len(cf) == 0 {
		e.log("cells: no Code-Feedback sample (-cells-data %q): its row is skipped", e.cellsData)
	} else {
		sets = append(sets, cellSet{"Code-Feedback sample", cf, 20})
	}
	ex, err := openWarm(ctx, "bwrap://?pool=1")
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	var rows []row
	for _, set := range sets {
		r, err := benchCellSet(ctx, e, ex, set)
		if err != nil {
			return rows, fmt.Errorf("%s cells: %w", set.name, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// sandboxCPU is the CPU seconds of this process's live descendants (the
// sandbox instances) to the nanosecond: every thread's schedstat, plus
// what their reaped children used (stat's cutime and cstime). liveCPU's
// utime and stime come in ticks of 10 ms, a large error on the few tens of
// milliseconds a runner spends on a half-run of cells.
func sandboxCPU() float64 {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	reaped := map[int]int64{} // ticks
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the command: state(0) ppid(1) ... cutime(13) cstime(14).
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		cu, _ := strconv.ParseInt(f[13], 10, 64)
		cs, _ := strconv.ParseInt(f[14], 10, 64)
		reaped[pid] = cu + cs
	}
	self, ns, ticks := os.Getpid(), int64(0), int64(0)
	for pid := range parent {
		q := parent[pid]
		for q > 1 && q != self {
			q = parent[q]
		}
		if q != self {
			continue
		}
		ticks += reaped[pid]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		for _, t := range tasks {
			if b, err := os.ReadFile(t); err == nil {
				if f := strings.Fields(string(b)); len(f) > 0 {
					v, _ := strconv.ParseInt(f[0], 10, 64)
					ns += v
				}
			}
		}
	}
	return float64(ns)/1e9 + float64(ticks)/100 // USER_HZ
}

func benchCellSet(ctx context.Context, e *env, ex executors.Executor, set cellSet) (row, error) {
	rounds := max(2, e.n(set.rounds))
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{})
	if err != nil {
		return row{}, err
	}
	defer s.Close()
	cells, err := json.Marshal(set.cells)
	if err != nil {
		return row{}, err
	}
	pass := func() error {
		for _, c := range set.cells {
			// A cell's own failure (an import the sandbox lacks) is its
			// outcome, as in the baseline; only a broken session stops.
			if _, err := s.Exec(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := pass(); err != nil { // warm: imports cached, as the baseline's first round leaves them
		return row{}, err
	}
	var ours, base cost
	var host float64 // the pool's own CPU (this process), of ours.cpu
	for range 2 {
		// The scans of /proc stay outside the host's window: one costs
		// milliseconds, tens of microseconds per cell.
		s0 := sandboxCPU()
		t0, h0 := time.Now(), cpuNow()
		for range rounds / 2 {
			if err := pass(); err != nil {
				return row{}, err
			}
		}
		wall, h := time.Since(t0).Seconds(), cpuNow()-h0 // no child is reaped meanwhile: this process's CPU
		host += h
		ours = ours.add(cost{wall, h + sandboxCPU() - s0})
		_, out, err := commandStdin(ctx, e.dir, nil, cells, "/usr/bin/python3", "-c", cellLoop, strconv.Itoa(rounds/2))
		if err != nil {
			return row{}, err
		}
		var w, cpu float64
		if _, err := fmt.Sscan(string(out), &w, &cpu); err != nil {
			return row{}, fmt.Errorf("exec loop printed %q: %w", out, err)
		}
		base = base.add(cost{w, cpu})
	}
	n := rounds / 2 * 2 * len(set.cells)
	us := func(s float64) float64 { return s / float64(n) * 1e6 }
	// How many cells (the warm-up pass included) went from the host straight
	// to the kernel, without the runner (executors/kernelpath.go).
	direct := ""
	if kp, ok := s.(interface{ KernelPathCells() int }); ok {
		direct = fmt.Sprintf("; %d of %d without the runner", kp.KernelPathCells(), n+len(set.cells))
	}
	return pair("session cells ("+set.name+")", "bwrap session", "exec() in one python3", ours, base, 2,
		fmt.Sprintf("%d cells; %.0f cells/s vs %.0f; CPU per cell %.0f us (host %.0f, sandbox %.0f) vs %.0f%s",
			n, float64(n)/ours.wall, float64(n)/base.wall, us(ours.cpu), us(host), us(ours.cpu-host), us(base.cpu), direct)), nil
}
