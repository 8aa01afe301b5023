package docker

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	t.Setenv(ImageEnv, "")
	cases := []struct {
		url     string
		image   string
		pool    int
		memory  int64
		nano    int64
		pull    bool
		timeout time.Duration
	}{
		{"docker://?pool=3", DefaultConfig.Image, 3, DefaultConfig.Memory, DefaultConfig.NanoCPUs, false, 0},
		{"docker:python:3.12-slim?pool=4&memory=1GiB", "python:3.12-slim", 4, 1 << 30, DefaultConfig.NanoCPUs, false, 0},
		{"docker://python?cpus=0.5&pull=1", "python", 2, DefaultConfig.Memory, 5e8, true, 0},
		{"docker://localhost:5000/team/img:tag?memory=512m", "localhost:5000/team/img:tag", 2, 512 << 20, DefaultConfig.NanoCPUs, false, 0},
		{"docker://?image=python:3.12-slim&timeout=3s", "python:3.12-slim", 2, DefaultConfig.Memory, DefaultConfig.NanoCPUs, false, 3 * time.Second},
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
		if o.cfg.Image != tc.image || o.pool != tc.pool || o.cfg.Memory != tc.memory || o.cfg.NanoCPUs != tc.nano || o.pull != tc.pull || o.timeout != tc.timeout {
			t.Errorf("parseURL(%q): got image=%q pool=%d memory=%d nano=%d pull=%v timeout=%v want image=%q pool=%d memory=%d nano=%d pull=%v timeout=%v",
				tc.url, o.cfg.Image, o.pool, o.cfg.Memory, o.cfg.NanoCPUs, o.pull, o.timeout, tc.image, tc.pool, tc.memory, tc.nano, tc.pull, tc.timeout)
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
		{"docker://?memory=1k", "at least 32MiB"},
		{"docker://?cpus=0", "cpus"},
		{"docker://?pids=2", "pids"},
		{"docker://?timeout=-1s", "timeout"},
		{"docker://?pool=2&memroy=1g", `unknown URL parameter "memroy"`},
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

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{{"512MiB", 512 << 20}, {"512m", 512 << 20}, {"1G", 1 << 30}, {"1gb", 1 << 30}, {"64k", 64 << 10}, {"100", 100}, {"7b", 7}}
	for _, tc := range cases {
		got, err := parseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseBytes(%q): got %d, %v want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1m", "1.5g", "12xb"} {
		if got, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q): got %d want an error", bad, got)
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
