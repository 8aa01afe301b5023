package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	yaml3 "gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The shipped examples are `plan`'s output for the sample pipeline: they
// cannot drift from the plan. CODEFEEDBACK_UPDATE_DEPLOY=1 writes them again.
const (
	k8sJobsFile    = "../../pipeline/deploy/k8s/jobs.yaml"
	k8sStorageFile = "../../pipeline/deploy/k8s/storage.yaml"
	slurmFile      = "../../pipeline/deploy/slurm-submit.sh"
)

func samplePlan(t *testing.T) []pipeline.Phase {
	t.Helper()
	cfg, err := pipeline.Load("../../data/pipeline.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Plan(cfg)
}

// TestDeployExamplesAreThePlan: the shipped Kubernetes Jobs and Slurm
// script are what `plan` prints for data/pipeline.yaml today.
func TestDeployExamplesAreThePlan(t *testing.T) {
	phases := samplePlan(t)
	var k8s, slurm bytes.Buffer
	if err := writeK8sJobs(&k8s, k8sPlan{File: "data/pipeline.yaml", Image: "codefeedback:latest", Shards: 8, Phases: phases}); err != nil {
		t.Fatal(err)
	}
	if err := writeSlurmScript(&slurm, slurmPlan{File: "data/pipeline.yaml", Root: "/shared/runs/sample", Bin: "codefeedback", Shards: 8, Phases: phases}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{k8sJobsFile: k8s.Bytes(), slurmFile: slurm.Bytes()} {
		if os.Getenv("CODEFEEDBACK_UPDATE_DEPLOY") != "" {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what `plan` makes for data/pipeline.yaml now; run CODEFEEDBACK_UPDATE_DEPLOY=1 go test -run TestDeployExamplesAreThePlan ./cmd/codefeedback", file)
		}
	}
	if out, err := runCmd("bash", "-n", slurmFile); err != nil {
		t.Errorf("slurm script: %v\n%s", err, out)
	}
	if out, err := runCmd("bash", "-n", "../../pipeline/deploy/k8s/run-phases.sh"); err != nil {
		t.Errorf("run-phases.sh: %v\n%s", err, out)
	}
}

// k8sObject is one decoded manifest document.
type k8sObject struct {
	kind string
	job  *batchv1.Job
	pvc  *corev1.PersistentVolumeClaim
	pod  *corev1.Pod
}

// decodeK8s decodes every document of a manifest file strictly into the
// Kubernetes API types (k8s.io/api): an unknown or misspelt field, a
// value of the wrong type or an unknown kind is an error.
func decodeK8s(data []byte) ([]k8sObject, error) {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var out []k8sObject
	for i := 0; ; i++ {
		var n yaml3.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		doc, err := yaml3.Marshal(&n)
		if err != nil {
			return nil, err
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		o := k8sObject{kind: head.APIVersion + " " + head.Kind}
		var target any
		switch o.kind {
		case "batch/v1 Job":
			o.job = &batchv1.Job{}
			target = o.job
		case "v1 PersistentVolumeClaim":
			o.pvc = &corev1.PersistentVolumeClaim{}
			target = o.pvc
		case "v1 Pod":
			o.pod = &corev1.Pod{}
			target = o.pod
		default:
			return nil, fmt.Errorf("document %d: unexpected kind %q", i, o.kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, o.kind, err)
		}
		out = append(out, o)
	}
}

// TestK8sManifestsValidate checks the Kubernetes manifests against the API
// types of k8s.io/api (Kubernetes 1.37's; the Jobs need 1.33 or later for
// backoffLimitPerIndex) and checks what a run needs of them: one step at a
// time in the plan's order, every task count equal to the Job's completions,
// restartPolicy Never, the sandbox's privileges, and every volume there.
func TestK8sManifestsValidate(t *testing.T) {
	jobsYAML, err := os.ReadFile(k8sJobsFile)
	if err != nil {
		t.Fatal(err)
	}
	storageYAML, err := os.ReadFile(k8sStorageFile)
	if err != nil {
		t.Fatal(err)
	}
	storage, err := decodeK8s(storageYAML)
	if err != nil {
		t.Fatalf("%s: %v", k8sStorageFile, err)
	}
	if len(storage) != 2 || storage[0].pvc == nil || storage[1].pod == nil {
		t.Fatalf("%s: want a PersistentVolumeClaim and a Pod", k8sStorageFile)
	}
	claim := storage[0].pvc
	if !slices.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("claim %s access modes %v, want ReadWriteMany (tasks of a phase run on several nodes)", claim.Name, claim.Spec.AccessModes)
	}
	objs, err := decodeK8s(jobsYAML)
	if err != nil {
		t.Fatalf("%s: %v", k8sJobsFile, err)
	}
	var want []string
	for _, ph := range samplePlan(t) {
		if len(ph.Each) > 0 {
			want = append(want, fmt.Sprintf("codefeedback-phase-%d", ph.Index))
		}
		want = append(want, fmt.Sprintf("codefeedback-merge-%d", ph.Index))
	}
	var got []string
	for step, o := range objs {
		j := o.job
		if j == nil {
			t.Fatalf("document %d is a %s, want Jobs only", step, o.kind)
		}
		got = append(got, j.Name)
		if s := j.Labels["codefeedback/step"]; s != strconv.Itoa(step) {
			t.Errorf("job %s: step label %q, want %d (run-phases.sh applies them in this order)", j.Name, s, step)
		}
		pod := j.Spec.Template.Spec
		if pod.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("job %s: restartPolicy %q, want Never", j.Name, pod.RestartPolicy)
		}
		c := pod.Containers[0]
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			t.Errorf("job %s: the container is not privileged: bubblewrap cannot mount /proc", j.Name)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
		}
		for _, m := range c.VolumeMounts {
			if _, ok := vols[m.Name]; !ok {
				t.Errorf("job %s mounts volume %s, which the pod does not have", j.Name, m.Name)
			}
		}
		if d := vols["data"]; d.PersistentVolumeClaim == nil || d.PersistentVolumeClaim.ClaimName != claim.Name {
			t.Errorf("job %s: /data is not the claim %s (outputs must outlive the pod)", j.Name, claim.Name)
		}
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "--run-root=/data/run") || !slices.Contains(c.Args, "--shards=8") {
			t.Errorf("job %s args %q: want --run-root=/data/run and --shards=8", j.Name, args)
		}
		if strings.HasPrefix(j.Name, "codefeedback-phase-") {
			s := j.Spec
			if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
				t.Errorf("job %s: not an Indexed Job", j.Name)
			}
			if s.Completions == nil || s.Parallelism == nil || *s.Completions != 8 || *s.Parallelism != 8 {
				t.Errorf("job %s: completions and parallelism must be the --shards 8", j.Name)
			}
			if s.BackoffLimitPerIndex == nil {
				t.Errorf("job %s: no backoffLimitPerIndex: one failing task would use up the others' retries", j.Name)
			}
			// The pod's shard: JOB_COMPLETION_INDEX from Kubernetes, the
			// count from --shards.
			sh, err := pipeline.ShardFromEnv(func(k string) string {
				return map[string]string{"JOB_COMPLETION_INDEX": "7"}[k]
			}, 8)
			if err != nil || sh != (pipeline.Shard{Index: 7, Count: 8}) {
				t.Errorf("shard of index 7: %v, %v", sh, err)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("jobs %v, want the plan's steps %v", got, want)
	}
	// The decoding is strict: a misspelt field is refused.
	bad := bytes.Replace(jobsYAML, []byte("backoffLimitPerIndex"), []byte("backoffLimitPerIndx"), 1)
	if _, err := decodeK8s(bad); err == nil || !strings.Contains(err.Error(), "backoffLimitPerIndx") {
		t.Errorf("a misspelt field decoded without error (%v)", err)
	}
}

func runCmd(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}
