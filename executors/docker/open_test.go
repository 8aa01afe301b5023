package docker

import (
	"net/url"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
)

func TestParseURL(t *testing.T) {
	t.Setenv(ImageEnv, "")
	defMem := executors.DefaultLimits.MemoryBytes + Headroom
	cases := []struct {
		url    string
		image  string
		pool   int
		memory int64 // container cgroup memory
		pids   int64
		nano   int64
		pull   bool
		init   bool
	}{
		{"docker://?pool=3", DefaultConfig.Image, 3, defMem, 68, 1e9, false, false},
		{"docker:python:3.12-slim?pool=4&memory=1GiB", "python:3.12-slim", 4, 1<<30 + Headroom, 68, 1e9, false, false},
		{"docker://python?cpus=0.5&pull=1&pids=10", "python", 0, defMem, 14, 5e8, true, false},
		{"docker://localhost:5000/team/img:tag?container_memory=2g&init=1", "localhost:5000/team/img:tag", 0, 2 << 30, 68, 1e9, false, true},
		{"docker://?image=python:3.12-slim&timeout=3s", "python:3.12-slim", 0, defMem, 68, 1e9, false, false},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", tc.url, err)
		}
		o, err := parseURL(u)
		if err != nil {
			t.Errorf("parseURL(%q): %v", tc.url, err)
			continue
		}
		if o.cfg.Image != tc.image || o.exec.Pool != tc.pool || o.cfg.Memory != tc.memory || o.cfg.Pids != tc.pids || o.cfg.NanoCPUs != tc.nano || o.pull != tc.pull || o.cfg.Init != tc.init {
			t.Errorf("parseURL(%q): got image=%q pool=%d memory=%d pids=%d nano=%d pull=%v init=%v want image=%q pool=%d memory=%d pids=%d nano=%d pull=%v init=%v",
				tc.url, o.cfg.Image, o.exec.Pool, o.cfg.Memory, o.cfg.Pids, o.cfg.NanoCPUs, o.pull, o.cfg.Init,
				tc.image, tc.pool, tc.memory, tc.pids, tc.nano, tc.pull, tc.init)
		}
	}
}

func TestParseURLEnvImage(t *testing.T) {
	t.Setenv(ImageEnv, "my-sandbox:1")
	o, err := parseURL(&url.URL{Scheme: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.cfg.Image, "my-sandbox:1"; got != want {
		t.Errorf("image: got %q want %q", got, want)
	}
}

func TestParseURLErrors(t *testing.T) {
	cases := []struct{ url, want string }{
		{"docker://?pool=0", "pool"},
		{"docker://?pool=x", "pool"},
		{"docker://?memory=-5", "memory"},
		{"docker://?container_memory=1k", "at least 32MiB"},
		{"docker://?cpus=0", "cpus"},
		{"docker://?tmp=5", "tmp"},
		{"docker://?pull=maybe", "pull"},
		{"docker://?timeout=-1s", "timeout"},
		{"docker://?pool=2&memroy=1g", `unknown option "memroy"`},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", tc.url, err)
		}
		_, err = parseURL(u)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseURL(%q): got %v want an error mentioning %q", tc.url, err, tc.want)
		}
	}
}

func TestOwnerGone(t *testing.T) {
	me := ownerID()
	host := strings.SplitN(me, "/", 2)[0]
	cases := []struct {
		owner string
		want  bool
	}{
		{me, false},
		{host + "/1/999999999999", true}, // pid 1 exists but started at another time
		{host + "/2147483646/1", true},   // no such pid
		{"some-other-host/1/1", false},   // another host's containers are left alone
		{"garbage", true},                // only this package writes the label
		{host + "/notapid/1", true},      //
	}
	for _, tc := range cases {
		if got := ownerGone(tc.owner, host); got != tc.want {
			t.Errorf("ownerGone(%q): got %v want %v", tc.owner, got, tc.want)
		}
	}
}
