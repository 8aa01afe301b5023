package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a pipeline runner (with the fake stages of
// fakes_test.go registered) when this variable names a pipeline file, so the
// kill test can SIGKILL a real process mid-run.
const helperEnv = "CODEFEEDBACK_PIPELINE_TEST_RUN"

func TestMain(m *testing.M) {
	if file := os.Getenv(helperEnv); file != "" {
		cfg, err := Load(file, "")
		if err == nil {
			_, err = Run(context.Background(), cfg, RunOptions{})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var killPipeline = onQueries(`
  - stage: t-suffix
    name: a
    concurrency: 8
    settings: {prompt: "-a", sleep: 16ms}
  - stage: t-suffix
    name: b
    concurrency: 4
    settings: {prompt: "-b", sleep: 8ms}
outputs:
  - path: $DIR/out.jsonl
`)

// TestKill9Resume kills a running pipeline with SIGKILL ten times at random
// moments, then lets it finish: the output must equal an uninterrupted run's,
// with no duplicate and no partial line, and no output file may ever be
// half-written.
//
// The stages sleep so that the whole run (about 4 s of stage time) outlasts
// the ten kills (30-430 ms each) however fast the engine is: a run that
// finishes before its kill does not test a crash.
func TestKill9Resume(t *testing.T) {
	const n = 1000
	ref, refFile := setup(t, n, killPipeline)
	mustRun(t, refFile, RunOptions{})
	want := readOutputLines(t, filepath.Join(ref, "out.jsonl"))
	if len(want) != n {
		t.Fatalf("reference run wrote %d lines want %d", len(want), n)
	}

	dir, file := setup(t, n, killPipeline)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	killed := 0
	for i := range 10 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+file)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wait := time.Duration(30+rng.IntN(400)) * time.Millisecond
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("helper run %d failed before the kill: %v\n%s", i, err, stderr.String())
			}
		case <-time.After(wait):
			cmd.Process.Kill() // SIGKILL
			<-done
			killed++
		}
		// Whatever exists under a final name is whole.
		if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); err == nil {
			readOutputLines(t, filepath.Join(dir, "out.jsonl"))
		}
	}
	t.Logf("killed %d of 10 runs mid-way", killed)
	if killed < 5 {
		t.Fatalf("only %d of 10 runs were killed mid-way; the test did not exercise crashes", killed)
	}
	m := mustRun(t, file, RunOptions{})
	got := readOutputLines(t, filepath.Join(dir, "out.jsonl"))
	seen := map[string]bool{}
	for _, l := range got {
		if seen[l] {
			t.Fatalf("duplicate output line %s", l)
		}
		seen[l] = true
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d: got %s want %s", i, got[i], want[i])
		}
	}
	a := stageRec(t, m, "a").Counts
	t.Logf("final run: stage a cached %d fresh %d", a.Cached, a.Fresh)
}

func readOutputLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends with a partial line", path)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("%s:%d: partial or invalid line %q", path, i+1, l)
		}
	}
	return lines
}
