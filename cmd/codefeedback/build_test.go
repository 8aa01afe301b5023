package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryDeps: the shipped binary does not link the testing package, and
// `-tags nodocker` builds a bwrap-only binary without the Docker client.
func TestBinaryDeps(t *testing.T) {
	deps := func(tags string) []string {
		out, err := exec.Command("go", "list", "-deps", "-tags", tags, ".").Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	full, slim := deps(""), deps("nodocker")
	if !slices.Contains(full, "github.com/docker/docker/client") {
		t.Errorf("the default build lacks the Docker driver")
	}
	if slices.Contains(slim, "github.com/docker/docker/client") {
		t.Errorf("-tags nodocker still links the Docker client")
	}
	if !slices.Contains(slim, "github.com/codefeedback/codefeedback/executors/bwrap") {
		t.Errorf("-tags nodocker lacks the bwrap driver")
	}
	if slices.Contains(full, "testing") {
		t.Errorf("the binary links package testing (test helpers reached product code)")
	}
}
