package pipeline

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployExamples checks the shipped Kubernetes and Slurm examples parse
// and agree with how the engine reads shards.
func TestDeployExamples(t *testing.T) {
	b, err := os.ReadFile("deploy/k8s-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var jobs []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("k8s manifest: %v", err)
		}
		jobs = append(jobs, doc)
	}
	if len(jobs) != 2 {
		t.Fatalf("k8s manifest: got %d documents want 2 (shards, merge)", len(jobs))
	}
	spec := jobs[0]["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" {
		t.Fatalf("shard job completionMode got %v want Indexed", spec["completionMode"])
	}
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	shards := ""
	for _, e := range c["env"].([]any) {
		if e.(map[string]any)["name"] == "CODEFEEDBACK_SHARDS" {
			shards = e.(map[string]any)["value"].(string)
		}
	}
	if shards == "" || shards != strings.TrimSpace(strings.Split(strings.Split(string(b), "completions: ")[1], "\n")[0]) {
		t.Fatalf("CODEFEEDBACK_SHARDS %q must equal completions", shards)
	}
	got, err := ShardFromEnv(func(k string) string {
		return map[string]string{"JOB_COMPLETION_INDEX": "3", "CODEFEEDBACK_SHARDS": shards}[k]
	}, 0)
	if err != nil || got.Index != 3 {
		t.Fatalf("shard from the manifest's environment: %v, %v", got, err)
	}
	if out, err := exec.Command("bash", "-n", "deploy/slurm-array.sh").CombinedOutput(); err != nil {
		t.Fatalf("slurm script: %v\n%s", err, out)
	}
}
