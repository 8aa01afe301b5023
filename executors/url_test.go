package executors_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
)

func TestWithDefaults(t *testing.T) {
	cases := []struct{ in, want string }{
		{"bwrap", "bwrap://?memory=1GiB&pool=1"},
		{"docker", "docker://?memory=1GiB&pool=1"},
		{"docker://python:3.12-slim", "docker://python:3.12-slim?memory=1GiB&pool=1"},
		{"docker://codefeedback-sandbox:bookworm?pool=4", "docker://codefeedback-sandbox:bookworm?memory=1GiB&pool=4"},
		{"docker://python:3.12-slim?pids=32", "docker://python:3.12-slim?memory=1GiB&pids=32&pool=1"},
		{"docker://?pool=3&memory=2GiB", "docker://?memory=2GiB&pool=3"},
		{"docker:python:3.12-slim", "docker:python:3.12-slim?memory=1GiB&pool=1"},
	}
	for _, tc := range cases {
		got, err := executors.WithDefaults(tc.in, "pool", "1", "memory", "1GiB")
		if err != nil || got != tc.want {
			t.Errorf("WithDefaults(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestCheck: every option is validated without opening a sandbox, with the
// same answer for validate, run, exec, eval and verify.
func TestCheck(t *testing.T) {
	cases := []struct {
		url  string
		want string // "" = valid; else a substring of the error
	}{
		{"bwrap://", ""},
		{"bwrap", ""},
		{"bwrap?pool=2", ""},
		{"bwrap://?memory=512MiB&timeout=5s&pool=4&cpu=5s&pids=64&output=64KiB&file=64MiB&nofile=256&disk=256MiB", ""},
		{"docker://python:3.12-slim?pool=4", ""},
		{"docker://codefeedback-sandbox:bookworm", ""},
		{"docker:python:3.12-slim", ""},
		{"docker://?image=x:1&cpus=1.5&tmp=64MiB&init=1&pull=0&container_memory=1GiB", ""},
		{"bwrap://?memory=lots", `memory="lots"`},
		{"bwrap://?pool=0", `pool="0"`},
		{"bwrap://?bogus=1", `unknown option "bogus"`},
		{"bwrap://?timeout=-1s", "timeout"},
		{"bwrap://img", "not an image"},
		{"docker://?cpus=0", "cpus"},
		{"docker://?disk=1GiB", `unknown option "disk"`},
		{"bwarp://", `unknown driver "bwarp"`},
		{"", "empty"},
		{"://x", "no driver"},
		{"bwrap://?a=%zz", "invalid URL escape"},
	}
	for _, tc := range cases {
		err := executors.Check(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
}

// WithImage names an image only where the URL names none and the driver
// takes one; it learns the latter from the driver's own checker.
func TestWithImage(t *testing.T) {
	executors.Register("imgtest", func(context.Context, *url.URL) (executors.Executor, error) { return nil, nil })
	executors.RegisterChecker("imgtest", func(u *url.URL) error {
		if u.Host != "" {
			return fmt.Errorf("imgtest: runs no image")
		}
		return nil
	})
	for _, c := range []struct{ in, want string }{
		{"docker", "docker://img:1"},
		{"docker://?pool=4", "docker://img:1?pool=4"},
		{"docker://mine:2", "docker://mine:2"},
		{"docker:mine:2", "docker:mine:2"},
		{"docker://?image=mine:2", "docker://?image=mine:2"},
		{"imgtest://?pool=2", "imgtest://?pool=2"},
		{"nosuch://", "nosuch://"},
	} {
		if got := executors.WithImage(c.in, "img:1"); got != c.want {
			t.Errorf("WithImage(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
