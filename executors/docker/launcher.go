package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codefeedback/codefeedback/executors"
)

// Labels put on every sandbox container, so containers left behind by a
// crashed process can be found (RemoveLeftovers) and tests can prove none leak.
const (
	LabelSandbox  = "codefeedback.sandbox" // always "1"
	LabelOwner    = "codefeedback.owner"   // host/pid/start-time of the process that created it
	LabelSlot     = "codefeedback.slot"
	LabelLauncher = "codefeedback.launcher" // unique per Launcher in this process
	LabelLaunch   = "codefeedback.launch"   // unique per launch, to find a container whose create call was cut off
)

// launcherSeq numbers the Launchers of this process.
var launcherSeq atomic.Uint64

// FirstSlotUID is the first host uid the driver gives containers: each
// Launcher reserves its own block of executors.SlotsPerBlock uids from here
// (executors.ReserveIDs), and slot n runs as block+n. A uid per slot makes
// RLIMIT_NPROC count per slot, so a fork bomb in one container cannot use up
// the process limit of the others (without a user namespace, container uids
// are host uids and the kernel counts processes per uid across all
// containers); a block per Launcher does the same across executors and
// codefeedback processes on one host. The range is not bwrap's, so the two
// drivers never share process counts either.
const FirstSlotUID = 300000

// slotBlocks is how many uid blocks the driver may use.
const slotBlocks = 64

// Headroom is what the runner itself may use in a container beyond a run's
// memory limit: the container's cgroup is the run's memory plus this.
const Headroom = 48 << 20

// PidsHeadroom counts the runner (and docker-init) in the container's pids limit.
const PidsHeadroom = 4

// removeTimeout bounds the removal of a container on Close; removal runs on a
// context detached from the caller's so cancellation never leaks a container.
const removeTimeout = 30 * time.Second

// stderrCap bounds the runner's stderr kept for diagnostics. The runner
// reports programs' output over the protocol; its own stderr is only for
// crashes, so a small buffer is enough.
const stderrCap = 16 << 10

// Config is the container-level isolation of one sandbox instance. Per-run
// limits (timeout, CPU time, address space, output caps) are enforced by the
// in-sandbox runner; these bound the whole instance, runner included.
type Config struct {
	Image     string // image reference as the user wrote it
	Memory    int64  // cgroup memory limit in bytes at creation; swap is disabled (MemorySwap = Memory)
	NanoCPUs  int64  // CPU quota in 1e-9 CPUs
	Pids      int64  // cgroup pids limit
	TmpBytes  int64  // size of the /tmp tmpfs (the runner's scratch root)
	ShmBytes  int64  // size of the /dev/shm tmpfs
	FileBytes int64  // RLIMIT_FSIZE for every process in the container
	OpenFiles int64  // RLIMIT_NOFILE for every process in the container
	// RunLimits makes each run's memory and process limits the container's
	// cgroup limits (plus Headroom and PidsHeadroom), updated before a run
	// whose limits differ. Off, Memory and Pids stay fixed, and where they
	// are above a run's limits the runner's accounting bounds the run.
	RunLimits bool
	// Init runs docker-init as PID 1. Off by default: the runner is meant
	// to be PID 1 (it reaps orphans; the kernel drops signals its children
	// send it; no same-uid init is left for a run to ptrace or kill).
	Init bool
}

// DefaultConfig leaves room above executors.DefaultLimits for the runner
// itself: a run's own limits are rlimits set by the runner, the container's
// are a backstop for everything in the instance together.
var DefaultConfig = Config{
	Image:     "codefeedback-sandbox:bookworm",
	Memory:    executors.DefaultLimits.MemoryBytes + Headroom,
	NanoCPUs:  1e9,
	Pids:      int64(executors.DefaultLimits.Processes) + PidsHeadroom,
	RunLimits: true,
	TmpBytes:  128 << 20,
	ShmBytes:  16 << 20,
	FileBytes: executors.DefaultLimits.FileBytes,
	OpenFiles: 1024,
}

// Launcher starts runner processes in fresh containers. It implements
// executors.Launcher and is safe for concurrent use.
type Launcher struct {
	cli     *client.Client
	cfg     Config
	imageID string // sha256:..., containers are created from the ID so a re-tag cannot change them
	owner   string
	python  string // the interpreter name that replaces argv[0] "python3"
	// cgroupParent is where containers' cgroups go: "/" under the cgroupfs
	// driver (see NewLauncher), else the daemon's default.
	cgroupParent string
	id           string // LabelLauncher value
	ids          *executors.IDBlock

	launches atomic.Uint64 // LabelLaunch values

	mu        sync.Mutex
	closed    bool
	live      map[*conn]bool // containers created and not yet removed
	launching sync.WaitGroup // launches in progress
}

// NewLauncher checks that the image is present (pulling it only if pull is
// set) and returns a launcher. It takes ownership of cli: Close closes it.
func NewLauncher(ctx context.Context, cli *client.Client, cfg Config, pull bool) (*Launcher, error) {
	if cfg.Image == "" {
		return nil, errors.New("docker: no image given")
	}
	id, err := resolveImage(ctx, cli, cfg.Image, pull)
	if err != nil {
		return nil, err
	}
	ids, err := executors.ReserveIDs("docker", FirstSlotUID, slotBlocks)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	owner := ownerID()
	l := &Launcher{cli: cli, cfg: cfg, imageID: id, owner: owner, id: owner + "/" + strconv.FormatUint(launcherSeq.Add(1), 10), ids: ids, live: map[*conn]bool{}}
	if l.python, err = l.findPython(ctx, "python3", "python"); err != nil {
		ids.Release()
		return nil, err
	}
	// Under the cgroupfs driver every container's cgroup is a child of
	// /docker, whose CPU weight is that of one process: on a loaded host
	// all containers together got one process's share, and the pool ran at
	// a third of bwrap's (whose processes each weigh as one). A container
	// directly under the root weighs as one process, as a bwrap sandbox's
	// runner does. Only CPU scheduling changes: the container's own memory,
	// pids and CPU quota limits are as before. (The systemd driver places
	// containers in slices, which it names; left as it is.)
	if info, err := cli.Info(ctx); err == nil && info.CgroupDriver == "cgroupfs" {
		l.cgroupParent = "/"
	}
	return l, nil
}

// resolveImage returns the image's ID, pulling it first when pull is set and
// it is missing.
func resolveImage(ctx context.Context, cli *client.Client, ref string, pull bool) (string, error) {
	ins, err := cli.ImageInspect(ctx, ref)
	if err == nil {
		return ins.ID, nil
	}
	if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	if !pull {
		if ref == DefaultConfig.Image {
			return "", fmt.Errorf("docker: image %s not present; build it offline with `make sandbox-image`", ref)
		}
		return "", fmt.Errorf("docker: image %s not present; `docker pull %s` (or add pull=1 to the driver URL), "+
			"or use the offline image %s that `make sandbox-image` builds", ref, ref, DefaultConfig.Image)
	}
	if err := pullImage(ctx, cli, ref); err != nil {
		return "", err
	}
	ins, err = cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("docker: inspect image %s after pull: %w", ref, err)
	}
	return ins.ID, nil
}

// Info names the driver and the exact image (reference and ID), so execution
// records and cache keys change when the image does, and declares the
// scratch size (tmp=). The engine's seccomp profile is not the driver's own
// filter (SyscallFilter false): this host's engine may not apply one.
func (l *Launcher) Info() executors.Info {
	return executors.Info{Driver: "docker", Image: l.cfg.Image + "@" + l.imageID, DiskBytes: l.cfg.TmpBytes}
}

// Config returns the container settings the launcher uses.
func (l *Launcher) Config() Config { return l.cfg }

// ImageID is the ID (sha256:...) of the image containers are created from.
func (l *Launcher) ImageID() string { return l.imageID }

// Client is the engine client, for callers that inspect containers (tests).
func (l *Launcher) Client() *client.Client { return l.cli }

// Close makes further launches fail, waits for launches in progress, removes
// every container this launcher created that is still there (their Conns'
// Close then returns nil), and releases the engine client. After it returns
// no container of this launcher exists.
func (l *Launcher) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.launching.Wait()
	l.mu.Lock()
	var cs []*conn
	for c := range l.live {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	var errs []error
	for _, c := range cs {
		err := c.Close()
		l.mu.Lock()
		retry := l.live[c]
		l.mu.Unlock()
		if retry { // Close already failed once, for an earlier caller
			err = c.remove()
		}
		errs = append(errs, err)
	}
	// Backstop: anything of this launcher the engine still has (a create
	// whose reply was lost) goes too.
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	errs = append(errs, l.removeLabelled(ctx))
	cancel()
	errs = append(errs, l.cli.Close())
	l.ids.Release()
	return errors.Join(errs...)
}

var errLauncherClosed = errors.New("docker: launcher is closed")

// Launch creates and starts a container running argv as a non-root user with
// no network, attached to its stdin and stdout. An argv[0] of "python3" is
// replaced by the interpreter NewLauncher found in the image (python3, else
// python), so stock images without a python3 name work too.
func (l *Launcher) Launch(ctx context.Context, slot int, argv []string) (executors.Conn, error) {
	if len(argv) == 0 {
		return nil, errors.New("docker: launch: empty argv")
	}
	argv = append([]string(nil), argv...)
	if argv[0] == "python3" {
		argv[0] = l.python
	}
	return l.launch(ctx, slot, argv, l.cfg.Init)
}

// LaunchMounts implements executors.MountLauncher: Launch with bind mounts.
func (l *Launcher) LaunchMounts(ctx context.Context, slot int, argv []string, mounts []executors.Mount) (executors.Conn, error) {
	if len(argv) == 0 {
		return nil, errors.New("docker: launch: empty argv")
	}
	for _, m := range mounts {
		if m.Target == "/" {
			// The container's root is its image.
			return nil, fmt.Errorf("docker: %w", executors.ErrNoRootMount)
		}
	}
	argv = append([]string(nil), argv...)
	if argv[0] == "python3" {
		argv[0] = l.python
	}
	return l.launch(ctx, slot, argv, l.cfg.Init, mounts...)
}

// SlotOwner implements executors.MountLauncher.
func (l *Launcher) SlotOwner(slot int) (uid, gid int) {
	id := l.ids.UID(slot)
	return id, id
}

// findPython returns the first of names that the image can execute from
// PATH. It starts a container without an init process, so a missing
// executable fails ContainerStart itself instead of a later exit.
func (l *Launcher) findPython(ctx context.Context, names ...string) (string, error) {
	for _, name := range names {
		c, err := l.launch(ctx, 0, []string{name, "-c", ""}, false)
		if err == nil {
			if err := c.Close(); err != nil {
				return "", err
			}
			return name, nil
		}
		if !isNotFound(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("docker: image %s has none of %v on PATH; the runner needs Python 3", l.cfg.Image, names)
}

// isNotFound reports whether a start failed because argv[0] is not on PATH.
func isNotFound(err error) bool {
	s := err.Error()
	return strings.Contains(s, "executable file not found") || strings.Contains(s, "no such file or directory")
}

func (l *Launcher) launch(ctx context.Context, slot int, argv []string, init bool, mounts ...executors.Mount) (executors.Conn, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errLauncherClosed
	}
	l.launching.Add(1)
	l.mu.Unlock()
	defer l.launching.Done()

	cfg, hc := l.containerConfig(slot, argv, init)
	for _, m := range mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	launchID := strconv.FormatUint(l.launches.Add(1), 10)
	cfg.Labels[LabelLaunch] = launchID
	created, err := l.cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		// A create cut off by ctx may still have made the container on the
		// engine's side: find it by its launch label and remove it.
		l.removeLaunch(launchID)
		return nil, fmt.Errorf("docker: create container from %s: %w", l.cfg.Image, err)
	}
	c := &conn{l: l, id: created.ID, done: make(chan struct{}), mem: hc.Memory, pids: *hc.PidsLimit}
	l.mu.Lock()
	l.live[c] = true
	l.mu.Unlock()
	// Attach before start so no early output is lost.
	hj, err := l.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		c.remove()
		return nil, fmt.Errorf("docker: attach container %.12s: %w", created.ID, err)
	}
	c.hj = hj
	pr, pw := io.Pipe()
	c.stdout = pr
	go func() {
		defer close(c.done)
		_, err := stdcopy.StdCopy(pw, &c.stderr, hj.Reader)
		pw.CloseWithError(err) // nil error: reader gets io.EOF
	}()
	if err := l.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("docker: start container %.12s (%s): %w", created.ID, argv[0], err)
	}
	return c, nil
}

// containerConfig builds the container's isolation: no network, read-only
// root, tmpfs scratch, non-root user, no capabilities, cgroup limits, and an
// environment that contains nothing from the host.
func (l *Launcher) containerConfig(slot int, argv []string, init bool) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:           l.imageID,
		Cmd:             argv,
		Entrypoint:      []string{}, // the image's entrypoint must not wrap the runner
		User:            l.SlotUser(slot),
		WorkingDir:      "/tmp",
		Env:             executors.RunnerEnv(),
		OpenStdin:       true,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		StdinOnce:       false,
		Tty:             false,
		NetworkDisabled: true,
		Labels: map[string]string{
			LabelSandbox:  "1",
			LabelOwner:    l.owner,
			LabelSlot:     strconv.Itoa(slot),
			LabelLauncher: l.id,
		},
	}
	pids := l.cfg.Pids
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		AutoRemove:     false,
		// The runner's output travels over the attach stream; a log driver
		// would copy every byte to disk for nothing.
		LogConfig: container.LogConfig{Type: "none"},
		Tmpfs: map[string]string{
			// exec: compiled languages run their binaries from the scratch
			// (Docker's tmpfs default is noexec).
			// nr_inodes: a hard cap on files and directories past the
			// runner's per-run cap (executors.RunInodes, polled), with room
			// for the runner's own.
			"/tmp":     fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777,nr_inodes=%d", l.cfg.TmpBytes, executors.RunInodes+4096),
			"/dev/shm": fmt.Sprintf("rw,nosuid,nodev,noexec,size=%d,mode=1777,nr_inodes=%d", l.cfg.ShmBytes, executors.RunInodes+4096),
		},
		Resources: container.Resources{
			CgroupParent: l.cgroupParent,
			Memory:       l.cfg.Memory,
			MemorySwap:   l.cfg.Memory,
			NanoCPUs:     l.cfg.NanoCPUs,
			PidsLimit:    &pids,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: l.cfg.OpenFiles, Hard: l.cfg.OpenFiles},
				{Name: "fsize", Soft: l.cfg.FileBytes, Hard: l.cfg.FileBytes},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	hc.Init = &init // explicit: an engine default of init=true must not apply to probes
	return cfg, hc
}

// conn is one running container: reads come from the runner's stdout, writes
// go to its stdin, and Close force-removes the container.
type conn struct {
	l      *Launcher
	id     string
	hj     types.HijackedResponse
	stdout *io.PipeReader
	stderr capped
	done   chan struct{} // closed when the demultiplexer stops

	closeOnce sync.Once
	closeErr  error

	limMu     sync.Mutex
	mem, pids int64 // the container's cgroup limits now
}

// SetRunLimits implements executors.RunLimiter: the container's cgroup
// memory (swap off) and pids limits become the run's, plus the runner's
// headroom; an engine call only when they change. With fixed container
// limits (Config.RunLimits off) above the run's, the runner accounts instead.
func (c *conn) SetRunLimits(ctx context.Context, lim executors.Limits) error {
	mem, pids := lim.MemoryBytes+Headroom, int64(lim.Processes)+PidsHeadroom
	c.limMu.Lock()
	defer c.limMu.Unlock()
	if !c.l.cfg.RunLimits {
		if c.mem > mem {
			return executors.ErrNoRunLimits
		}
		return nil
	}
	if mem == c.mem && pids == c.pids {
		return nil
	}
	_, err := c.l.cli.ContainerUpdate(ctx, c.id, container.UpdateConfig{Resources: container.Resources{
		Memory: mem, MemorySwap: mem, PidsLimit: &pids,
	}})
	if err != nil {
		return fmt.Errorf("docker: update container %.12s limits: %w", c.id, err)
	}
	c.mem, c.pids = mem, pids
	return nil
}

// Read reads the runner's stdout. When the container ends on its own and the
// runner wrote to stderr (a crash, a bad interpreter), the end is reported as
// an error carrying the start of that stderr instead of a bare io.EOF.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err == io.EOF {
		if s := c.stderr.String(); s != "" {
			err = fmt.Errorf("docker: container %.12s ended; runner stderr: %q", c.id, clip(s, 2000))
		}
	}
	return n, err
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.hj.Conn.Write(p)
	if err != nil {
		return n, fmt.Errorf("docker: write to container %.12s: %w", c.id, err)
	}
	return n, nil
}

// ID is the container's ID.
func (c *conn) ID() string { return c.id }

// Stderr returns the start of the runner's own stderr (not a program's), for
// diagnosing a runner that died.
func (c *conn) Stderr() string { return c.stderr.String() }

// Close removes the container (killing everything in it and discarding its
// tmpfs) on a context that survives the caller's cancellation. It is
// idempotent and waits for the output goroutine to end.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if c.hj.Conn != nil {
			c.hj.Close()
		}
		c.closeErr = c.remove()
		if c.stdout != nil {
			c.stdout.Close()
			<-c.done
		}
	})
	return c.closeErr
}

// SlotUser is the "uid:gid" the container on slot runs as.
func (l *Launcher) SlotUser(slot int) string {
	id := l.ids.UID(slot)
	return fmt.Sprintf("%d:%d", id, id)
}

// SlotUID is the uid the container on slot runs as.
func (l *Launcher) SlotUID(slot int) int { return l.ids.UID(slot) }

// removeLaunch force-removes any container of this launcher labelled with
// launchID, with its own context so the caller's cancellation cannot stop it.
func (l *Launcher) removeLaunch(launchID string) {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	_ = l.removeLabelled(ctx, filters.Arg("label", LabelLaunch+"="+launchID))
}

// removeLabelled force-removes this launcher's containers that also match
// extra filters.
func (l *Launcher) removeLabelled(ctx context.Context, extra ...filters.KeyValuePair) error {
	f := filters.NewArgs(append(extra, filters.Arg("label", LabelLauncher+"="+l.id))...)
	cs, err := l.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("docker: list containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if err := l.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: remove container %.12s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

func (c *conn) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	err := c.l.cli.ContainerRemove(ctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		// Left in live, so Launcher.Close tries again.
		return fmt.Errorf("docker: remove container %.12s: %w", c.id, err)
	}
	c.l.mu.Lock()
	delete(c.l.live, c)
	c.l.mu.Unlock()
	return nil
}

// capped keeps the first stderrCap bytes written to it and drops the rest,
// so a runner that floods stderr cannot grow memory. Safe for concurrent use.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *capped) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := stderrCap - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *capped) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ownerID names this process uniquely across PID reuse: host, pid and the
// process start time (clock ticks since boot, from /proc/self/stat).
func ownerID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), procStart(os.Getpid()))
}

// procStart returns field 22 of /proc/PID/stat (start time), or "" if the
// process does not exist.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may contain spaces; fields resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
