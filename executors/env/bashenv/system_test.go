package bashenv_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/docker"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/bashenv"
)

// nl2bashDrivers are the drivers on InterCode's userland: bwrap with the
// system root, docker (where configured) on its image. Both are built by
// `make nl2bash-image` (`make test` does); without them the test skips,
// except in CI.
func nl2bashDrivers(t *testing.T) map[string]executors.Executor {
	t.Helper()
	missing := func(err error) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI must build it: .ci/setup test)", err)
		}
		t.Skipf("%v", err)
	}
	out := map[string]executors.Executor{}
	if _, err := bashenv.FindSystemRoot(""); err != nil {
		missing(err)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing(err)
	}
	ex, err := executors.Open(context.Background(), "bwrap://?pool=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	out["bwrap"] = ex
	if os.Getenv("CODEFEEDBACK_SANDBOX_IMAGE") != "" {
		ex, err := executors.Open(context.Background(), "docker://"+bashenv.Image+"?pool=2")
		if err != nil {
			missing(err)
		}
		t.Cleanup(func() { ex.Close() })
		out["docker"] = ex
	}
	return out
}

// The tasks see InterCode's image's tools, not the host's: no compiler and
// no database server's files, its tree, ps and uptime; on bwrap, `find /`
// meets no directory it may not read (InterCode's ran as root); the gold
// of a task using those tools scores 1 and a wrong action does not.
func TestSystemRootTools(t *testing.T) {
	task := env.Task{
		ID:    "tools",
		Env:   "bash",
		Query: "Print the tree of /testbed",
		Gold:  "tree /testbed",
		Setup: map[string]string{env.SetupFSScript: "mkdir -p /testbed/a/b && echo hi > /testbed/a/b/f.txt"},
	}
	for name, ex := range nl2bashDrivers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			e, err := env.Open(ctx, "bash", ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{"shell": "intercode"}})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if _, err := e.Reset(ctx, task); err != nil {
				t.Fatal(err)
			}
			steps := []struct{ action, want string }{
				{"command -v c++ gcc cc mariadbd mysql || echo none", "none\n"},
				{"ls -d /usr/share/mysql 2>&1 | grep -c 'No such file'", "1\n"},
				{"command -v tree convert dig uptime ps git jq", "/usr/bin/tree\n/usr/bin/convert\n/usr/bin/dig\n/usr/bin/uptime\n/usr/bin/ps\n/usr/bin/git\n/usr/bin/jq\n"},
				// Ubuntu 22.04's bash, whose messages InterCode logged
				// (Makefile: NL2BASH_BASH_SUITE).
				{"echo ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}", "5.1\n"},
			}
			if name == "bwrap" {
				steps = append(steps, struct{ action, want string }{"find / -path /proc -prune -o -print 2>&1 >/dev/null | head -3", ""})
			}
			for _, s := range steps {
				r, err := e.Step(ctx, s.action)
				if err != nil {
					t.Fatal(err)
				}
				if r.Observation != s.want {
					t.Errorf("%s: got %q, want %q", s.action, r.Observation, s.want)
				}
			}
			for _, c := range []struct {
				action string
				ok     bool
			}{{"tree /testbed", true}, {"ls -R /testbed", false}} {
				if _, err := e.Reset(ctx, task); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Step(ctx, c.action); err != nil {
					t.Fatal(err)
				}
				r, err := e.Step(ctx, "submit")
				if err != nil {
					t.Fatal(err)
				}
				if (r.Reward == 1) != c.ok {
					t.Errorf("%s: reward %v (%+v)", c.action, r.Reward, r.Info["reward"])
				}
			}
		})
	}
}

// Params "age" gives the setup script's files an age when a sandbox opens
// (InterCode's image was built before its run: bashenv.ImageAge); none is
// 0, in either shell.
func TestImageAge(t *testing.T) {
	task := env.Task{
		ID: "age", Env: "bash", Query: "List the files modified more than 5 minutes ago",
		Gold:  "find /testbed -type f -mmin +5",
		Setup: map[string]string{env.SetupFSScript: "mkdir -p /testbed && echo a > /testbed/a.txt && touch -d '2023-01-02 03:04' /testbed/old.txt"},
	}
	ex, err := executors.Open(context.Background(), "bwrap://?pool=2")
	if err != nil {
		t.Skipf("bwrap: %v", err)
	}
	defer ex.Close()
	cases := []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"shell": "intercode", "age": bashenv.ImageAge.String()}, "/testbed/a.txt\n/testbed/old.txt\n"},
		{map[string]string{"shell": "intercode"}, "/testbed/old.txt\n"},
		{map[string]string{"shell": "session"}, "/testbed/old.txt\n"},
		{map[string]string{"shell": "session", "age": "6m"}, "/testbed/a.txt\n/testbed/old.txt\n"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		e, err := env.Open(ctx, "bash", ex, env.Options{CacheDir: t.TempDir(), Params: c.params})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, "find /testbed -type f -mmin +5 | sort")
		if err != nil {
			t.Fatal(err)
		}
		if r.Observation != c.want {
			t.Errorf("%v: got %q, want %q", c.params, r.Observation, c.want)
		}
		e.Close()
		cancel()
	}
	if _, err := env.Open(context.Background(), "bash", ex, env.Options{Params: map[string]string{"age": "soon"}}); err == nil || !strings.Contains(err.Error(), "age") {
		t.Errorf("age soon: %v", err)
	}
}

// A system root is usable only when `make nl2bash-image` finished it; the
// errors name the target.
func TestFindSystemRoot(t *testing.T) {
	dir := t.TempDir()
	if _, err := bashenv.FindSystemRoot(dir); err == nil || !strings.Contains(err.Error(), bashenv.SystemRootTarget) {
		t.Errorf("no marker: %v", err)
	}
	if err := os.WriteFile(dir+"/.codefeedback-nl2bash", []byte("abc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bashenv.FindSystemRoot(dir); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("marker only: %v", err)
	}
	for _, p := range []string{"usr/bin", "etc", "var"} {
		if err := os.MkdirAll(dir+"/"+p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"usr/bin/bash", "usr/bin/python3"} {
		if err := os.WriteFile(dir+"/"+f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sr, err := bashenv.FindSystemRoot(dir)
	if err != nil || sr.Dir != dir || sr.Hash != "abc" {
		t.Errorf("complete: %+v, %v", sr, err)
	}
	// An environment asked for a root that is not there fails to open.
	ex, err := executors.Open(context.Background(), "bwrap://?pool=1")
	if err != nil {
		t.Skipf("bwrap: %v", err)
	}
	defer ex.Close()
	if _, err := env.Open(context.Background(), "bash", ex, env.Options{Params: map[string]string{"system": t.TempDir()}}); err == nil {
		t.Error("a missing system root was accepted")
	}
}
