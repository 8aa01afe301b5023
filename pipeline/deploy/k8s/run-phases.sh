#!/bin/bash
# Applies the Jobs of `codefeedback plan ... --kubernetes` one step at a
# time: the tasks of phase 0, merge 0, the tasks of phase 1, ... Each step
# starts only after the one before completed; a failed step stops here.
#
#   bash pipeline/deploy/k8s/run-phases.sh jobs.yaml [NAMESPACE]
#
# Run it again after a failure: finished Jobs are deleted and applied again
# (a Job's pods cannot be changed), and their tasks are skipped by
# codefeedback itself (a task that completed with the same inputs exits at
# once); unfinished tasks resume from their run directories.
set -euo pipefail
jobs=${1:?usage: run-phases.sh JOBS.yaml [NAMESPACE]}
ns=(); [ -n "${2:-}" ] && ns=(-n "$2")
steps=$(grep -c 'codefeedback/step:' "$jobs")
for ((step = 0; step < steps; step++)); do
  name=$(kubectl "${ns[@]}" apply --dry-run=client -f "$jobs" -l "codefeedback/step=$step" -o name)
  kubectl "${ns[@]}" delete --ignore-not-found --wait "$name" >/dev/null
  kubectl "${ns[@]}" apply -f "$jobs" -l "codefeedback/step=$step"
  echo "waiting for $name"
  while :; do
    state=$(kubectl "${ns[@]}" get "$name" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
    case " $state " in
      *" Complete "*) break ;;
      *" Failed "*) echo "$name failed: kubectl ${ns[*]} logs -l job-name=${name#job.batch/} --prefix" >&2; exit 1 ;;
    esac
    sleep 10
  done
done
echo "done: the outputs are on the volume under /data (kubectl cp codefeedback-files:/data/out ./out)"
