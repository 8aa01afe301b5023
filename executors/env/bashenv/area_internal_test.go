package bashenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// An area has room for a copy of its template plus the allowance, no more:
// after the copy, what an unprivileged writer may add is the allowance
// (and the slack), in bytes and in inodes, on each kind of file system.
func TestAreaSize(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting areas needs root")
	}
	tpl := t.TempDir()
	for i := 0; i < 40; i++ {
		d := filepath.Join(tpl, "testbed", fmt.Sprintf("d%d", i%4))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), make([]byte, 1000*i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("d1/f1", filepath.Join(tpl, "testbed", "link"))
	const disk, inodes = 8 << 20, 1000
	for _, kind := range []string{fsTmpfs, fsExt4} {
		t.Run(kind, func(t *testing.T) {
			s, err := newScratch(t.TempDir(), kind, disk, inodes)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			p, err := s.area("agent", filepath.Join(tpl, "testbed"))
			if err != nil {
				t.Fatal(err)
			}
			if s.kind() != kind {
				t.Fatalf("got a %q area, want %s", s.kind(), kind)
			}
			if kind == fsExt4 {
				// The agent's and the gold's areas show one source name
				// (`df` prints it), not their loop devices'.
				g, err := s.area("gold")
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range []string{p, g} {
					if src := mountPoints(a)[a]; src != sourceName {
						t.Errorf("area %s is mounted from %q, want %q", a, src, sourceName)
					}
				}
				if err := s.release(g); err != nil {
					t.Fatal(err)
				}
			}
			if err := copyTree(filepath.Join(tpl, "testbed"), filepath.Join(p, "testbed"), -1, -1, nil); err != nil {
				t.Fatal(err)
			}
			var st unix.Statfs_t
			if err := unix.Statfs(p, &st); err != nil {
				t.Fatal(err)
			}
			free, files := int64(st.Bavail)*st.Bsize, int64(st.Ffree)
			t.Logf("%s after the template's copy: %d KiB free (allowance %d KiB + slack %d KiB), %d inodes free (allowance %d + slack %d)",
				kind, free>>10, disk>>10, areaSlackBytes>>10, files, inodes, areaSlackInodes)
			if free < disk || free > disk+areaSlackBytes+2*block {
				t.Errorf("%d bytes free; want the allowance %d plus at most the slack", free, disk)
			}
			if files < inodes || files > inodes+areaSlackInodes+16 {
				t.Errorf("%d inodes free; want the allowance %d plus at most the slack", files, inodes)
			}
			// A second area of the same name replaces the first, unmounted.
			if _, err := s.area("agent"); err != nil {
				t.Fatal(err)
			}
			if len(mountPoints(s.dir)) != 1 {
				t.Errorf("mounts below the base: %v; want the one area", mountPoints(s.dir))
			}
		})
	}
}

// A crashed process's base directory (lock free) is cleaned, mounts and
// all, by the next scratch in the same parent; a live one is left alone.
func TestCleanStale(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting areas needs root")
	}
	parent := t.TempDir()
	live, err := newScratch(parent, fsTmpfs, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer live.close()
	if _, err := live.area("agent"); err != nil {
		t.Fatal(err)
	}
	dead, err := newScratch(parent, fsTmpfs, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.area("agent"); err != nil {
		t.Fatal(err)
	}
	dead.lock.Close() // as if its process died: the lock is free, the mount stays
	next, err := newScratch(parent, fsTmpfs, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer next.close()
	if _, err := os.Stat(dead.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale base directory: %v", err)
	}
	if m := mountPoints(dead.dir); len(m) != 0 {
		t.Errorf("stale mounts left: %v", m)
	}
	if m := mountPoints(live.dir); len(m) != 1 {
		t.Errorf("live mounts: %v; want its area", m)
	}
}

// ext4 lists a directory in the order of its name hashes: every area gets
// the same seed, so the same files list in the same order in every
// episode, and in the agent's replica as in the gold's.
func TestExt4Order(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting areas needs root")
	}
	s, err := newScratch(t.TempDir(), fsExt4, 4<<20, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var orders []string
	for _, name := range []string{"agent", "gold"} {
		p, err := s.area(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.kind() != fsExt4 {
			t.Skipf("no ext4 area here (%q)", s.kind())
		}
		for i := 0; i < 40; i++ {
			if err := os.WriteFile(filepath.Join(p, fmt.Sprintf("textfile%d.txt", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		names, err := f.Readdirnames(-1) // getdents order, unsorted
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, fmt.Sprint(names))
	}
	if orders[0] != orders[1] {
		t.Errorf("two areas list the same files in different orders:\n%s\n%s", orders[0], orders[1])
	}
}

// sizedExecutor is an executor that reports its scratch size, as bwrap's
// (disk=) and docker's (tmp=) do.
type sizedExecutor struct {
	executors.Executor
	disk int64
}

func (s sizedExecutor) Info() executors.Info {
	return executors.Info{Driver: "sized", DiskBytes: s.disk}
}

func TestLimitsFrom(t *testing.T) {
	cases := []struct {
		name         string
		ex           executors.Executor
		params       map[string]string
		disk, inodes int64
		wantErr      bool
	}{
		{"default", nil, nil, DefaultDisk, DefaultDisk / (16 << 10), false},
		{"the executor's disk", sizedExecutor{disk: 64 << 20}, nil, 64 << 20, 4096, false},
		{"through the exec cache", executors.WithCache(sizedExecutor{disk: 1 << 30}, nil), nil, 1 << 30, 1 << 16, false},
		{"the param over the executor", sizedExecutor{disk: 64 << 20}, map[string]string{"disk": "8MiB"}, 8 << 20, 512, false},
		{"inodes", nil, map[string]string{"disk": "8MiB", "inodes": "100"}, 8 << 20, 100, false},
		{"bad size", nil, map[string]string{"disk": "lots"}, 0, 0, true},
		{"too small", nil, map[string]string{"disk": "4KiB"}, 0, 0, true},
		{"bad inodes", nil, map[string]string{"inodes": "-1"}, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			disk, inodes, err := limitsFrom(c.ex, c.params)
			if (err != nil) != c.wantErr || disk != c.disk || inodes != c.inodes {
				t.Errorf("limitsFrom = %d, %d, %v; want %d, %d, error %v", disk, inodes, err, c.disk, c.inodes, c.wantErr)
			}
		})
	}
}

// The executor's disk= reaches an episode through the exec cache wrapper
// every pipeline stage gets: the size is declared in Info, which wrappers
// pass on, so the replica's file system has room for 1 GiB more.
func TestDiskThroughCacheWrapper(t *testing.T) {
	ctx := context.Background()
	ex := executors.WithCache(sandboxtest.Bwrap(t, "pool=1&disk=1GiB"), nil) // sessions and Info never touch the store
	if got := ex.Info().DiskBytes; got != 1<<30 {
		t.Fatalf("wrapped executor's Info().DiskBytes = %d, want %d", got, 1<<30)
	}
	tasks := envtest.Tasks(t, "testdata/nl2bash_fs_1.json")
	e, err := New(ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{"shell": ShellSession}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.scratch.disk != 1<<30 {
		t.Errorf("episode allowance %d bytes, want %d (the executor's disk=)", e.scratch.disk, 1<<30)
	}
	skipUnbounded(t, e.scratch)
	if _, err := e.Reset(ctx, tasks[1]); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(e.agent.rep.dir, &st); err != nil {
		t.Fatal(err)
	}
	if size := int64(st.Blocks) * st.Bsize; size < 1<<30 || size > 2<<30 {
		t.Errorf("the episode's replica holds %d bytes, want 1 GiB plus the template", size)
	}
}
