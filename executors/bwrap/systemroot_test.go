package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env/bashenv"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// systemRoot is the NL2Bash system root `make nl2bash-image` builds
// (`make test` does); without it the test skips, except in CI.
func systemRoot(t *testing.T) string {
	t.Helper()
	sr, err := bashenv.FindSystemRoot("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI must build it: .ci/setup test)", err)
		}
		t.Skipf("%v", err)
	}
	return sr.Dir
}

func inode(t *testing.T, p string) string {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(st.Sys().(*syscall.Stat_t).Ino, 10)
}

// A system root replaces the host's /usr, /etc and /var, read-only, with
// or without a root directory of the sandbox's own; the runner starts on
// its python3, and nothing the sandbox writes reaches the system root.
func TestSystemRoot(t *testing.T) {
	sys := systemRoot(t)
	ex := sandboxtest.Bwrap(t, "pool=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := bindableDir(t, "sysroot-")
	sysMount := executors.Mount{Source: sys, Target: "/", ReadOnly: true, System: true}
	bash, group := inode(t, filepath.Join(sys, "usr/bin/bash")), inode(t, filepath.Join(sys, "etc/group"))
	for _, withRoot := range []bool{true, false} {
		t.Run("root="+strconv.FormatBool(withRoot), func(t *testing.T) {
			mounts := []executors.Mount{sysMount}
			if withRoot {
				mounts = append(mounts, executors.Mount{Source: dir, Target: "/"})
			}
			s, err := ex.Open(ctx, executors.Bash, executors.SessionOptions{Mounts: mounts})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if o, ok := s.(executors.SandboxOwner); ok && os.Geteuid() == 0 && withRoot {
				uid, gid := o.SandboxOwner()
				if err := os.Chown(dir, uid, gid); err != nil {
					t.Fatal(err)
				}
			}
			cases := []struct{ code, want string }{
				{"stat -c %i /usr/bin/bash /bin/bash /etc/group", bash + "\n" + bash + "\n" + group},
				{"python3 -c 'print(6*7)'", "42"},
				{"ls /var/lib/dpkg/status", "/var/lib/dpkg/status"},
				{"grep -c '^127.0.0.1 localhost$' /etc/hosts", "1"},
				{"echo x > /usr/bin/evil || echo refused", "refused"},
				{"echo x > /etc/evil || echo refused", "refused"},
				{"echo x > /var/evil || echo refused", "refused"},
			}
			for _, c := range cases {
				res, err := s.Exec(ctx, "exec 2>&1\n"+c.code)
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Stdout + res.Stderr; !strings.Contains(got, c.want) {
					t.Errorf("%s: got %q, want %q", c.code, got, c.want)
				}
			}
		})
	}
	for _, p := range []string{"usr/bin/evil", "etc/evil", "var/evil"} {
		if _, err := os.Lstat(filepath.Join(sys, p)); err == nil {
			t.Errorf("%s was written into the system root", p)
		}
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written into the root directory", p)
		}
	}
	// A system mount must name /.
	if _, err := ex.Open(ctx, executors.Bash, executors.SessionOptions{Mounts: []executors.Mount{{Source: sys, Target: "/x", System: true}}}); err == nil {
		t.Error("a system mount at /x was accepted")
	}
}
