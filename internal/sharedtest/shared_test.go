package sharedtest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped binary must not link this test helper or sandboxtest, nor the testing
// package it brings (its flags, its ../shared/data default).
func TestNotLinkedIntoTheBinary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipping: no go command on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/codefeedback/codefeedback/cmd/codefeedback").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || p == "github.com/codefeedback/codefeedback/internal/sharedtest" || p == "github.com/codefeedback/codefeedback/internal/sandboxtest" {
			t.Errorf("cmd/codefeedback links %s", p)
		}
	}
}
