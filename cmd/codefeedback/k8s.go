package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline"
)

// k8sMinVersion is the oldest Kubernetes the generated Jobs run on:
// backoffLimitPerIndex (a task's retries of its own) is GA in 1.33 (beta,
// on by default, since 1.29).
const k8sMinVersion = "1.33"

type k8sPlan struct {
	File, Image   string
	Shards, Limit int
	Phases        []pipeline.Phase
}

// writeK8sJobs prints the plan as Kubernetes Jobs: per phase one Indexed Job
// (a pod per task) and one merge Job, labelled with their order
// (codefeedback/step), for run-phases.sh to apply one step at a time after
// the step before completed. Every pod mounts the volume claim
// codefeedback-data at /data (the run root /data/run, outputs under
// /data/out) and the pipeline file from the ConfigMap
// codefeedback-pipeline; each task has its own run directory there, so no
// store is used by two pods. The sandbox is bubblewrap inside the pod,
// which needs a privileged container (an unmasked /proc to mount, and
// namespaces the default seccomp and AppArmor profiles refuse).
func writeK8sJobs(w io.Writer, p k8sPlan) error {
	var b strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	f("# Made by: codefeedback plan %s --shards %d --kubernetes", p.File, p.Shards)
	if p.Image != "codefeedback:latest" {
		f(" --image %s", p.Image)
	}
	if p.Limit > 0 {
		f(" --limit %d", p.Limit)
	}
	f("\n# Plan %s. Kubernetes %s or later. Apply with pipeline/deploy/k8s/run-phases.sh\n", pipeline.PlanHash(p.Phases), k8sMinVersion)
	f("# (one step at a time, each after the one before completed); see docs/guide.md, Phased runs.\n")
	step := 0
	extra := ""
	if p.Limit > 0 {
		extra = ", --limit=" + strconv.Itoa(p.Limit)
	}
	for _, ph := range p.Phases {
		k := strconv.Itoa(ph.Index)
		if len(ph.Each) > 0 {
			f("---\n# Phase %s: %d tasks run %s.\n", k, p.Shards, orDash(ph.Each))
			f("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: codefeedback-phase-%s\n", k)
			f("  labels: {app: codefeedback, codefeedback/step: \"%d\"}\n", step)
			f("spec:\n  completionMode: Indexed\n  completions: %d\n  parallelism: %d\n", p.Shards, p.Shards)
			f("  backoffLimitPerIndex: 2   # a failed task is retried on its own; it resumes from its run directory\n")
			f("  template:\n")
			k8sPod(&b, fmt.Sprintf("[run, /config/pipeline.yaml, --phase=%s, --shards=%d, --run-root=/data/run%s]", k, p.Shards, extra), p)
			step++
		}
		f("---\n# Merge %s: combines phase %s's tasks; runs %s.\n", k, k, orDash(ph.All))
		f("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: codefeedback-merge-%s\n", k)
		f("  labels: {app: codefeedback, codefeedback/step: \"%d\"}\n", step)
		f("spec:\n  backoffLimit: 2\n  template:\n")
		k8sPod(&b, fmt.Sprintf("[merge, /config/pipeline.yaml, --phase=%s, --shards=%d, --run-root=/data/run%s]", k, p.Shards, extra), p)
		step++
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// k8sPod writes a Job's pod template.
func k8sPod(b *strings.Builder, args string, p k8sPlan) {
	fmt.Fprintf(b, `    metadata:
      labels: {app: codefeedback}
    spec:
      restartPolicy: Never       # required by backoffLimitPerIndex; the Job makes a new pod
      containers:
        - name: codefeedback
          image: %s
          args: %s
          workingDir: /data          # relative output paths land on the volume
          env:
            - name: OPENAI_API_KEY   # the model's key, when the pipeline names one
              valueFrom: {secretKeyRef: {name: codefeedback-model, key: api-key, optional: true}}
          securityContext:
            privileged: true         # bubblewrap: unmasked /proc, user and PID namespaces
          volumeMounts:
            - {name: data, mountPath: /data}
            - {name: config, mountPath: /config, readOnly: true}
          resources:
            requests: {cpu: "2", memory: 4Gi}
      volumes:
        - name: data
          persistentVolumeClaim: {claimName: codefeedback-data}
        - name: config
          configMap: {name: codefeedback-pipeline}
`, p.Image, args)
}
