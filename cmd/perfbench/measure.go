package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"text/tabwriter"
	"time"
)

// cost is what a piece of work took.
type cost struct{ wall, cpu float64 }

func (c cost) add(o cost) cost { return cost{c.wall + o.wall, c.cpu + o.cpu} }

// cpuNow is this process's CPU seconds plus those of every child it has
// waited for (and, through their own waits, of their descendants: bwrap
// reaps its sandbox's processes).
func cpuNow() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	t := func(r syscall.Rusage) float64 {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano()).Seconds()
	}
	return t(self) + t(kids)
}

// command runs argv in dir and returns its cost: wall, and the CPU of the
// process and its waited descendants (wait4's rusage). stdout is returned.
func command(ctx context.Context, dir string, env []string, argv ...string) (cost, []byte, error) {
	return commandStdin(ctx, dir, env, nil, argv...)
}

// commandStdin is command with stdin as the process's standard input.
func commandStdin(ctx context.Context, dir string, env []string, stdin []byte, argv ...string) (cost, []byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	c := cost{wall: time.Since(start).Seconds()}
	if cmd.ProcessState != nil {
		c.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		tail := errb.Bytes()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return c, out.Bytes(), fmt.Errorf("%s: %w\n%s", argv[0], err, tail)
	}
	return c, out.Bytes(), nil
}

// repeat runs f n times and sums the costs.
func repeat(n int, f func() (cost, error)) (cost, error) {
	var t cost
	for i := 0; i < n; i++ {
		c, err := f()
		if err != nil {
			return t, err
		}
		t = t.add(c)
	}
	return t, nil
}

// pair builds a row from our cost and the baseline's for the same work.
func pair(name, ours, base string, o, b cost, maxCost float64, note string) row {
	return row{name: name, ours: ours, base: base, wall: o.wall, baseWall: b.wall, cpu: o.cpu, baseCPU: b.cpu, maxCost: maxCost, note: note}
}

func ratio(a, b float64) string {
	if b <= 0 || a < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func printTable(w io.Writer, rows []row, load0, load1 string, took time.Duration) {
	fmt.Fprintf(w, "\ncodefeedback bench: %.0f s; load average %s at the start, %s at the end (1, 5, 15 min)\n", took.Seconds(), load0, load1)
	fmt.Fprintln(w, "cost ratios, ours over the baseline's for the same work, measured back to back in this process (below 1: cheaper)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tours\tbaseline\tCPU x\twall x\tCPU-s ours/base\twall-s ours/base\ttarget (CPU x)\tnote")
	for _, r := range rows {
		target := ""
		if r.maxCost > 0 {
			ok := "ok"
			if r.baseCPU > 0 && r.cpu/r.baseCPU > r.maxCost {
				ok = "MISSED"
			}
			target = fmt.Sprintf("<= %.2fx %s", r.maxCost, ok)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3g/%.3g\t%.3g/%.3g\t%s\t%s\n", r.name, r.ours, r.base,
			ratio(r.cpu, r.baseCPU), ratio(r.wall, r.baseWall), r.cpu, r.baseCPU, r.wall, r.baseWall, target, r.note)
	}
	tw.Flush()
}
