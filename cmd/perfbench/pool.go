package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
	"github.com/codefeedback/codefeedback/executors/drivertest"
)

// The executors' bench programs (cells.go runs mbpp as a cell).
const trivial, mbpp = drivertest.TrivialCode, drivertest.MBPPCode

const concurrency = 2

// liveCPU is the CPU seconds of this process's live descendants (their
// own and their reaped children's), from /proc: a pool's sandbox
// processes run until it closes, so their CPU is not yet in our rusage.
func liveCPU() float64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// After the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based from state.
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var t int64
		for _, k := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[k], 10, 64)
			t += v
		}
		procs[pid] = proc{ppid, t}
	}
	kids := map[int][]int{}
	for pid, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	var ticks int64
	var walk func(int)
	walk = func(pid int) {
		for _, k := range kids[pid] {
			// A live child's CPU is its own; its reaped children are in its
			// cutime. Live grandchildren are not yet in anyone's cutime.
			ticks += procs[k].ticks
			walk(k)
		}
	}
	walk(os.Getpid())
	return float64(ticks) / 100 // USER_HZ
}

// measureLive is measure including the CPU of live descendants.
func measureLive(f func() error) (cost, error) {
	start, cpu0 := time.Now(), cpuNow()+liveCPU()
	err := f()
	return cost{time.Since(start).Seconds(), cpuNow() + liveCPU() - cpu0}, err
}

// runMany runs code n times through ex, concurrency at a time.
func runMany(ctx context.Context, ex executors.Executor, code string, n int) error {
	return drivertest.RunMany(ctx, ex, code, n, concurrency)
}

// forkExecMany starts python3 -c code n times, concurrency at a time: the
// warm fork()+exec loop of the same program.
func forkExecMany(ctx context.Context, code string, n int) error {
	env := []string{"PATH=" + os.Getenv("PATH")}
	return drivertest.Parallel(n, concurrency, func() error {
		cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", code)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("python3: %w: %s", err, out)
		}
		return nil
	})
}

// openWarm opens a driver URL and waits until a run has gone through
// every slot, so what is measured next is warm.
func openWarm(ctx context.Context, url string) (executors.Executor, error) {
	ex, err := executors.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := runMany(ctx, ex, trivial, 2*concurrency); err != nil {
		ex.Close()
		return nil, err
	}
	return ex, nil
}

// benchPool: isolated runs through the warm bwrap pool against a warm
// fork()+exec loop of the same program outside any sandbox.
func benchPool(ctx context.Context, e *env) ([]row, error) {
	n := e.n(150)
	ex, err := openWarm(ctx, "bwrap://?pool=2")
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	var rows []row
	for _, p := range drivertest.BenchPrograms {
		// Alternate halves so that a change in the machine's load hits
		// both sides alike.
		var ours, base cost
		for range 2 {
			c, err := measureLive(func() error { return runMany(ctx, ex, p.Code, n/2) })
			if err != nil {
				return rows, err
			}
			ours = ours.add(c)
			c, err = measureLive(func() error { return forkExecMany(ctx, p.Code, n/2) })
			if err != nil {
				return rows, err
			}
			base = base.add(c)
		}
		rows = append(rows, pair("pooled isolated runs ("+p.Name+")", "bwrap pool=2", "fork+exec python3 -c", ours, base, 1/0.6,
			fmt.Sprintf("%d runs, %d at a time; %.0f runs/s vs %.0f", n, concurrency, float64(n)/ours.wall, float64(n)/base.wall)))
	}
	return rows, nil
}

// benchExecCLI: one-shot `codefeedback exec` against plain bwrap with the
// driver's own sandbox arguments running the same program.
func benchExecCLI(ctx context.Context, e *env) ([]row, error) {
	n := e.n(10)
	prog := filepath.Join(e.dir, "prog.py")
	if err := os.WriteFile(prog, []byte(trivial), 0o644); err != nil {
		return nil, err
	}
	l, err := bwrap.NewLauncher(bwrap.Config{})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	plain := func() (cost, error) {
		cmd, err := l.Command([]string{"/usr/bin/python3", "-c", trivial})
		if err != nil {
			return cost{}, err
		}
		defer func() {
			for _, f := range cmd.ExtraFiles {
				f.Close()
			}
		}()
		start := time.Now()
		out, err := cmd.CombinedOutput()
		c := cost{wall: time.Since(start).Seconds()}
		if cmd.ProcessState != nil {
			c.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		}
		if err != nil {
			return c, fmt.Errorf("bwrap: %w: %s", err, out)
		}
		return c, nil
	}
	var ours, base cost
	for range 2 {
		c, err := repeat(n/2, func() (cost, error) {
			c, _, err := command(ctx, e.dir, nil, e.bin, "exec", "--executor", "bwrap", prog)
			return c, err
		})
		if err != nil {
			return nil, err
		}
		ours = ours.add(c)
		c, err = repeat(n/2, plain)
		if err != nil {
			return nil, err
		}
		base = base.add(c)
	}
	return []row{pair("one-shot exec", "codefeedback exec", "bwrap python3 -c", ours, base, 0,
		fmt.Sprintf("%d runs one after another", n))}, nil
}

// benchDocker: the Docker pool against the bwrap pool, same runs.
func benchDocker(ctx context.Context, e *env) ([]row, error) {
	image := os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE")
	if image == "" {
		image = "codefeedback-sandbox:bookworm"
	}
	if err := exec.CommandContext(ctx, "docker", "image", "inspect", image).Run(); err != nil {
		e.log("docker: skipped: no docker engine or no image %s (make sandbox-image)", image)
		return nil, nil
	}
	n := e.n(150)
	before := dockerContainers(ctx)
	dx, err := openWarm(ctx, "docker://"+image+"?pool=2")
	if err != nil {
		return nil, err
	}
	defer dx.Close()
	var ids []string
	for id := range dockerContainers(ctx) {
		if !before[id] {
			ids = append(ids, id)
		}
	}
	bx, err := openWarm(ctx, "bwrap://?pool=2")
	if err != nil {
		return nil, err
	}
	defer bx.Close()
	var ours, base cost
	for range 2 {
		cg0 := containersCPU(ids)
		c, err := measureLive(func() error { return runMany(ctx, dx, trivial, n/2) })
		if err != nil {
			return nil, err
		}
		c.cpu += containersCPU(ids) - cg0
		ours = ours.add(c)
		c, err = measureLive(func() error { return runMany(ctx, bx, trivial, n/2) })
		if err != nil {
			return nil, err
		}
		base = base.add(c)
	}
	return []row{pair("pooled runs, docker", "docker pool=2", "bwrap pool=2", ours, base, 1/0.7,
		fmt.Sprintf("%d runs; CPU includes the %d containers' cgroups; %.0f runs/s vs %.0f", n, len(ids), float64(n)/ours.wall, float64(n)/base.wall))}, nil
}

// dockerContainers lists running containers' full ids.
func dockerContainers(ctx context.Context) map[string]bool {
	out, err := exec.CommandContext(ctx, "docker", "ps", "-q", "--no-trunc").Output()
	m := map[string]bool{}
	if err != nil {
		return m
	}
	for _, id := range strings.Fields(string(out)) {
		m[id] = true
	}
	return m
}

// containersCPU sums the CPU seconds of containers' cgroups (v1 cpuacct
// or v2 cpu.stat).
func containersCPU(ids []string) float64 {
	var s float64
	for _, id := range ids {
		found := false
		for _, p := range []string{"/sys/fs/cgroup/cpuacct/docker/" + id, "/sys/fs/cgroup/cpuacct/" + id} {
			if b, err := os.ReadFile(p + "/cpuacct.usage"); err == nil {
				v, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
				s += v / 1e9
				found = true
				break
			}
		}
		if found {
			continue
		}
		for _, p := range []string{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat", "/sys/fs/cgroup/docker/" + id + "/cpu.stat"} {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
					f, _ := strconv.ParseFloat(v, 64)
					s += f / 1e6
				}
			}
			break
		}
	}
	return s
}
