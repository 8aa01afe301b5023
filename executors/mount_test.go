package executors

import "testing"

func TestMountValidate(t *testing.T) {
	cases := []struct {
		m  Mount
		ok bool
	}{
		{Mount{Source: "/srv/ep/testbed", Target: "/testbed"}, true},
		{Mount{Source: "/srv/ep/t", Target: "/ctf/12", ReadOnly: true}, true},
		{Mount{Source: "rel", Target: "/testbed"}, false},
		{Mount{Source: "/x", Target: "testbed"}, false},
		{Mount{Source: "/srv/ep/root", Target: "/"}, true}, // the sandbox's root file system
		{Mount{Source: "/", Target: "/"}, false},           // never the host's own root
		{Mount{Source: "/", Target: "/testbed"}, false},
		{Mount{Source: "/x", Target: "/testbed/../etc"}, false},
		{Mount{Source: "/x", Target: "/usr/bin"}, false},
		{Mount{Source: "/x", Target: "/tmp"}, false},
		{Mount{Source: "/x", Target: "/proc/self"}, false},
		{Mount{Source: "/x", Target: "/etcetera"}, true},
	}
	for _, c := range cases {
		if err := c.m.Validate(); (err == nil) != c.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", c.m, err, c.ok)
		}
	}
}
