#!/bin/bash
# Submits a phased codefeedback run to Slurm: per phase, one job array of 8 tasks
# and one merge job, each step after the one before (--dependency=afterok).
# Made by: codefeedback plan data/pipeline.yaml --shards 8 --run-root /shared/runs/sample --slurm
# Make it again after changing the pipeline's stages. Plan 80a0bd91d67d59cc:
#   phase 0: tasks run filter; merge runs pack
#   phase 1: tasks run simulate, correct, interact, explain, audit; merge runs dedup-dialogues
# Extra sbatch options for every job (partition, account, time, cpus):
#   SBATCH_OPTS='--partition=cpu --time=24:00:00' bash THIS_SCRIPT
# It prints the last merge's job id; its log is RUN_ROOT/logs/merge-LAST-JOBID.log.
set -euo pipefail
bin=codefeedback
pipeline=data/pipeline.yaml
root=/shared/runs/sample
read -r -a opts <<< "${SBATCH_OPTS:-}"
mkdir -p "$root/logs"
dep=()
# step NAME LOG [SBATCH_ARGS...] -- COMMAND...: submits COMMAND as one job
# (its log $root/logs/LOG) after the step before; its id, in $job, is what
# the next step waits for.
step() {
  local name=$1 log=$2 args=()
  shift 2
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  job=$(sbatch --parsable --job-name="$name" "${args[@]}" "${dep[@]}" "${opts[@]}" \
    --output="$root/logs/$log" --wrap="$(printf '%q ' "$@")")
  dep=(--dependency=afterok:${job%%;*})
}
# phase 0: filter, 8 tasks
step codefeedback-p0 'phase-0-%a-%A.log' --array=0-7 --requeue -- \
  "$bin" run "$pipeline" --phase 0 --shards 8 --run-root "$root"
# merge 0: pack
step codefeedback-m0 'merge-0-%j.log' -- \
  "$bin" merge "$pipeline" --phase 0 --shards 8 --run-root "$root"
# phase 1: simulate, correct, interact, explain, audit, 8 tasks
step codefeedback-p1 'phase-1-%a-%A.log' --array=0-7 --requeue -- \
  "$bin" run "$pipeline" --phase 1 --shards 8 --run-root "$root"
# merge 1: dedup-dialogues
step codefeedback-m1 'merge-1-%j.log' -- \
  "$bin" merge "$pipeline" --phase 1 --shards 8 --run-root "$root"
echo "${job%%;*}"
