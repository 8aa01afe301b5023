package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// echoLoop is a minimal runner: it answers each stdin line with a line of
// output computed by exec-ing it in Python, so tests can probe the container
// from inside without the shared runner.
const echoLoop = `
import sys
for line in sys.stdin:
    try:
        out = repr(eval(line))
    except BaseException as e:
        out = "ERR " + type(e).__name__ + ": " + str(e)
    sys.stdout.write(out.replace("\n", "\\n") + "\n")
    sys.stdout.flush()
`

// testImage is the image tests use: CODEFEEDBACK_SANDBOX_IMAGE or the default.
func testImage() string {
	if s := os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE"); s != "" {
		return s
	}
	return DefaultConfig.Image
}

// newTestLauncher connects to the engine or skips the test when none answers.
// It registers a cleanup that fails the test if any container of this
// process is left over.
func newTestLauncher(t testing.TB) *Launcher {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	ctx := engineContext(t)
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		t.Skipf("no Docker engine answers (start dockerd to run the docker driver tests): %v", err)
	}
	cfg := DefaultConfig
	cfg.Image = testImage()
	l, err := NewLauncher(ctx, cli, cfg, false)
	if err != nil {
		cli.Close()
		t.Fatalf("NewLauncher: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("launcher Close: %v", err)
		}
		assertNoContainers(t, l)
	})
	return l
}

// engineContext bounds a test's waits on the engine, as a hang guard only:
// at load 30, starting one container took over a minute.
func engineContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// assertNoContainers fails the test if this process still owns a container.
func assertNoContainers(t testing.TB, l *Launcher) {
	t.Helper()
	ctx := engineContext(t)
	cs, err := Containers(ctx, l.cli, l.owner)
	if err != nil {
		t.Errorf("list containers: %v", err)
		return
	}
	for _, c := range cs {
		t.Errorf("container %.12s (%s) left after Close", c.ID, c.State)
	}
}

// probe is an echo-loop container; ask evaluates a Python expression in it.
type probe struct {
	t   *testing.T
	c   *conn
	out *bufio.Reader
}

func startProbe(t *testing.T, l *Launcher, slot int) *probe {
	t.Helper()
	ctx := engineContext(t)
	c, err := l.Launch(ctx, slot, []string{"python3", "-u", "-c", echoLoop})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &probe{t: t, c: c.(*conn), out: bufio.NewReader(c)}
}

func (p *probe) ask(expr string) string {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.c, expr); err != nil {
		p.t.Fatalf("write %q: %v", expr, err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read answer to %q: %v (runner stderr: %s)", expr, err, p.c.Stderr())
	}
	return strings.TrimSuffix(line, "\n")
}

func TestLaunchIsolation(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret-must-not-leak")
	l := newTestLauncher(t)
	p := startProbe(t, l, 0)

	ctx := engineContext(t)
	ins, err := l.cli.ContainerInspect(ctx, p.c.ID())
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	for _, e := range ins.Config.Env {
		if strings.Contains(e, "OPENAI_API_KEY") || strings.Contains(e, "sk-host-secret") {
			t.Errorf("container Config.Env has host secret: %q", e)
		}
	}
	if got, want := string(ins.HostConfig.NetworkMode), "none"; got != want {
		t.Errorf("NetworkMode: got %q want %q", got, want)
	}
	if !ins.HostConfig.ReadonlyRootfs {
		t.Errorf("ReadonlyRootfs: got false want true")
	}

	cases := []struct {
		name, expr, want string
	}{
		{"uid", "__import__('os').getuid()", strconv.Itoa(l.SlotUID(0))},
		{"gid", "__import__('os').getgid()", strconv.Itoa(l.SlotUID(0))},
		{"no other groups", "__import__('os').getgroups()", "[" + strconv.Itoa(l.SlotUID(0)) + "]"},
		{"interfaces", "sorted(n for _, n in __import__('socket').if_nameindex())", "['lo']"},
		{"environ has no host secret", "b'sk-host-secret' in open('/proc/self/environ','rb').read() or b'OPENAI' in open('/proc/self/environ','rb').read()", "False"},
		{"home", "__import__('os').environ['HOME']", "'/tmp'"},
		{"root read-only", "open('/etc/x','w')", "ERR OSError: [Errno 30] Read-only file system: '/etc/x'"},
		{"usr read-only", "open('/usr/x','w')", "ERR OSError: [Errno 30] Read-only file system: '/usr/x'"},
		{"tmp writable", "open('/tmp/x','w').write('hi')", "2"},
		{"no capabilities", "[l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]", "'0000000000000000'"},
		{"no new privileges", "[l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0].split()[1]", "'1'"},
		{"core dumps off", "__import__('resource').getrlimit(__import__('resource').RLIMIT_CORE)", "(0, 0)"},
		{"shadow unreadable", "open('/etc/shadow').read()", "ERR PermissionError: [Errno 13] Permission denied: '/etc/shadow'"},
		{"loopback connect refused", "__import__('socket').create_connection(('127.0.0.1', 9), 1)", "ERR ConnectionRefusedError: [Errno 111] Connection refused"},
	}
	for _, tc := range cases {
		if got := p.ask(tc.expr); got != tc.want {
			t.Errorf("%s: %s: got %s want %s", tc.name, tc.expr, got, tc.want)
		}
	}
}

// TestSlotsHaveOwnUIDs checks that containers on different slots run as
// different non-root uids, so that processes held by one slot do not count
// against another's RLIMIT_NPROC (which the kernel counts per uid across all
// containers): slot 0 fills its process limit with sleeping children, and
// slot 1 must still be able to fork under the same limit.
func TestSlotsHaveOwnUIDs(t *testing.T) {
	l := newTestLauncher(t)
	p0, p1 := startProbe(t, l, 0), startProbe(t, l, 1)
	uid0, uid1 := p0.ask("__import__('os').getuid()"), p1.ask("__import__('os').getuid()")
	if uid0 == "0" || uid1 == "0" || uid0 == uid1 {
		t.Fatalf("uids of slots 0 and 1: got %s and %s want two different non-root uids", uid0, uid1)
	}
	const nproc = 16
	setLimit := fmt.Sprintf("__import__('resource').setrlimit(__import__('resource').RLIMIT_NPROC, (%d, %d))", nproc, nproc)
	for _, p := range []*probe{p0, p1} {
		if got := p.ask(setLimit); got != "None" {
			t.Fatalf("setrlimit: got %s", got)
		}
	}
	// Children sleep until the container is removed; the parent counts the
	// forks that succeeded before EAGAIN.
	fill := `exec("n = 0\ntry:\n    while n < 1000:\n        if __import__('os').fork() == 0:\n            __import__('time').sleep(600)\n        n += 1\nexcept OSError as e:\n    err = e.errno", g := {}) or (g['n'], g.get('err'))`
	if got := p0.ask(fill); !strings.HasSuffix(got, ", 11)") {
		t.Fatalf("fork bomb on slot 0: got %s want (forks, 11) ending in EAGAIN", got)
	}
	if got := p1.ask("(lambda pid: pid == 0 and __import__('os')._exit(0) or __import__('os').waitpid(pid, 0)[1])(__import__('os').fork())"); got != "0" {
		t.Errorf("fork on slot 1 while slot 0 is at its process limit: got %s want 0 (a child that exited cleanly)", got)
	}
}

func TestImageMissing(t *testing.T) {
	l := newTestLauncher(t)
	ctx := engineContext(t)
	const ref = "codefeedback-no-such-image:never"
	_, err := resolveImage(ctx, l.cli, ref, false)
	if err == nil || !strings.Contains(err.Error(), "not present") || !strings.Contains(err.Error(), "make sandbox-image") {
		t.Fatalf("resolveImage(%s): got %v want an error naming the image and `make sandbox-image`", ref, err)
	}
}

func TestCloseRemovesContainerAfterCancel(t *testing.T) {
	l := newTestLauncher(t)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := l.Launch(ctx, 3, []string{"python3", "-u", "-c", echoLoop})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	cancel() // The conn outlives the launch context, and Close still removes the container.
	if _, err := fmt.Fprintln(c, "6*7"); err != nil {
		t.Fatalf("write after cancel: %v", err)
	}
	if got, err := bufio.NewReader(c).ReadString('\n'); got != "42\n" || err != nil {
		t.Fatalf("answer after cancel: got %q, %v want \"42\\n\"", got, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: got %v want nil", err)
	}
	// The cleanup registered by newTestLauncher checks nothing is left.
}

// A container the engine made although the create call's reply was lost
// (its context was cancelled mid-call) is not in the launcher's books: Close
// still removes it by its launcher label, and removeLaunch by its launch label.
func TestCloseRemovesUntrackedContainers(t *testing.T) {
	l := newTestLauncher(t)
	ctx := engineContext(t)
	create := func(launchID string) string {
		cfg, hc := l.containerConfig(5, []string{"python3", "-c", ""}, false)
		cfg.Labels[LabelLaunch] = launchID
		c, err := l.cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return c.ID
	}
	lost := create("lost-1")
	l.removeLaunch("lost-1")
	if _, err := l.cli.ContainerInspect(ctx, lost); !cerrdefs.IsNotFound(err) {
		t.Errorf("removeLaunch: container %.12s still there (inspect error %v)", lost, err)
	}
	create("lost-2") // left for Close; newTestLauncher's cleanup asserts it is gone
}

func TestFindPython(t *testing.T) {
	l := newTestLauncher(t)
	ctx := engineContext(t)
	got, err := l.findPython(ctx, "no-such-python", "python3")
	if err != nil || got != "python3" {
		t.Errorf("findPython(no-such-python, python3): got %q, %v want python3", got, err)
	}
	_, err = l.findPython(ctx, "no-such-python")
	if err == nil || !strings.Contains(err.Error(), "none of [no-such-python] on PATH") {
		t.Errorf("findPython(no-such-python): got %v want an error naming the missing interpreter", err)
	}
}

func TestRemoveLeftovers(t *testing.T) {
	l := newTestLauncher(t)
	live := startProbe(t, l, 0)

	// A container whose owner process has exited, as after a crash.
	host := strings.SplitN(l.owner, "/", 2)[0]
	dead := &Launcher{cli: l.cli, cfg: l.cfg, imageID: l.imageID, owner: host + "/2147483646/1", python: l.python, ids: l.ids, live: map[*conn]bool{}}
	ctx := engineContext(t)
	c, err := dead.Launch(ctx, 0, []string{"python3", "-u", "-c", echoLoop})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Close() // already removed below; Close tolerates that
	n, err := RemoveLeftovers(ctx, l.cli)
	if err != nil {
		t.Fatalf("RemoveLeftovers: %v", err)
	}
	if n < 1 {
		t.Errorf("RemoveLeftovers: got %d removed want >= 1", n)
	}
	if left, _ := Containers(ctx, l.cli, dead.owner); len(left) != 0 {
		t.Errorf("dead owner's containers after RemoveLeftovers: got %d want 0", len(left))
	}
	// The live process's container is untouched and still answers.
	if got := live.ask("1+1"); got != "2" {
		t.Errorf("live container after RemoveLeftovers: got %q want 2", got)
	}
}
