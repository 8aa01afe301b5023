package env_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/codefeedback/codefeedback/executors/bwrap"  // bwrap:// URLs
	_ "github.com/codefeedback/codefeedback/executors/docker" // docker:// URLs
	"github.com/codefeedback/codefeedback/executors/env"
)

// Concurrent first uses of one cache directory build it once; everyone
// sees it complete, and a failed build leaves nothing behind for the next.
func TestBuildOnceConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "v1")
	var builds atomic.Int32
	build := func(tmp string) error {
		builds.Add(1)
		time.Sleep(20 * time.Millisecond) // let the others pile up on the lock
		return os.WriteFile(filepath.Join(tmp, "data"), []byte("built"), 0o644)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if errs[i] = env.BuildOnce(dir, build); errs[i] == nil {
				if b, err := os.ReadFile(filepath.Join(dir, "data")); err != nil || string(b) != "built" {
					errs[i] = errors.New("built dir unreadable right after BuildOnce")
				}
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("built %d times, want 1", n)
	}
	if !env.Complete(dir) {
		t.Error("not complete after BuildOnce")
	}

	other := filepath.Join(filepath.Dir(dir), "v2")
	if err := env.BuildOnce(other, func(string) error { return errors.New("boom") }); err == nil {
		t.Fatal("a failed build reported success")
	}
	if env.Complete(other) {
		t.Fatal("a failed build left a complete directory")
	}
	if err := env.BuildOnce(other, build); err != nil || !env.Complete(other) {
		t.Fatalf("rebuilding after a failure: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range ents {
		if e.IsDir() && e.Name() != "v1" && e.Name() != "v2" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestExecutorURL(t *testing.T) {
	for _, c := range []struct{ env, in, want string }{
		{"ctf", "docker", "docker://" + env.CTFImage},
		{"ctf", "docker://?pool=4", "docker://" + env.CTFImage + "?pool=4"},
		{"ctf", "docker://python:3.12-slim", "docker://python:3.12-slim"},
		{"ctf", "bwrap://", "bwrap://"},
		{"bash", "docker", "docker://" + env.BashImage},
		{"bash", "docker://?pool=2", "docker://" + env.BashImage + "?pool=2"},
		{"bash", "docker://mine:1", "docker://mine:1"},
		{"bash", "docker://?image=mine:1", "docker://?image=mine:1"},
		{"bash", "bwrap://?pool=2", "bwrap://?pool=2"},
		{"sql", "docker", "docker"},
		{"python", "docker://?pool=2", "docker://?pool=2"},
	} {
		if got := env.ExecutorURL(c.env, c.in); got != c.want {
			t.Errorf("ExecutorURL(%q, %q) = %q, want %q", c.env, c.in, got, c.want)
		}
	}
}
