package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/codefeedback/codefeedback/executors"
)

// benchPrograms are the programs every path runs: a trivial one and one the
// size of an MBPP solution with its asserts (written for this benchmark).
var benchPrograms = []struct{ name, code, want string }{
	{"trivial", "print(1 + 1)\n", "2\n"},
	{"mbpp", `import re
def remove_dirty_chars(string, second_string):
    banned = set(second_string)
    return "".join(ch for ch in string if ch not in banned)

def is_woodall(x):
    if x % 2 == 0:
        return False
    if x == 1:
        return True
    x += 1
    p = 0
    while x % 2 == 0:
        x //= 2
        p += 1
        if p == x:
            return True
    return False

def words_ending(text):
    return re.findall(r"\b\w+ing\b", text)

assert remove_dirty_chars("probasscurve", "pros") == "bacuve"
assert remove_dirty_chars("digitalindia", "talent") == "digiidi"
assert is_woodall(383) == True
assert is_woodall(254) == False
assert words_ending("running and jumping over sleeping dogs") == ["running", "jumping", "sleeping"]
print("ok")
`, "ok\n"},
}

// benchConcurrency is how many runs are in flight at once in every path.
const benchConcurrency = 2

// baseline holds the naive path's ns/run per program, so later paths in the
// same benchmark run can report their speed-up over it.
var baseline sync.Map

// parallelRuns runs fn b.N times on benchConcurrency goroutines and reports
// runs/s and, when the naive baseline was measured first, the ratio to it.
func parallelRuns(b *testing.B, program string, naive bool, fn func(ctx context.Context) error) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := fn(ctx); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	perRun := float64(elapsed.Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/perRun, "runs/s")
	if naive {
		baseline.Store(program, perRun)
	} else if base, ok := baseline.Load(program); ok {
		b.ReportMetric(base.(float64)/perRun, "x_naive")
	}
}

// BenchmarkPaths runs the same programs through naive one-container-per-run,
// docker exec into a warm container, and the pool of warm runners (this
// driver's Launcher under executors.NewPool), all at concurrency 2. Run it as: go test -run '^$' -bench Paths -benchtime 20x ./executors/docker
func BenchmarkPaths(b *testing.B) {
	l := newTestLauncher(b)
	for _, p := range benchPrograms {
		b.Run(p.name+"/naive_run", func(b *testing.B) {
			parallelRuns(b, p.name, true, func(ctx context.Context) error {
				return naiveRun(ctx, l, p.code, p.want)
			})
		})
		b.Run(p.name+"/exec_warm", func(b *testing.B) {
			ctx := context.Background()
			c, err := l.Launch(ctx, 0, []string{"python3", "-c", "import sys; sys.stdin.read()"})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			id := c.(*conn).ID()
			parallelRuns(b, p.name, false, func(ctx context.Context) error {
				return execRun(ctx, l, id, p.code, p.want)
			})
		})
		b.Run(p.name+"/pooled", func(b *testing.B) {
			ex := executors.NewPool(l, executors.PoolOptions{Size: benchConcurrency})
			defer ex.Close()
			run := func(ctx context.Context) error {
				r, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: p.code})
				if err != nil {
					return err
				}
				if r.Stdout != p.want || !r.OK() {
					return fmt.Errorf("pooled run: got stdout %q exit %d stderr %q want %q", r.Stdout, r.ExitCode, r.Stderr, p.want)
				}
				return nil
			}
			// Start-up is paid once per slot, outside the timed loop.
			for range 2 * benchConcurrency {
				if err := run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			parallelRuns(b, p.name, false, run)
		})
	}
}

// naiveRun is `docker run --rm` through the API: create a container with the
// same isolation as a sandbox instance, start it, wait, read its logs, remove it.
func naiveRun(ctx context.Context, l *Launcher, code, want string) error {
	cfg, hc := l.containerConfig(0, []string{l.python, "-c", code}, l.cfg.Init)
	return dockerRun(ctx, l, cfg, hc, want)
}

// dockerRun runs one container made from cfg and hc as `docker run --rm`
// does, without attaching: it waits for the exit, then checks the logs
// hold want.
func dockerRun(ctx context.Context, l *Launcher, cfg *container.Config, hc *container.HostConfig, want string) error {
	cfg.OpenStdin, cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = false, false, false, false
	hc.LogConfig = container.LogConfig{Type: "json-file"} // logs are how docker run returns output
	created, err := l.cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	defer (&conn{l: l, id: created.ID}).remove()
	waitC, errC := l.cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := l.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			return fmt.Errorf("%v exited %d", cfg.Cmd, w.StatusCode)
		}
	case err := <-errC:
		return fmt.Errorf("wait: %w", err)
	}
	rc, err := l.cli.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	defer rc.Close()
	return checkOutput(rc, want)
}

// execRun is `docker exec` into a warm container: one new process per run
// (sharing the container's /tmp, so it is not isolated between runs).
func execRun(ctx context.Context, l *Launcher, id, code, want string) error {
	ex, err := l.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd: []string{l.python, "-c", code}, AttachStdout: true, AttachStderr: true, User: l.SlotUser(0),
	})
	if err != nil {
		return fmt.Errorf("exec create: %w", err)
	}
	hj, err := l.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("exec attach: %w", err)
	}
	defer hj.Close()
	if err := checkOutput(hj.Reader, want); err != nil {
		return err
	}
	ins, err := l.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return fmt.Errorf("exec inspect: %w", err)
	}
	if ins.ExitCode != 0 {
		return fmt.Errorf("exec exited %d", ins.ExitCode)
	}
	return nil
}

// checkOutput demultiplexes a Docker stream and compares its stdout.
func checkOutput(r io.Reader, want string) error {
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, r); err != nil {
		return fmt.Errorf("read output: %w", err)
	}
	if stdout.String() != want {
		return fmt.Errorf("stdout: got %q want %q (stderr %q)", stdout.String(), want, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// BenchmarkLaunch is the start-up cost a pool pays once per slot (and per
// recycled container): create, attach, start, runner ready, remove.
func BenchmarkLaunch(b *testing.B) {
	l := newTestLauncher(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		c, err := l.Launch(ctx, 0, executors.RunnerArgv())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(executors.RunnerInput()); err != nil {
			b.Fatal(err)
		}
		line := make([]byte, 1)
		if _, err := io.ReadFull(c, line); err != nil { // first byte of the ready line
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
