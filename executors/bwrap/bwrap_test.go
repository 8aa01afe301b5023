package bwrap_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/executors/drivertest"
)

func openBwrap(t *testing.T, url string) executors.Executor {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	ex, err := executors.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) executors.Executor { return openBwrap(t, "bwrap://?pool=2") })
}
