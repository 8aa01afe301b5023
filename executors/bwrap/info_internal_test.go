package bwrap

import (
	"os"
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
