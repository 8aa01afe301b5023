// Package sandboxtest opens the real sandboxes that tests run code in, so
// each package's tests do not carry their own copy of the same opener.
//
// It is test-only: it imports testing, and only _test.go files may import
// it (sharedtest's TestNotLinkedIntoTheBinary checks).
package sandboxtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	_ "github.com/codefeedback/codefeedback/executors/bwrap"  // bwrap:// URLs
	_ "github.com/codefeedback/codefeedback/executors/docker" // docker:// URLs
)

// Open opens the sandbox at the URL in the environment variable env (such
// as docker://codefeedback-sandbox:bookworm), else bubblewrap's, with query
// ("pool=2") added, and closes it when the test ends.
func Open(tb testing.TB, env, query string) executors.Executor {
	tb.Helper()
	u := url(os.Getenv(env), query)
	ex, err := executors.Open(context.Background(), u)
	if err != nil {
		tb.Fatalf("open sandbox %s: %v", u, err)
	}
	tb.Cleanup(func() { ex.Close() })
	return ex
}

// Bwrap opens bubblewrap's sandbox with query ("pool=1&disk=1GiB") for a
// test of its own, closed when the test ends; the test is skipped when
// bwrap is not installed.
func Bwrap(tb testing.TB, query string) executors.Executor {
	tb.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		tb.Skip("skipping: bubblewrap (bwrap) is not installed")
	}
	return Open(tb, "", query)
}

// url is the sandbox URL for Open: from (bwrap:// when empty) with query
// added to any query it has.
func url(from, query string) string {
	if from == "" {
		from = "bwrap://"
	}
	switch {
	case query == "":
		return from
	case strings.Contains(from, "?"):
		return from + "&" + query
	}
	return from + "?" + query
}

var (
	sharedOnce sync.Once
	sharedEx   executors.Executor
	sharedErr  error
)

// Shared returns one bubblewrap sandbox with two warm instances (the
// machine has two cores), opened by the first test that asks and used by
// every later test of the test binary; it lives until the binary exits. A
// test is skipped when bwrap is not installed.
func Shared(tb testing.TB) executors.Executor {
	tb.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		tb.Skip("skipping: bubblewrap (bwrap) is not installed")
	}
	sharedOnce.Do(func() { sharedEx, sharedErr = executors.Open(context.Background(), "bwrap://?pool=2") })
	if sharedErr != nil {
		tb.Fatalf("open bwrap: %v", sharedErr)
	}
	return sharedEx
}
