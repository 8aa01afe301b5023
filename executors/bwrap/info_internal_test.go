package bwrap

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// The recorded image names the host interpreter, so cached results of one
// Python do not answer for another.
func TestInfoNamesHostPython(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host")
	}
	got := (&Launcher{}).Info()
	if got.Driver != "bwrap" || !strings.HasPrefix(got.Image, "host:python3") || !strings.Contains(got.Image, "@") {
		t.Errorf("Info: got %+v, want driver bwrap and image host:python3.X@size-mtime", got)
	}
}

// Info declares what the driver suite and InterCode's bash environment
// depend on: the scratch size and the seccomp filter (amd64 only).
func TestInfoDeclaresCapabilities(t *testing.T) {
	got := (&Launcher{disk: 1 << 30}).Info()
	if got.DiskBytes != 1<<30 {
		t.Errorf("Info().DiskBytes = %d, want %d (disk=)", got.DiskBytes, 1<<30)
	}
	if want := runtime.GOARCH == "amd64"; got.SyscallFilter != want {
		t.Errorf("Info().SyscallFilter = %v on %s, want %v", got.SyscallFilter, runtime.GOARCH, want)
	}
}
