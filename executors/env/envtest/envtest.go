// Package envtest gives the environment tests the executors to run on: the
// bwrap driver, and the docker driver when CODEFEEDBACK_SANDBOX_IMAGE names
// an image (make test sets it), so every environment is tested on both.
package envtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// Driver is one executor to test on.
type Driver struct {
	Name string
	Ex   executors.Executor
}

// Drivers opens bwrap (pool 2) and, where configured, docker. Each is closed
// when t ends. It skips t when no driver is available; with CI=true a
// configured docker engine that cannot be opened fails t.
func Drivers(t *testing.T) []Driver {
	t.Helper()
	return drivers(t, "CODEFEEDBACK_SANDBOX_IMAGE")
}

// CTFDrivers is Drivers with docker on the CTF image (`make ctf-image`,
// named by CODEFEEDBACK_CTF_IMAGE): the sandbox image plus the tools CTF
// tasks use. bwrap runs the host's tools (.ci/setup installs them).
func CTFDrivers(t *testing.T) []Driver {
	t.Helper()
	return drivers(t, "CODEFEEDBACK_CTF_IMAGE")
}

func drivers(t *testing.T, imageVar string) []Driver {
	t.Helper()
	ctx := context.Background()
	var ds []Driver
	if _, err := exec.LookPath("bwrap"); err == nil {
		ex, err := executors.Open(ctx, "bwrap://?pool=2")
		if err != nil {
			t.Fatalf("opening bwrap: %v", err)
		}
		t.Cleanup(func() { ex.Close() })
		ds = append(ds, Driver{"bwrap", ex})
	} else {
		t.Logf("bubblewrap not installed: bwrap driver not tested")
	}
	if img := os.Getenv(imageVar); img != "" {
		ex, err := executors.Open(ctx, "docker://"+img+"?pool=2")
		switch {
		case err == nil:
			t.Cleanup(func() { ex.Close() })
			ds = append(ds, Driver{"docker", ex})
		case os.Getenv("CI") == "true":
			t.Fatalf("opening docker://%s: %v", img, err)
		default:
			t.Logf("docker driver not tested: %v", err)
		}
	} else {
		t.Logf("%s unset: docker driver not tested", imageVar)
	}
	if len(ds) == 0 {
		t.Skip("no sandbox driver available (install bubblewrap)")
	}
	return ds
}

// Each runs f as a subtest per driver.
func Each(t *testing.T, f func(t *testing.T, d Driver)) {
	each(t, Drivers(t), f)
}

// EachCTF runs f as a subtest per CTFDrivers driver.
func EachCTF(t *testing.T, f func(t *testing.T, d Driver)) {
	each(t, CTFDrivers(t), f)
}

func each(t *testing.T, ds []Driver, f func(t *testing.T, d Driver)) {
	for _, d := range ds {
		t.Run(d.Name, func(t *testing.T) { f(t, d) })
	}
}

// Full reports whether to run every table case on every driver
// (CODEFEEDBACK_INTERCODE_FULL=1). Otherwise cases that only exercise a
// reward rule (the same code whatever the driver) run on the first driver,
// and the rest (gold actions, attacks) on all.
func Full() bool { return os.Getenv("CODEFEEDBACK_INTERCODE_FULL") == "1" }

// RuleOnly skips t on any driver but the first unless Full: for table cases
// that test a reward rule rather than the sandbox.
func RuleOnly(t *testing.T, d Driver, first string) {
	t.Helper()
	if d.Name != first && !Full() {
		t.Skipf("reward rule case: run on %s only (CODEFEEDBACK_INTERCODE_FULL=1 runs it on %s too)", first, d.Name)
	}
}

// Tasks loads an InterCode task file or fails tb.
func Tasks(tb testing.TB, path string) []env.Task {
	tb.Helper()
	ts, err := env.LoadTasks(path, "")
	if err != nil {
		tb.Fatal(err)
	}
	return ts
}

// InterCodeTasks loads the task file rel (slash-separated, e.g.
// data/sql/spider/ic_spider_dev.json) of InterCode's own data, named
// dataset, from CODEFEEDBACK_INTERCODE_DIR (a checkout of InterCode's
// repository or the cache `codefeedback intercode fetch` fills). It skips
// tb when the variable is unset or the file is not there, and fails it
// when the file does not load.
func InterCodeTasks(tb testing.TB, rel, dataset string) []env.Task {
	tb.Helper()
	dir := os.Getenv("CODEFEEDBACK_INTERCODE_DIR")
	if dir == "" {
		tb.Skipf("CODEFEEDBACK_INTERCODE_DIR unset: InterCode's %s not tested", rel)
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		tb.Skipf("%s is not in CODEFEEDBACK_INTERCODE_DIR (%s): not tested", rel, dir)
	}
	ts, err := env.LoadTasks(path, dataset)
	if err != nil {
		tb.Fatalf("InterCode's %s: %v", rel, err)
	}
	return ts
}

// Open opens the environment name on ex with opts, closed when tb ends,
// or fails tb.
func Open(tb testing.TB, name string, ex executors.Executor, opts env.Options) env.Env {
	tb.Helper()
	e, err := env.Open(context.Background(), name, ex, opts)
	if err != nil {
		tb.Fatalf("opening the %s environment: %v", name, err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// Play resets e to task, steps each action and then submit, failing tb
// on an error; it returns the last action's result (zero without
// actions) and the submit's.
func Play(tb testing.TB, e env.Env, task env.Task, actions []string, submit string) (last, final env.StepResult) {
	tb.Helper()
	ctx := context.Background()
	if _, err := e.Reset(ctx, task); err != nil {
		tb.Fatalf("Reset(%s): %v", task.ID, err)
	}
	var err error
	for _, a := range actions {
		if last, err = e.Step(ctx, a); err != nil {
			tb.Fatalf("Step(%q): %v", a, err)
		}
	}
	if final, err = e.Step(ctx, submit); err != nil {
		tb.Fatalf("Step(%q): %v", submit, err)
	}
	return last, final
}

// BenchBwrap opens the bwrap driver with pool sandboxes for a benchmark,
// closed when b ends; it skips b without bubblewrap.
func BenchBwrap(b *testing.B, pool int) executors.Executor {
	b.Helper()
	return sandboxtest.Bwrap(b, fmt.Sprintf("pool=%d", pool))
}

// Episode is one benchmark episode: reset to Task, the Actions, then Submit,
// which must score 1.
type Episode struct {
	Task    env.Task
	Actions []string
	Submit  string
}

// PlayEpisode resets e to ep's task, plays its actions and its submit,
// which must score 1.
func PlayEpisode(tb testing.TB, e env.Env, ep Episode) {
	tb.Helper()
	if _, r := Play(tb, e, ep.Task, ep.Actions, ep.Submit); r.Reward != 1 {
		tb.Fatalf("%s: %+v", ep.Submit, r)
	}
}

// BenchEpisodes plays eps round-robin in e, one per iteration, after one
// untimed reset (which builds the environment's caches), and reports
// episodes per second.
func BenchEpisodes(b *testing.B, e env.Env, eps ...Episode) {
	b.Helper()
	ctx := context.Background()
	if _, err := e.Reset(ctx, eps[0].Task); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		PlayEpisode(b, e, eps[i%len(eps)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}
