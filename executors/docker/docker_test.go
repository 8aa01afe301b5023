package docker

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/drivertest"
)

// newTestExecutor opens a pool of size 2 over a test launcher (skipping when
// no engine answers). The launcher's cleanup fails the test if a container
// of this process remains after the executor is closed.
func newTestExecutor(t testing.TB, opts executors.PoolOptions) (executors.Executor, *Launcher) {
	t.Helper()
	l := newTestLauncher(t)
	if opts.Size == 0 {
		opts.Size = 2
	}
	ex := NewExecutor(l, opts)
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Errorf("executor Close: %v", err)
		}
	})
	return ex, l
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) executors.Executor {
		ex, _ := newTestExecutor(t, executors.PoolOptions{})
		return ex
	})
}

func TestIsolation(t *testing.T) {
	drivertest.Isolation(t, func(t *testing.T) executors.Executor {
		ex, _ := newTestExecutor(t, executors.PoolOptions{Size: 1})
		return ex
	})
}

func TestOpenByURL(t *testing.T) {
	newTestLauncher(t) // skips without an engine; checks for leftovers at the end
	ctx := engineContext(t)
	ex, err := executors.Open(ctx, "docker://"+testImage()+"?pool=1&timeout=4s")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ex.Close()
	info := ex.Info()
	if info.Driver != "docker" || !strings.HasPrefix(info.Image, testImage()+"@sha256:") || info.Limits.Timeout != 4*time.Second {
		t.Errorf("Info: got %+v want driver docker, image %s@sha256:..., timeout 4s", info, testImage())
	}
	r, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: "print(sum(range(10)))"})
	if err != nil || r.Stdout != "45\n" || r.Driver != "docker" || r.Image != info.Image {
		t.Errorf("Run: got %+v, %v want stdout 45 from driver docker image %s", r, err, info.Image)
	}
	if err := ex.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	_, err = executors.Open(ctx, "docker://?image="+url.QueryEscape("codefeedback-no-such-image:never"))
	if err == nil || !strings.Contains(err.Error(), "not present") {
		t.Errorf("Open with a missing image: got %v want a `not present` error", err)
	}
}

// containerID asks a run which container it is in (its hostname is the
// container's short ID).
func containerID(t *testing.T, ex executors.Executor) string {
	t.Helper()
	r := runOK(t, ex, executors.Request{Language: executors.Python, Code: "import socket; print(socket.gethostname())"})
	return strings.TrimSpace(r.Stdout)
}

func runOK(t *testing.T, ex executors.Executor, req executors.Request) executors.Result {
	t.Helper()
	// The run's own timeout bounds the program; this bounds waiting for a
	// pool slot and a fresh container too, which at load 30 took over a
	// minute (a 60 s memory bomb then failed with "context deadline
	// exceeded" instead of reporting OOM).
	ctx, cancel := context.WithTimeout(context.Background(), max(req.Limits.Timeout, 10*time.Second)+5*time.Minute)
	defer cancel()
	r, err := ex.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", req.Code, err)
	}
	return r
}

func TestTamperedContainerIsRecycled(t *testing.T) {
	ex, l := newTestExecutor(t, executors.PoolOptions{Size: 1})
	before := containerID(t, ex)
	if again := containerID(t, ex); again != before {
		t.Fatalf("an untampered run changed container: got %s want %s (warm reuse)", again, before)
	}
	// Leave a file outside the run's scratch: the runner reports the
	// instance tainted and the pool must replace the container.
	r := runOK(t, ex, executors.Request{Language: executors.Bash, Code: "echo x > /tmp/left-behind; echo done"})
	if r.Stdout != "done\n" {
		t.Fatalf("tampering run: got %q want done", r.Stdout)
	}
	after := containerID(t, ex)
	if after == before {
		t.Errorf("container after tampering: got the same %s want a new one", after)
	}
	r = runOK(t, ex, executors.Request{Language: executors.Bash, Code: "ls /tmp"})
	if got := strings.Fields(r.Stdout); len(got) != 1 || got[0] != "cf" {
		t.Errorf("/tmp in the new container: got %q want only the runner's cf", r.Stdout)
	}
	// The tampered container itself is gone, not just abandoned.
	ctx := engineContext(t)
	cs, err := Containers(ctx, l.cli, l.owner)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.HasPrefix(c.ID, before) {
			t.Errorf("tampered container %s still exists (%s)", before, c.State)
		}
	}
}

func TestDeadContainerIsReplaced(t *testing.T) {
	ex, l := newTestExecutor(t, executors.PoolOptions{Size: 1})
	before := containerID(t, ex)
	// A run cannot end its runner (PID 1 ignores its children's signals),
	// so end the container from outside, as an engine restart or the
	// kernel's OOM killer would.
	ctx := engineContext(t)
	cs, err := Containers(ctx, l.cli, l.owner)
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, c := range cs {
		if strings.HasPrefix(c.ID, before) {
			if err := l.cli.ContainerKill(ctx, c.ID, "KILL"); err != nil {
				t.Fatalf("kill %s: %v", before, err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("found %d containers with id %s, want 1", killed, before)
	}
	// The pool learns of the death when the attach stream ends; a run that
	// races it gets a killed result (the documented errDied path), and the
	// next one must land in a fresh container.
	after := ""
	for range 2 {
		r := runOK(t, ex, executors.Request{Language: executors.Python, Code: "import socket; print(socket.gethostname())"})
		if r.OK() {
			after = strings.TrimSpace(r.Stdout)
			break
		}
		if !r.Killed {
			t.Fatalf("run after the container died: got exit %d stderr %q, want a fresh container or a killed result", r.ExitCode, r.Stderr)
		}
	}
	if after == "" || after == before {
		t.Errorf("container after the old one died: got %q want a new one (not %s)", after, before)
	}
}

func TestContainerLimits(t *testing.T) {
	// Fixed container limits far from the runs' own, to see each layer:
	// with RunLimits on, the container's limits would be each run's.
	l := newTestLauncher(t)
	l.cfg.RunLimits = false
	ex := NewExecutor(l, executors.PoolOptions{Size: 1})
	t.Cleanup(func() { ex.Close() })
	short := executors.Limits{Timeout: 10 * time.Second}
	pids, tmp := l.cfg.Pids, l.cfg.TmpBytes
	cases := []struct {
		name  string
		req   executors.Request
		check func(t *testing.T, r executors.Result)
	}{
		{"memory bomb under the per-run limit is reported as OOM", executors.Request{Language: executors.Python,
			Code:   "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))",
			Limits: executors.Limits{MemoryBytes: 256 << 20, Timeout: 60 * time.Second}}, // time to fill memory under load
			func(t *testing.T, r executors.Result) {
				if !r.OOM || r.OK() {
					t.Errorf("got oom %v timed out %v exit %d stderr %q, want OOM", r.OOM, r.TimedOut, r.ExitCode, clip(r.Stderr, 300))
				}
			}},
		{"processes counted by the cgroup", executors.Request{Language: executors.Python,
			// The loop ends at the first refused fork; the timeout and the
			// children's sleep leave a loaded machine time to get there (at
			// load 30, 20 s did not: the run timed out with no output).
			Code: "import os\nn = 0\ntry:\n    while n < 2000:\n        if os.fork() == 0:\n            import time; time.sleep(600)\n        n += 1\nexcept OSError as e:\n    print('stopped', n, e.errno)", Limits: executors.Limits{Timeout: 120 * time.Second, Processes: 5000}},
			func(t *testing.T, r executors.Result) {
				var n, errno int64
				if _, err := fmt.Sscanf(r.Stdout, "stopped %d %d", &n, &errno); err != nil || n >= pids || errno != 11 {
					t.Errorf("got stdout %q stderr %q, want fork to fail with EAGAIN (11) before the pids limit %d", r.Stdout, clip(r.Stderr, 300), pids)
				}
			}},
		{"disk fill stops at the tmpfs size", executors.Request{Language: executors.Python,
			Code:   "total = 0\ntry:\n    for i in range(1000):\n        with open('f%d' % i, 'wb') as f:\n            for _ in range(16):\n                f.write(bytes(1 << 20))\n                total += 1\nexcept OSError as e:\n    print(total, e.errno)",
			Limits: executors.Limits{Timeout: 20 * time.Second}},
			func(t *testing.T, r executors.Result) {
				var mib, errno int64
				if _, err := fmt.Sscanf(r.Stdout, "%d %d", &mib, &errno); err != nil || errno != 28 || mib<<20 > tmp {
					t.Errorf("got stdout %q stderr %q, want ENOSPC (28) after at most %d MiB", r.Stdout, clip(r.Stderr, 300), tmp>>20)
				}
			}},
		{"one file stops at the file-size limit", executors.Request{Language: executors.Python,
			Code:   "total = 0\ntry:\n    with open('big', 'wb') as f:\n        while True:\n            f.write(bytes(1 << 20))\n            total += 1\nexcept OSError as e:\n    print(total, e.errno)",
			Limits: executors.Limits{Timeout: 20 * time.Second, FileBytes: 8 << 30}},
			func(t *testing.T, r executors.Result) {
				var mib, errno int64
				if _, err := fmt.Sscanf(r.Stdout, "%d %d", &mib, &errno); err != nil || errno != 27 || mib<<20 > l.cfg.FileBytes {
					t.Errorf("got stdout %q stderr %q, want EFBIG (27) at the container's fsize ulimit %d MiB even though the run asked for more", r.Stdout, clip(r.Stderr, 300), l.cfg.FileBytes>>20)
				}
			}},
		{"no network interface but lo", executors.Request{Language: executors.Bash, Code: "ls /sys/class/net", Limits: short},
			func(t *testing.T, r executors.Result) {
				if r.Stdout != "lo\n" {
					t.Errorf("got interfaces %q want only lo", r.Stdout)
				}
			}},
		{"non-root uid and gid of slot 0", executors.Request{Language: executors.Bash, Code: "id -u; id -g", Limits: short},
			func(t *testing.T, r executors.Result) {
				if want := fmt.Sprintf("%d\n%d\n", l.SlotUID(0), l.SlotUID(0)); r.Stdout != want {
					t.Errorf("got %q want %q", r.Stdout, want)
				}
			}},
		{"root file system read-only", executors.Request{Language: executors.Bash, Code: "touch /usr/x /etc/x /x 2>&1 | grep -c 'Read-only file system'", Limits: short},
			func(t *testing.T, r executors.Result) {
				if r.Stdout != "3\n" {
					t.Errorf("got %q (stderr %q) want 3 read-only failures", r.Stdout, r.Stderr)
				}
			}},
		{"host secret not in the environment", executors.Request{Language: executors.Python,
			Code: "import os\nprint(b'OPENAI' in open('/proc/self/environ','rb').read(), b'OPENAI' in open('/proc/1/environ','rb').read() if os.access('/proc/1/environ', os.R_OK) else False, 'OPENAI_API_KEY' in os.environ)", Limits: short},
			func(t *testing.T, r executors.Result) {
				if r.Stdout != "False False False\n" {
					t.Errorf("got %q (stderr %q) want False False False", r.Stdout, clip(r.Stderr, 300))
				}
			}},
	}
	t.Setenv("OPENAI_API_KEY", "sk-docker-test-secret")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, runOK(t, ex, tc.req))
			if r := runOK(t, ex, executors.Request{Language: executors.Python, Code: "print(6 * 7)"}); r.Stdout != "42\n" {
				t.Errorf("next run: got %q exit %d stderr %q want 42", r.Stdout, r.ExitCode, clip(r.Stderr, 300))
			}
		})
	}
}

// TestContainerMemoryBackstop runs memory bombs whose per-run address-space
// limit is far above the container's cgroup memory: the cgroup must stop
// them, the result must say OOM (the kernel's SIGKILL leaves no MemoryError,
// so the runner reads the cgroup's oom_kill counter), and the pool must keep
// working. The bash case kills a grandchild, whose death bash reports as 137.
func TestContainerMemoryBackstop(t *testing.T) {
	l := newTestLauncher(t)
	l.cfg.Memory = 96 << 20
	l.cfg.RunLimits = false // a fixed container limit far below the runs' own
	ex := NewExecutor(l, executors.PoolOptions{Size: 1})
	defer ex.Close()
	const bomb = "x = bytearray(400 << 20)\nx[::4096] = b'1' * len(x[::4096])\nprint('allocated')"
	high := executors.Limits{MemoryBytes: 2 << 30, Timeout: 20 * time.Second}
	cases := []struct {
		name     string
		req      executors.Request
		wantExit int
	}{
		{"python", executors.Request{Language: executors.Python, Code: bomb, Limits: high}, 137},
		{"bash running python", executors.Request{Language: executors.Bash, Code: "python3 -c \"" + bomb + "\"\necho exit $?", Limits: high}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runOK(t, ex, tc.req)
			if strings.Contains(r.Stdout, "allocated") || !r.OOM || r.OK() && tc.wantExit != 0 {
				t.Errorf("got oom %v ok %v exit %d stdout %q stderr %q, want the bomb killed by the container's memory cgroup and OOM reported",
					r.OOM, r.OK(), r.ExitCode, r.Stdout, clip(r.Stderr, 300))
			}
			if tc.wantExit == 0 && r.Stdout != "exit 137\n" {
				t.Errorf("bash after its child was OOM-killed: got stdout %q want exit 137", r.Stdout)
			}
			if strings.Contains(r.Stderr, "MemoryError") {
				t.Errorf("stderr %q: want the cgroup's kill, not the rlimit's MemoryError", clip(r.Stderr, 300))
			}
			if r := runOK(t, ex, executors.Request{Language: executors.Python, Code: "print(6 * 7)"}); r.Stdout != "42\n" || r.OOM {
				t.Errorf("next run: got %q exit %d oom %v stderr %q want 42 and no OOM", r.Stdout, r.ExitCode, r.OOM, clip(r.Stderr, 300))
			}
		})
	}
	t.Run("bash session cell", func(t *testing.T) {
		ctx := engineContext(t)
		s, err := ex.Open(ctx, executors.Bash, executors.SessionOptions{Limits: high})
		if err != nil {
			t.Fatalf("Open session: %v", err)
		}
		defer s.Close()
		r, err := s.Exec(ctx, "x=1; python3 -c \""+bomb+"\"")
		if err != nil || !r.OOM || r.ExitCode != 137 {
			t.Fatalf("bomb cell: got %+v, %v want exit 137 and OOM", r, err)
		}
		if r, err := s.Exec(ctx, "echo $((x + 41))"); err != nil || r.Stdout != "42\n" || r.OOM {
			t.Errorf("next cell: got %+v, %v want 42 and no OOM (state kept)", r, err)
		}
	})
}

func TestSessionsHaveOwnContainers(t *testing.T) {
	ex, l := newTestExecutor(t, executors.PoolOptions{Size: 1})
	ctx := engineContext(t)
	pooled := containerID(t, ex)
	s, err := ex.Open(ctx, executors.Python, executors.SessionOptions{})
	if err != nil {
		t.Fatalf("Open session: %v", err)
	}
	defer s.Close()
	if _, err := s.Exec(ctx, "import socket\nx = 41"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Exec(ctx, "import os\nprint(x + 1, socket.gethostname(), os.getuid())")
	if err != nil {
		t.Fatal(err)
	}
	// The session's slot comes after the pool's one slot, and so does its uid.
	f := strings.Fields(r.Stdout)
	if len(f) != 3 || f[0] != "42" || f[1] == pooled || f[2] != strconv.Itoa(l.SlotUID(1)) {
		t.Errorf("session cell: got %q want 42, a container other than the pool's %s, and uid %d", r.Stdout, pooled, l.SlotUID(1))
	}
}

func TestRunnerCrashIsReported(t *testing.T) {
	l := newTestLauncher(t)
	ctx := engineContext(t)
	c, err := l.Launch(ctx, 0, []string{"python3", "-c", "import sys; sys.stderr.write('runner broke here'); sys.exit(3)"})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	defer c.Close()
	_, err = io.ReadAll(c)
	if err == nil || !strings.Contains(err.Error(), "runner broke here") {
		t.Errorf("reading a crashed runner: got %v want an error quoting its stderr", err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		ex, _ := newTestExecutor(t, executors.PoolOptions{Size: 2})
		runOK(t, ex, executors.Request{Language: executors.Python, Code: "print(1)"})
		s, err := ex.Open(context.Background(), executors.Python, executors.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Exec(context.Background(), "x = 1"); err != nil {
			t.Fatal(err)
		}
		if err := ex.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard: the loop ends when they are gone
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines after Close: got %d want <= %d\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
