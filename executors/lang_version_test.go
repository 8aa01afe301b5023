package executors_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
)

// versionedEchoer is an echo executor whose sandbox answers the toolchain
// probe (a bash run) with the version it currently has.
func versionedEchoer(version *string) func(executors.Request) (executors.Result, error) {
	return func(req executors.Request) (executors.Result, error) {
		if req.Language == executors.Bash && strings.Contains(req.Code, "command -v") {
			if *version == "" {
				return executors.Result{ExitCode: 3, Stdout: "missing gcc\n"}, nil
			}
			return executors.Result{Stdout: "gcc /usr/bin/x86_64-linux-gnu-gcc-12:1301912:1700000000 " + *version + "\n"}, nil
		}
		return echo(req)
	}
}

// A compiler upgrade between two processes must not let the second serve
// the first's results from the exec cache; the probe runs once per
// language and process, not per run.
func TestExecCacheKeysOnToolchainVersion(t *testing.T) {
	ctx := context.Background()
	c := &mapCache{m: map[string][]byte{}}
	cReq := executors.Request{Language: executors.C, Code: "int main(void) { return 0; }"}
	version := "gcc (Debian 12.2.0-14) 12.2.0"
	ex := &countingExecutor{info: cacheInfo, answer: versionedEchoer(&version)}
	first := executors.WithCache(ex, c)
	for range 3 {
		if _, err := first.Run(ctx, cReq); err != nil {
			t.Fatal(err)
		}
	}
	if ex.runs != 2 { // one probe, one run
		t.Fatalf("runs = %d, want 2 (one version probe, then one run served twice from the cache)", ex.runs)
	}

	// The same toolchain in a new process: served from the cache.
	ex.runs = 0
	if _, err := executors.WithCache(ex, c).Run(ctx, cReq); err != nil {
		t.Fatal(err)
	}
	if ex.runs != 1 {
		t.Errorf("same toolchain, new process: runs = %d, want 1 (the probe only)", ex.runs)
	}

	// An upgraded compiler: the program runs again.
	version = "gcc (Debian 12.2.0-15) 12.2.0"
	ex.runs = 0
	if _, err := executors.WithCache(ex, c).Run(ctx, cReq); err != nil {
		t.Fatal(err)
	}
	if ex.runs != 2 {
		t.Errorf("upgraded compiler: runs = %d, want 2 (the probe and the program)", ex.runs)
	}

	// Python needs no probe.
	ex.runs = 0
	py := executors.Request{Language: executors.Python, Code: "x"}
	w := executors.WithCache(ex, c)
	w.Run(ctx, py)
	w.Run(ctx, py)
	if ex.runs != 1 {
		t.Errorf("python: runs = %d, want 1", ex.runs)
	}

	// A missing toolchain: no key, the run goes through uncached (and the
	// sandbox reports what is missing).
	version = ""
	ex.runs = 0
	w = executors.WithCache(ex, c)
	w.Run(ctx, cReq)
	w.Run(ctx, cReq)
	if ex.runs != 4 {
		t.Errorf("missing toolchain: runs = %d, want 4 (a probe and an uncached run, twice)", ex.runs)
	}
	if _, err := executors.ToolchainVersion(ctx, ex, executors.C); !errors.Is(err, executors.ErrNoToolchain) {
		t.Errorf("ToolchainVersion with gcc missing: got %v, want ErrNoToolchain", err)
	}
}
