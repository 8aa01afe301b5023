package bwrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// Whole-run limits. Each sandbox instance gets its own memory and pids
// cgroup (v1 memory+pids controllers, or v2 where this process's cgroup
// delegates both), created below this process's own cgroup so the host's
// limits still apply. Before every run the pool sets the instance's limits
// to the run's: memory.limit_in_bytes / memory.max covers every process of
// the run, the tmpfs pages of /tmp and /dev/shm and SysV shared memory;
// pids.max covers its processes and threads. The cgroup's directory is
// bound read-only into the sandbox, so the runner reads its OOM-kill
// counter. Where no cgroup can be made (not root, a read-only cgroupfs, v2
// without delegation), the runner's accounting fallback applies instead.

// runnerHeadroom is what the runner itself may add to an instance's cgroup
// beyond a run's memory limit: its pages from before the move stay charged
// to the parent, so this covers request decoding and result buffers.
const runnerHeadroom = 32 << 20

// pidsHeadroom counts the runner and bwrap's own processes.
const pidsHeadroom = 4

// cgroups is where this process makes its instances' cgroups.
type cgroups struct {
	v2         bool
	memParent  string // directory under which instance cgroups are made (v1 memory, or v2)
	pidsParent string // v1 pids directory; "" on v2 (same directory as memory)
	cpuParent  string // v1 cpuacct directory, "" without one; v2 counts CPU in every cgroup (cpu.stat)
	prefix     string // unique to this process: cf-PID-STARTTIME
}

// cgroupSeq numbers instance cgroups across every executor of the process:
// the prefix is per process, so a counter per executor made two executors
// open at once both create cf-PID-START-1 ("file exists").
var cgroupSeq atomic.Uint64

// findCgroups returns where this process can make instance cgroups, or an
// error saying why it cannot.
func findCgroups() (*cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("cf-%d-%s", os.Getpid(), procStartTime())
	if mem, ok := own["memory"]; ok {
		pids, ok := own["pids"]
		if !ok {
			return nil, errors.New("cgroup v1 without a pids controller")
		}
		cg := &cgroups{
			memParent:  filepath.Join("/sys/fs/cgroup/memory", mem),
			pidsParent: filepath.Join("/sys/fs/cgroup/pids", pids),
			prefix:     prefix,
		}
		// A cpuacct cgroup per instance gives the runner the run's CPU
		// time (a whole-run CPU limit); without one it adds up /proc.
		if cpu, ok := own["cpuacct"]; ok {
			dir := filepath.Join("/sys/fs/cgroup/cpuacct", cpu)
			if _, err := os.Stat(filepath.Join(dir, "cpuacct.usage")); err == nil {
				cg.cpuParent = dir
			}
		}
		err := cg.probe()
		if err != nil && cg.cpuParent != "" {
			cg.cpuParent = "" // not writable: the runner's /proc accounting counts CPU
			err = cg.probe()
		}
		return cg, err
	}
	if p, ok := own[""]; ok {
		dir := filepath.Join("/sys/fs/cgroup", p)
		ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		have := strings.Fields(string(ctl))
		if !contains(have, "memory") || !contains(have, "pids") {
			return nil, fmt.Errorf("cgroup v2: %s does not delegate the memory and pids controllers to its children "+
				"(run codefeedback in a delegated cgroup, e.g. systemd-run --scope -p Delegate=yes, with both enabled in cgroup.subtree_control)", dir)
		}
		cg := &cgroups{v2: true, memParent: dir, prefix: prefix}
		return cg, cg.probe()
	}
	return nil, errors.New("no memory cgroup in /proc/self/cgroup")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ownCgroups maps controller name to this process's cgroup path; "" is the
// v2 unified hierarchy.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	if _, v1 := out["memory"]; !v1 {
		// Hybrid hosts list an empty unified line too; use it only alone.
		if p, ok := out[""]; ok {
			return map[string]string{"": p}, sc.Err()
		}
	}
	return out, sc.Err()
}

// probe makes and removes one cgroup, so a read-only cgroupfs is found at
// open and not at the first run. It also removes instance cgroups left by
// processes that no longer exist (a crash or kill -9 skips Close).
func (c *cgroups) probe() error {
	for _, parent := range []string{c.memParent, c.pidsParent, c.cpuParent} {
		if parent == "" {
			continue
		}
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			var pid int
			var start string
			f := strings.SplitN(e.Name(), "-", 4)
			if len(f) != 4 || f[0] != "cf" || !e.IsDir() {
				continue
			}
			pid, _ = strconv.Atoi(f[1])
			start = f[2]
			if pid > 0 && procStartTimeOf(pid) != start {
				_ = os.Remove(filepath.Join(parent, e.Name())) // fails harmlessly while in use
			}
		}
	}
	g, err := c.create()
	if err != nil {
		return err
	}
	return g.remove()
}

// cgroup is one instance's cgroup.
type cgroup struct {
	v2        bool
	mem, pids string // directories; pids == mem on v2
	cpu       string // v1 cpuacct directory, or ""

	mu        sync.Mutex
	mem0      int64 // limits last written
	pidsLimit int
}

func (c *cgroups) create() (*cgroup, error) {
	name := fmt.Sprintf("%s-%d", c.prefix, cgroupSeq.Add(1))
	g := &cgroup{v2: c.v2, mem: filepath.Join(c.memParent, name)}
	if err := os.Mkdir(g.mem, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if c.v2 {
		g.pids = g.mem
		// No swap: the limit is memory, not memory plus swap.
		_ = os.WriteFile(filepath.Join(g.mem, "memory.swap.max"), []byte("0"), 0)
		return g, nil
	}
	g.pids = filepath.Join(c.pidsParent, name)
	if err := os.Mkdir(g.pids, 0o755); err != nil {
		os.Remove(g.mem)
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if c.cpuParent != "" {
		g.cpu = filepath.Join(c.cpuParent, name)
		if err := os.Mkdir(g.cpu, 0o755); err != nil {
			os.Remove(g.mem)
			os.Remove(g.pids)
			return nil, fmt.Errorf("cgroup: %w", err)
		}
	}
	return g, nil
}

// OOMDir is what the sandbox sees at /sys/fs/cgroup/memory (v1) or
// /sys/fs/cgroup (v2): the runner's OOM counter (executors/runner.py).
func (g *cgroup) bindTarget() string {
	if g.v2 {
		return "/sys/fs/cgroup"
	}
	return "/sys/fs/cgroup/memory"
}

// enter moves pids (whole thread groups) into the cgroup.
func (g *cgroup) enter(pids []int) error {
	for _, pid := range pids {
		for _, dir := range g.dirs() {
			err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			if err != nil && !errors.Is(err, os.ErrNotExist) && !isESRCH(err) {
				return fmt.Errorf("cgroup: moving %d into %s: %w", pid, dir, err)
			}
		}
	}
	return nil
}

// dirs are the cgroup's directories, one per hierarchy.
func (g *cgroup) dirs() []string {
	ds := uniq(g.mem, g.pids)
	if g.cpu != "" {
		ds = append(ds, g.cpu)
	}
	return ds
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func isESRCH(err error) bool { return strings.Contains(err.Error(), "no such process") }

// set makes memBytes and pids the instance's limits; cheap when unchanged.
func (g *cgroup) set(memBytes int64, pids int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if memBytes != g.mem0 {
		if err := g.setMemory(memBytes); err != nil {
			return err
		}
		g.mem0 = memBytes
	}
	if pids != g.pidsLimit {
		if err := os.WriteFile(filepath.Join(g.pids, "pids.max"), []byte(strconv.Itoa(pids)), 0); err != nil {
			return fmt.Errorf("cgroup: pids.max: %w", err)
		}
		g.pidsLimit = pids
	}
	return nil
}

func (g *cgroup) setMemory(n int64) error {
	v := []byte(strconv.FormatInt(n, 10))
	if g.v2 {
		if err := os.WriteFile(filepath.Join(g.mem, "memory.max"), v, 0); err != nil {
			return fmt.Errorf("cgroup: memory.max: %w", err)
		}
		return nil
	}
	// v1: memory+swap must stay >= memory, so the order depends on the
	// direction; memsw exists only where swap accounting is on.
	memsw := filepath.Join(g.mem, "memory.memsw.limit_in_bytes")
	_, err := os.Stat(memsw)
	hasSw := err == nil
	write := func(file string) error {
		if err := os.WriteFile(filepath.Join(g.mem, file), v, 0); err != nil {
			return fmt.Errorf("cgroup: %s: %w", file, err)
		}
		return nil
	}
	if hasSw && g.mem0 != 0 && n > g.mem0 { // (0: still unlimited, so this lowers)
		if err := write("memory.memsw.limit_in_bytes"); err != nil {
			return err
		}
		return write("memory.limit_in_bytes")
	}
	if err := write("memory.limit_in_bytes"); err != nil {
		return err
	}
	if hasSw {
		return write("memory.memsw.limit_in_bytes")
	}
	return nil
}

// remove deletes the cgroup once its processes are gone (they die with the
// instance; the kernel may take a moment to release them).
func (g *cgroup) remove() error {
	var err error
	for i := 0; i < 100; i++ {
		err = nil
		for _, dir := range g.dirs() {
			if e := os.Remove(dir); e != nil && !errors.Is(e, os.ErrNotExist) {
				err = e
			}
		}
		if err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("cgroup: %w", err)
}

// descendants returns pid and every process below it, from the kernel's
// children lists (or a scan of /proc where those are missing).
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, err := children(out[i])
		if err != nil {
			return scanDescendants(pid)
		}
		out = append(out, kids...)
	}
	return out
}

func children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func scanDescendants(root int) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppid(pid); ok {
			parent[pid] = pp
		}
	}
	out := []int{root}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func ppid(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(f[1])
	return n, err == nil
}

func procStartTime() string { return procStartTimeOf(os.Getpid()) }

// procStartTimeOf is field 22 of /proc/PID/stat, "" if pid does not exist.
func procStartTimeOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Started implements executors.Starter: the runner is idle, so bwrap and
// the runner are all the instance has; they move into its cgroup, and
// everything a run starts is born there.
func (c *conn) Started(ctx context.Context) error {
	if c.cg == nil || c.cmd.Process == nil {
		return nil
	}
	return c.cg.enter(descendants(c.cmd.Process.Pid))
}

// SetRunLimits implements executors.RunLimiter.
func (c *conn) SetRunLimits(ctx context.Context, lim executors.Limits) error {
	if c.cg == nil {
		return executors.ErrNoRunLimits
	}
	return c.cg.set(lim.MemoryBytes+runnerHeadroom, lim.Processes+pidsHeadroom)
}
