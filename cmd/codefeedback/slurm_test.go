package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/rogpeppe/go-internal/txtar"
)

// slurmReady says why the machine's Slurm cluster cannot take jobs ("" when
// it can): sbatch missing, or slurmctld not answering.
func slurmReady() string {
	if _, err := exec.LookPath("sbatch"); err != nil {
		return "sbatch not installed (Debian: apt-get install slurm-wlm munge; .ci/setup test starts a one-node cluster)"
	}
	out, err := exec.Command("scontrol", "ping").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is UP") {
		return "slurmctld does not answer `scontrol ping` (" + strings.TrimSpace(string(out)) + "); .ci/setup test starts it"
	}
	return ""
}

// TestSlurmPhasedRun submits the Code-Feedback recipe (filter -> pack ->
// simulate -> explain; the scripted model on 127.0.0.1, the bwrap sandbox)
// to the machine's Slurm cluster through the script `plan --slurm` makes:
// one job array of 3 tasks per phase and a merge job after each, chained
// with dependencies. The trainer file equals an unsharded run's byte for
// byte. Then one task's run directory is deleted (a task killed before it
// recorded anything) and the same script is submitted again: only that
// task computes, the others are skipped, and the trainer file is the same.
func TestSlurmPhasedRun(t *testing.T) {
	if why := slurmReady(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Slurm is required with CI=true: %s", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed")
	}
	if testing.Short() {
		t.Skip("submits jobs to Slurm: not with -short")
	}
	dir := t.TempDir()
	// Slurm runs the jobs as this user, from this directory, through slurmd:
	// the directory must be reachable by path from a fresh process.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "codefeedback")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The recipe and its data are phased.txtar's.
	ar, err := txtar.ParseFile("testdata/script/phased.txtar")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, llmtest.WithKey("fake-key"), llmtest.WithModels("fake-coder"))
	srv.Script(fakeModelReply)
	for _, f := range ar.Files {
		data := f.Data
		name := f.Name
		if name == "pipeline.yaml.in" {
			name, data = "pipeline.yaml", bytes.ReplaceAll(data, []byte("FAKE_OPENAI_URL"), []byte(srv.URL))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FAKE_KEY=fake-key")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s\nlogs:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String(), slurmLogs(dir))
		}
		return stdout.String()
	}
	run(bin, "run", "pipeline.yaml", "--run-dir", "whole")
	want, err := os.ReadFile(filepath.Join(dir, "out", "code_feedback.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "out"), filepath.Join(dir, "whole-out")); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "phased")
	script := run(bin, "plan", "pipeline.yaml", "--shards", "3", "--run-root", root, "--slurm", "--bin", bin)
	if err := os.WriteFile(filepath.Join(dir, "submit.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	submit := func() {
		t.Helper()
		last := strings.TrimSpace(run("bash", "submit.sh"))
		// Blocks until the chain's last job ends; a failed step cancels the
		// jobs after it (kill_invalid_depend) and this one with them.
		run("sbatch", "--wait", "--quiet", "--dependency=afterok:"+last, "--output=/dev/null", "--wrap=true")
	}
	submit()
	got, err := os.ReadFile(filepath.Join(dir, "out", "code_feedback.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("trainer file from Slurm differs from the unsharded run's:\ngot  %s\nwant %s", got, want)
	}
	run("python3", "same.py", "out/dialogues.jsonl", "whole-out/dialogues.jsonl")
	tasks, merges := stageSeconds(t, root)
	t.Logf("stage time: %.2fs in array tasks, %.2fs in merge jobs: %.0f%% in the tasks", tasks, merges, 100*tasks/(tasks+merges))

	// Resubmitted after phase 1's task 1 lost its run directory.
	before := map[int]string{}
	for i := range 3 {
		m, err := pipeline.ReadManifest(pipeline.PhaseTaskDir(root, 1, pipeline.Shard{Index: i, Count: 3}))
		if err != nil {
			t.Fatal(err)
		}
		before[i] = m.Started.String()
	}
	if err := os.RemoveAll(pipeline.PhaseTaskDir(root, 1, pipeline.Shard{Index: 1, Count: 3})); err != nil {
		t.Fatal(err)
	}
	requests := srv.Calls(chatPath)
	submit()
	for i := range 3 {
		m, err := pipeline.ReadManifest(pipeline.PhaseTaskDir(root, 1, pipeline.Shard{Index: i, Count: 3}))
		if err != nil {
			t.Fatal(err)
		}
		if again := m.Started.String() != before[i]; again != (i == 1) {
			t.Errorf("resubmitted phase 1: task %d ran again: %v, want %v", i, again, i == 1)
		}
	}
	if srv.Calls(chatPath) == requests {
		t.Errorf("the resubmitted task asked the model nothing: it did not compute")
	}
	got, err = os.ReadFile(filepath.Join(dir, "out", "code_feedback.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("trainer file after the resubmission differs from the unsharded run's")
	}
	if logs := slurmLogs(dir); !strings.Contains(logs, "phase 1 task 0/3: already complete") || !strings.Contains(logs, "phase 0 task 2/3: already complete") {
		t.Errorf("the resubmitted completed tasks did not say they were skipped; logs:\n%s", logs)
	}
}

// stageSeconds adds the seconds of the stages that ran in the phased run's
// array tasks and in its merge jobs.
func stageSeconds(t *testing.T, root string) (tasks, merges float64) {
	t.Helper()
	add := func(path string) float64 {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m pipeline.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for _, st := range m.Stages {
			s += st.Seconds
			if st.Seconds > 0 {
				t.Logf("%s: %s %s %.2fs", filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), st.Name, st.Status, st.Seconds)
			}
		}
		return s
	}
	ts, _ := filepath.Glob(filepath.Join(root, "phase-*", "shard-*", "manifest.json"))
	ms, _ := filepath.Glob(filepath.Join(pipeline.PhaseMergedDir(root), "merge-*.manifest.json"))
	if len(ts) != 6 || len(ms) != 2 {
		t.Fatalf("found %d task and %d merge manifests, want 6 and 2", len(ts), len(ms))
	}
	for _, p := range ts {
		tasks += add(p)
	}
	for _, p := range ms {
		merges += add(p)
	}
	return tasks, merges
}

// slurmLogs is every job log of the phased run, for failure messages.
func slurmLogs(dir string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "phased", "logs", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		b.WriteString("== " + filepath.Base(l) + "\n")
		b.Write(data)
	}
	return b.String()
}
