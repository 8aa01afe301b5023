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
# phase 0: filter, 8 tasks
job=$(sbatch --parsable --job-name=codefeedback-p0 --array=0-7 --requeue "${dep[@]}" "${opts[@]}" \
  --output="$root/logs/phase-0-%a-%A.log" \
  --wrap="$(printf '%q ' "$bin" run "$pipeline" --phase 0 --shards 8 --run-root "$root")")
dep=(--dependency=afterok:${job%%;*})
# merge 0: pack
job=$(sbatch --parsable --job-name=codefeedback-m0 "${dep[@]}" "${opts[@]}" \
  --output="$root/logs/merge-0-%j.log" \
  --wrap="$(printf '%q ' "$bin" merge "$pipeline" --phase 0 --shards 8 --run-root "$root")")
dep=(--dependency=afterok:${job%%;*})
# phase 1: simulate, correct, interact, explain, audit, 8 tasks
job=$(sbatch --parsable --job-name=codefeedback-p1 --array=0-7 --requeue "${dep[@]}" "${opts[@]}" \
  --output="$root/logs/phase-1-%a-%A.log" \
  --wrap="$(printf '%q ' "$bin" run "$pipeline" --phase 1 --shards 8 --run-root "$root")")
dep=(--dependency=afterok:${job%%;*})
# merge 1: dedup-dialogues
job=$(sbatch --parsable --job-name=codefeedback-m1 "${dep[@]}" "${opts[@]}" \
  --output="$root/logs/merge-1-%j.log" \
  --wrap="$(printf '%q ' "$bin" merge "$pipeline" --phase 1 --shards 8 --run-root "$root")")
dep=(--dependency=afterok:${job%%;*})
echo "${job%%;*}"
