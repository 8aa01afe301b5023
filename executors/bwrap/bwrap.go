// Package bwrap is the bubblewrap driver: each sandbox instance is a bwrap
// process with every namespace unshared (no network but a downed loopback),
// a read-only /usr, a private size-limited tmpfs /tmp, a fresh /proc and
// /dev, no host environment and no capabilities. The shared runner and pool
// in package executors do the rest. A session may take its /usr, /etc and
// /var from a system root instead of the host (executors.Mount.System: the
// InterCode Bash tasks' own userland), read-only as the host's are.
//
// When the host process is root, bwrap is started as an unprivileged uid per
// pool slot (a block of uids reserved per executor from FirstSlotUID, see
// executors.ReserveIDs), so a run cannot read root-owned host files, the
// process limit is per slot, and slots cannot signal or ptrace each other.
// Otherwise bwrap runs as the calling user in a user namespace.
//
// On amd64 hosts the payload also runs under a seccomp filter (a classic-BPF
// program built in seccomp.go, handed to bwrap's --seccomp through a pipe and
// installed just before exec, so bwrap's own setup is unaffected). It kills
// the process on any architecture other than x86_64 (i386 int 0x80 calls),
// returns EPERM for x32 calls and for: ptrace, process_vm_readv/writev;
// add_key, request_key, keyctl; mount, umount2, pivot_root, the new mount API
// (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr),
// unshare, setns; init_module, finit_module, delete_module, kexec_load,
// kexec_file_load; reboot, swapon, swapoff, acct, syslog, quotactl,
// quotactl_fd, lookup_dcookie, iopl, ioperm; bpf, perf_event_open,
// userfaultfd, io_uring_setup/enter/register; open_by_handle_at,
// name_to_handle_at, fanotify_init; and personality with anything but a
// query or a plain Linux personality (as Docker's default profile). Every
// other call is allowed. On other architectures it logs that it runs
// without the filter.
//
// URL: bwrap://?memory=512MiB&timeout=5s&pool=4&disk=256MiB (see
// executors.ParseOptions; disk= sizes the /tmp tmpfs).
package bwrap

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// DefaultDisk is the size of an instance's /tmp.
const DefaultDisk = 256 << 20

func init() {
	executors.Register("bwrap", func(ctx context.Context, u *url.URL) (executors.Executor, error) {
		cfg, o, err := parseURL(u)
		if err != nil {
			return nil, err
		}
		l, err := NewLauncher(cfg)
		if err != nil {
			return nil, err
		}
		return &executor{Executor: executors.NewPool(l, executors.PoolOptions{Size: o.Pool, Limits: o.Limits}), l: l}, nil
	})
	executors.RegisterChecker("bwrap", func(u *url.URL) error {
		_, _, err := parseURL(u)
		return err
	})
}

// parseURL reads bwrap://?OPTIONS: the shared options plus disk=, shm= and
// cgroup=.
func parseURL(u *url.URL) (Config, executors.Options, error) {
	o, err := executors.ParseOptions(u, "disk", "shm", "cgroup")
	if err != nil {
		return Config{}, o, fmt.Errorf("bwrap: %w", err)
	}
	if o.Image != "" || u.Opaque != "" {
		return Config{}, o, fmt.Errorf("bwrap: runs on the host system, not an image (got %q)", o.Image+u.Opaque)
	}
	cfg := Config{}
	for _, opt := range []struct {
		key   string
		field *int64
	}{{"disk", &cfg.DiskBytes}, {"shm", &cfg.ShmBytes}} {
		if d := o.Extra.Get(opt.key); d != "" {
			if *opt.field, err = executors.ParseBytes(d); err != nil {
				return Config{}, o, fmt.Errorf("bwrap: option %s=%q: %w", opt.key, d, err)
			}
		}
	}
	switch m := o.Extra.Get("cgroup"); m {
	case "", "auto", "off", "on":
		cfg.Cgroup = m
	default:
		return Config{}, o, fmt.Errorf("bwrap: option cgroup=%q: want auto, on or off", m)
	}
	return cfg, o, nil
}

// executor releases the launcher's uid block when the pool closes.
type executor struct {
	executors.Executor
	l *Launcher
}

func (e *executor) Close() error {
	err := e.Executor.Close()
	e.l.Close()
	return err
}

// Config configures a Launcher.
type Config struct {
	// Bwrap is the bwrap binary; empty means "bwrap" on PATH.
	Bwrap string
	// DiskBytes sizes each instance's /tmp tmpfs; zero means DefaultDisk.
	DiskBytes int64
	// ShmBytes sizes each instance's /dev/shm tmpfs; zero means DefaultShm.
	ShmBytes int64
	// Cgroup: "auto" (or "") gives each instance a memory and pids cgroup
	// where this process can make one, else falls back to the runner's
	// accounting; "on" requires cgroups; "off" always uses the fallback.
	Cgroup string
}

// DefaultShm is the size of an instance's /dev/shm.
const DefaultShm = 64 << 20

// FirstSlotUID is the first host uid the driver gives slots when it runs as
// root: each Launcher reserves its own block of executors.SlotsPerBlock
// uids from here (executors.ReserveIDs), so two executors on one host never
// share a slot uid or its process limit.
const FirstSlotUID = 100000

// slotBlocks is how many uid blocks the driver may use.
const slotBlocks = 64

// Launcher starts runner processes in bubblewrap sandboxes.
type Launcher struct {
	bwrap string
	disk  int64
	shm   int64
	root  bool
	ids   *executors.IDBlock // nil unless root
	cg    *cgroups           // nil: no whole-run cgroup limits (fallback)
}

// NewLauncher checks that bwrap exists, reserves slot uids (as root) and
// finds where instance cgroups can be made.
func NewLauncher(cfg Config) (*Launcher, error) {
	bin := cfg.Bwrap
	if bin == "" {
		bin = "bwrap"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("bwrap: bubblewrap not found (install the bubblewrap package): %w", err)
	}
	if cfg.DiskBytes == 0 {
		cfg.DiskBytes = DefaultDisk
	}
	if cfg.ShmBytes == 0 {
		cfg.ShmBytes = DefaultShm
	}
	if seccompFilter == nil {
		log.Printf("bwrap: no seccomp filter on %s (its syscall table is amd64's); sandboxes run without one", runtime.GOARCH)
	}
	l := &Launcher{bwrap: path, disk: cfg.DiskBytes, shm: cfg.ShmBytes, root: os.Geteuid() == 0}
	if cfg.Cgroup != "off" {
		cg, err := findCgroups()
		switch {
		case err == nil:
			l.cg = cg
		case cfg.Cgroup == "on":
			return nil, fmt.Errorf("bwrap: cgroup=on: %w", err)
		default:
			warnNoCgroup.Do(func() {
				log.Printf("bwrap: no per-run cgroup (%v); the runner accounts for each run's memory and kills it past the limit", err)
			})
		}
	}
	if l.root {
		if l.ids, err = executors.ReserveIDs("bwrap", FirstSlotUID, slotBlocks); err != nil {
			return nil, fmt.Errorf("bwrap: %w", err)
		}
	}
	return l, nil
}

var warnNoCgroup sync.Once

// Cgroups reports whether instances get whole-run cgroup limits.
func (l *Launcher) Cgroups() bool { return l.cg != nil }

// SlotUID is the host uid slot runs as (root only; -1 otherwise).
func (l *Launcher) SlotUID(slot int) int {
	if l.ids == nil {
		return -1
	}
	return l.ids.UID(slot)
}

// Close releases the launcher's slot uids. Instances must be closed first.
func (l *Launcher) Close() {
	if l.ids != nil {
		l.ids.Release()
	}
}

// etcFiles are the few /etc files the sandbox sees instead of the host's: a
// passwd naming only the sandbox user, and name resolution from a hosts file
// only, so resolving a name sends nothing. They are handed to bwrap through
// pipes (--ro-bind-data), so no host directory has to be readable by the
// slot's uid and nothing is left behind in $TMPDIR.
var etcFiles = []struct{ name, text string }{
	{"passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:1000:1000:sandbox:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
	{"group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
	{"hosts", "127.0.0.1 localhost\n::1 localhost\n"},
	{"nsswitch.conf", "passwd: files\ngroup: files\nhosts: files\n"},
}

// etcFD is the descriptor number bwrap reads etcFiles[i] from: the first
// of exec.Cmd.ExtraFiles is fd 3.
func etcFD(i int) string { return strconv.Itoa(3 + i) }

// seccompFD is the descriptor bwrap reads the seccomp filter from: the
// ExtraFiles entry after the /etc pipes.
var seccompFD = 3 + len(etcFiles)

// etcPipes returns read ends holding each of etcFiles, in order. The files
// are tiny, so each fits in its pipe's buffer and the write end is closed at once.
func etcPipes() ([]*os.File, error) {
	var rs []*os.File
	for _, f := range etcFiles {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(rs)
			return nil, fmt.Errorf("bwrap: %w", err)
		}
		_, err = w.WriteString(f.text)
		w.Close()
		if err != nil {
			r.Close()
			closeAll(rs)
			return nil, fmt.Errorf("bwrap: writing /etc/%s: %w", f.name, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Info implements executors.Launcher.
// The image names the host's Python, since that is what runs: a changed
// interpreter must not match cached results of the old one. It declares the
// scratch size (disk=) and whether the seccomp filter applies.
func (l *Launcher) Info() executors.Info {
	return executors.Info{Driver: "bwrap", Image: hostImage(), DiskBytes: l.disk, SyscallFilter: seccompFilter != nil}
}

var hostImage = sync.OnceValue(func() string {
	p, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		return "host"
	}
	st, err := os.Stat(p)
	if err != nil {
		return "host"
	}
	return fmt.Sprintf("host:%s@%d-%d", filepath.Base(p), st.Size(), st.ModTime().Unix())
})

// Args is the bwrap command line for argv (exported for tests and docs). It
// reads the /etc files and the seccomp filter from descriptors 3 and up,
// so start it through Command, which attaches them.
func (l *Launcher) Args(argv []string) []string { return l.args(argv, nil, nil) }

// ArgsMounts is Args with host paths bound in (--bind, --ro-bind).
func (l *Launcher) ArgsMounts(argv []string, mounts []executors.Mount) []string {
	return l.args(argv, nil, mounts)
}

func (l *Launcher) args(argv []string, cg *cgroup, mounts []executors.Mount) []string {
	root, sys, mounts := splitRoot(mounts)
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
		// The runner is pid 1: the kernel drops signals its children send
		// it, and no same-uid init is left for them to ptrace.
		"--as-pid-1",
		"--cap-drop", "ALL", "--clearenv",
	}
	for _, kv := range executors.RunnerEnv() {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	// A sandbox with its own root file system is a container's analogue
	// (InterCode's run as root): uid 0 of its user namespace, still with
	// no capability, so it owns its / and nothing else.
	uid := "1000"
	if root != nil {
		uid = "0"
	}
	a = append(a, "--uid", uid, "--gid", uid, "--hostname", "sandbox")
	// usr is the sandbox's /usr: the host's, or a system root's (whose
	// path the slot's uid must reach, as any mount source's).
	usr := []string{"--ro-bind", "/usr", "/usr"}
	if sys != nil {
		usr = []string{"--ro-bind", filepath.Join(sys.Source, "usr"), "/usr"}
	}
	if root != nil {
		// The caller's directory is /, mounted first so that everything
		// below lands on it; /etc and /sys are the sandbox's own (read-only
		// tmpfs, or the system root's read-only /etc), so nothing written
		// there reaches the caller's directory. The /bin, /sbin, /lib links
		// are already there (prepareRoot): bwrap 0.8's --symlink fails on an
		// existing link.
		op := "--bind"
		if root.ReadOnly {
			op = "--ro-bind"
		}
		a = append(a, op, root.Source, "/")
		a = append(a, usr...)
		if sys == nil {
			a = append(a, "--tmpfs", "/etc")
		}
		a = append(a, "--tmpfs", "/sys")
	} else {
		a = append(a, usr...)
		for _, ln := range usrLinks() {
			a = append(a, "--symlink", "usr/"+ln, "/"+ln)
		}
	}
	if sys != nil {
		// The system root's own /etc and /var: its passwd, ld.so.cache,
		// /var/log. Only name resolution is replaced, so it reads the hosts
		// file and nothing else.
		a = append(a, "--ro-bind", filepath.Join(sys.Source, "etc"), "/etc", "--ro-bind", filepath.Join(sys.Source, "var"), "/var")
	} else {
		// /etc/java-*: the JDK's own configuration (java.security is a symlink
		// into it); public files the JVM refuses to start without.
		for _, f := range []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives", "/etc/ssl/openssl.cnf", "/etc/java-17-openjdk"} {
			a = append(a, "--ro-bind-try", f, f)
		}
	}
	for i, f := range etcFiles {
		if sys != nil && !sysEtc(sys.Source, f.name) {
			continue
		}
		a = append(a, "--ro-bind-data", etcFD(i), "/etc/"+f.name)
	}
	if seccompFilter != nil {
		a = append(a, "--seccomp", strconv.Itoa(seccompFD))
	}
	if cg != nil {
		a = append(a, "--ro-bind", cg.mem, cg.bindTarget())
		if cg.cpu != "" {
			// The runner reads the run's CPU time from cpuacct.usage.
			a = append(a, "--ro-bind", cg.cpu, "/sys/fs/cgroup/cpuacct")
		}
	}
	a = append(a,
		"--proc", "/proc",
		// /dev: device nodes and the standard links (fd, stdin, stdout,
		// stderr, ptmx), then read-only, so no run can replace a link or
		// store data there; /dev/shm is its own size-limited tmpfs and
		// /dev/mqueue shows the instance's POSIX message queues to the
		// runner's checks.
		"--dev", "/dev",
		"--size", fmt.Sprint(l.shm), "--tmpfs", "/dev/shm",
		"--mqueue", "/dev/mqueue",
		"--remount-ro", "/dev",
		"--size", fmt.Sprint(l.disk), "--tmpfs", "/tmp")
	// Host paths bound in for sessions (a task's /testbed): after /tmp,
	// before / becomes read-only (a bind keeps its own writability). A
	// mount at / (the sandbox's root) was bound first.
	for _, m := range mounts {
		op := "--bind"
		if m.ReadOnly {
			op = "--ro-bind"
		}
		a = append(a, op, m.Source, m.Target)
	}
	if root == nil && sys == nil {
		if k := nodeKernel(); k != "" {
			a = append(a, "--ro-bind", k, nodeKernelTarget)
		}
	}
	if root == nil {
		a = append(a, "--remount-ro", "/")
	} else {
		if sys == nil {
			a = append(a, "--remount-ro", "/etc")
		}
		a = append(a, "--remount-ro", "/sys")
	}
	a = append(a, "--chdir", "/tmp", "--")
	return append(a, argv...)
}

// sysEtc reports whether the system root has /etc/name, which an
// etcFiles entry may then replace: its passwd and group are the system's
// own (its users, as in its image), so only the name-resolution files
// are replaced.
func sysEtc(sysRoot, name string) bool {
	if name == "passwd" || name == "group" {
		return false
	}
	st, err := os.Lstat(filepath.Join(sysRoot, "etc", name))
	return err == nil && st.Mode().IsRegular()
}

// usrLinks are the top-level links into /usr the sandbox gets (merged /usr).
func usrLinks() []string {
	ls := []string{"bin", "sbin", "lib"}
	if _, err := os.Stat("/usr/lib64"); err == nil {
		ls = append(ls, "lib64")
	}
	return ls
}

// splitRoot separates a mount whose target is / (the sandbox's root file
// system) and a system root (Mount.System) from the others.
func splitRoot(mounts []executors.Mount) (root, sys *executors.Mount, rest []executors.Mount) {
	for i := range mounts {
		switch {
		case mounts[i].System:
			sys = &mounts[i]
		case mounts[i].Target == "/":
			root = &mounts[i]
		default:
			rest = append(rest, mounts[i])
		}
	}
	return root, sys, rest
}

// rootDirs are the mount points args puts in a root directory.
var rootDirs = []string{"usr", "proc", "dev", "tmp", "etc", "sys"}

// prepareRoot makes dir fit to be a sandbox's root: the mount points args
// needs are directories and the links into /usr are links, whatever a
// previous sandbox on that directory left there (bwrap would otherwise
// follow or fail on them). Nothing runs on dir meanwhile.
func prepareRoot(dir string, sys bool) error {
	dirs := rootDirs
	if sys {
		dirs = append(dirs[:len(dirs):len(dirs)], "var") // the system root's /var
	}
	for _, n := range dirs {
		p := filepath.Join(dir, n)
		if st, err := os.Lstat(p); err == nil && st.IsDir() {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("bwrap: preparing root %s: %w", dir, err)
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("bwrap: preparing root %s: %w", dir, err)
		}
	}
	for _, n := range usrLinks() {
		p, want := filepath.Join(dir, n), "usr/"+n
		if t, err := os.Readlink(p); err == nil && t == want {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("bwrap: preparing root %s: %w", dir, err)
		}
		if err := os.Symlink(want, p); err != nil {
			return fmt.Errorf("bwrap: preparing root %s: %w", dir, err)
		}
	}
	return nil
}

// Command is the bwrap command for argv with the pipes Args names (the
// /etc files, the seccomp filter) as its ExtraFiles, no environment and
// working directory /. The caller closes cmd.ExtraFiles once the command
// has started; each pipe can be read once, so a Command runs once.
func (l *Launcher) Command(argv []string) (*exec.Cmd, error) { return l.command(argv, nil, nil) }

func (l *Launcher) command(argv []string, cg *cgroup, mounts []executors.Mount) (*exec.Cmd, error) {
	files, err := etcPipes()
	if err != nil {
		return nil, err
	}
	if seccompFilter != nil {
		r, err := seccompPipe()
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, r)
	}
	cmd := exec.Command(l.bwrap, l.args(argv, cg, mounts)...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	return cmd, nil
}

// Launch implements executors.Launcher. ctx bounds only the start; the
// instance lives until the returned Conn is closed.
func (l *Launcher) Launch(ctx context.Context, slot int, argv []string) (executors.Conn, error) {
	return l.LaunchMounts(ctx, slot, argv, nil)
}

// SlotOwner implements executors.MountLauncher: the slot's uid when the host
// process is root, else the caller (mapped to the sandbox user).
func (l *Launcher) SlotOwner(slot int) (uid, gid int) {
	if l.ids != nil {
		id := l.ids.UID(slot)
		return id, id
	}
	return os.Getuid(), os.Getgid()
}

// LaunchMounts implements executors.MountLauncher. bwrap binds the sources
// as the slot's uid, so each source and its parents must be searchable by it.
func (l *Launcher) LaunchMounts(ctx context.Context, slot int, argv []string, mounts []executors.Mount) (executors.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cg *cgroup
	if l.cg != nil {
		var err error
		if cg, err = l.cg.create(); err != nil {
			return nil, fmt.Errorf("bwrap: %w", err)
		}
	}
	if root, sys, _ := splitRoot(mounts); root != nil {
		if err := prepareRoot(root.Source, sys != nil); err != nil {
			removeCgroup(cg)
			return nil, err
		}
	}
	cmd, err := l.command(argv, cg, mounts)
	if err != nil {
		removeCgroup(cg)
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	timeNS := false
	if l.ids != nil {
		id := l.ids.UID(slot)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(id), Gid: uint32(id), Groups: []uint32{}}
		timeNS = probeTimeNS()
	}
	// The kernel channel (executors.KernelChannel): where the instance's
	// cgroup counts its CPU time, a python session's cells can go from
	// the host to the kernel directly; the runner takes the other end
	// when the session opens.
	var chHost *os.File
	chFD := 0
	if cg != nil && (cg.v2 || cg.cpu != "") {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll(cmd.ExtraFiles)
			removeCgroup(cg)
			return nil, fmt.Errorf("bwrap: kernel channel: %w", err)
		}
		chHost = os.NewFile(uintptr(fds[0]), "kernel-channel")
		chFD = 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fds[1]), "kernel-channel-sandbox"))
	}
	files := cmd.ExtraFiles
	// Plain pipes rather than StdinPipe/StdoutPipe: Wait must not close our
	// read end while the pool still reads the runner's last line.
	inR, inW, err := os.Pipe()
	if err != nil {
		closeAll(files)
		closeChannel(chHost)
		removeCgroup(cg)
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(files)
		closeChannel(chHost)
		inR.Close()
		inW.Close()
		removeCgroup(cg)
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Stderr = &limitedBuffer{max: 4096}
	var waited <-chan error
	if timeNS {
		waited, err = startInTimeNS(cmd, Uptime)
	} else {
		err = cmd.Start()
	}
	closeAll(files)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		closeChannel(chHost)
		removeCgroup(cg)
		return nil, fmt.Errorf("bwrap: starting sandbox: %w", err)
	}
	c := &conn{cmd: cmd, stdin: inW, stdout: outR, done: make(chan struct{}), cg: cg, ch: chHost, chFD: chFD}
	go func() {
		if waited != nil {
			c.waitErr = <-waited
		} else {
			c.waitErr = cmd.Wait()
		}
		close(c.done)
	}()
	if c.ch != nil {
		return connChannel{c}, nil
	}
	return c, nil
}

type conn struct {
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	done    chan struct{}
	waitErr error
	once    sync.Once
	cg      *cgroup  // nil without cgroup limits
	ch      *os.File // the host's end of the kernel channel, or nil
	chFD    int      // the channel's descriptor in the runner
}

func closeChannel(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// connChannel is a conn with a kernel channel: only it implements
// executors.KernelChannel, so the pool sees the capability only where it
// holds.
type connChannel struct{ *conn }

// Channel implements executors.KernelChannel.
func (c connChannel) Channel() (*os.File, int) { return c.ch, c.chFD }

// Counters implements executors.KernelChannel.
func (c connChannel) Counters() (cpu, oom, procs string) {
	procs = filepath.Join(c.cg.mem, "cgroup.procs")
	if c.cg.v2 {
		return filepath.Join(c.cg.mem, "cpu.stat"), filepath.Join(c.cg.mem, "memory.events"), procs
	}
	return filepath.Join(c.cg.cpu, "cpuacct.usage"), filepath.Join(c.cg.mem, "memory.oom_control"), procs
}

// removeCgroup removes cg in the background (its processes may take a
// moment to go); errors are only logged, as nothing depends on them.
func removeCgroup(cg *cgroup) {
	if cg == nil {
		return
	}
	go func() {
		if err := cg.remove(); err != nil {
			log.Printf("bwrap: %v", err)
		}
	}()
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err != nil && n == 0 {
		// Say why the sandbox ended, from bwrap's own stderr.
		select {
		case <-c.done:
		case <-time.After(time.Second):
		}
		if msg := strings.TrimSpace(c.cmd.Stderr.(*limitedBuffer).String()); msg != "" {
			return 0, fmt.Errorf("%w (bwrap: %s)", err, msg)
		}
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// StdoutPipe implements executors.PipeConn: the pool reads answers from
// the pipe directly, on the goroutine that waits for them.
func (c *conn) StdoutPipe() *os.File { return c.stdout }

// StdinPipe implements executors.PipeConn: requests go into the pipe
// directly.
func (c *conn) StdinPipe() *os.File { return c.stdin }

// Close kills the sandbox: bwrap's process group, then bwrap's pid 1 takes
// every process in the instance's PID namespace down with it.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		c.stdout.Close()
		closeChannel(c.ch)
		if c.cmd.Process != nil {
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-c.done:
			// Every process of the instance is gone (bwrap's pid 1 took
			// them down): the cgroup can go now.
			if c.cg != nil {
				if err := c.cg.remove(); err != nil {
					log.Printf("bwrap: %v", err)
				}
			}
		case <-time.After(5 * time.Second):
			removeCgroup(c.cg)
		}
	})
	var ee *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &ee) {
		return c.waitErr
	}
	return nil
}

type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		w.b = append(w.b, p[:room]...)
	}
	return len(p), nil
}

func (w *limitedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
