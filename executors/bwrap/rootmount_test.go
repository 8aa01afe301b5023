package bwrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// A host directory mounted at / is the sandbox's root: writes into / land
// in it, the system directories stay the sandbox's own (read-only /usr and
// /etc, nothing written through them into the directory), and a second
// sandbox starts on what the first left, even after it broke the links.
func TestRootMount(t *testing.T) {
	ex := sandboxtest.Bwrap(t, "pool=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := bindableDir(t, "rootmount-")
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "index.html"), []byte("<h1>hi</h1>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() executors.Session {
		s, err := ex.Open(ctx, executors.Bash, executors.SessionOptions{Mounts: []executors.Mount{{Source: root, Target: "/"}}})
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := s.(executors.SandboxOwner); ok && os.Geteuid() == 0 {
			uid, gid := o.SandboxOwner()
			if err := os.Chown(root, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	exec := func(s executors.Session, code string) string {
		t.Helper()
		res, err := s.Exec(ctx, "exec 2>&1\n"+code)
		if err != nil {
			t.Fatal(err)
		}
		return res.Stdout + res.Stderr
	}

	s := open()
	cases := []struct{ code, want string }{
		{"cat /index.html", "<h1>hi</h1>"},
		{"cd / && tar czf x.tgz index.html && echo made", "made"},
		{"ln -s /index.html /link && readlink /link", "/index.html"},
		{"echo x > /usr/bin/evil || echo refused", "refused"},
		{"echo x > /etc/evil || echo refused", "refused"},
		{"echo x > /sys/evil || echo refused", "refused"},
		{"python3 -c 'print(6*7)'", "42"},
		// root of its user namespace, without a capability
		{"id -un; grep CapEff /proc/self/status", "root\nCapEff:\t0000000000000000"},
		{"ls /proc/1/fd >/dev/null && echo readable", "readable"},
		// The links may go: the next sandbox gets them back.
		{"rm /bin /sbin && mkdir /bin && echo broke", "broke"},
	}
	for _, c := range cases {
		if got := exec(s, c.code); !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.code, got, c.want)
		}
	}
	s.Close()

	for _, p := range []string{"x.tgz", "link"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("the sandbox's /%s is not in the root directory: %v", p, err)
		}
	}
	for _, p := range []string{"usr/bin/evil", "etc/evil", "sys/evil"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was written through into the root directory", p)
		}
	}
	if _, err := os.Stat("/usr/bin/evil"); err == nil {
		t.Fatal("a sandbox wrote the host's /usr/bin")
	}

	s = open()
	defer s.Close()
	if got := exec(s, "readlink /bin; ls /bin/sh"); !strings.Contains(got, "usr/bin") || !strings.Contains(got, "/bin/sh") {
		t.Errorf("second sandbox: /bin is %q", got)
	}
}
