#!/bin/bash
# Run a pipeline over a Slurm job array, then merge.
#
#   jobid=$(sbatch --parsable pipeline/deploy/slurm-array.sh data/pipeline.yaml /shared/runs/big)
#   sbatch --dependency=afterok:$jobid --wrap \
#     "codefeedback merge --into /shared/runs/big/merged /shared/runs/big/shard-* &&
#      codefeedback run data/pipeline.yaml --run-dir /shared/runs/big/merged"
#
# Each array task reads SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT (and
# SLURM_ARRAY_TASK_MIN, so --array=1-8 works too) and processes a stable 1/N
# of the items into its own run directory. A requeued or resubmitted task
# resumes from its run directory. Whole-set stages run after the merge.
#SBATCH --job-name=codefeedback
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=48:00:00
#SBATCH --requeue
#SBATCH --output=codefeedback-%A_%a.log
set -euo pipefail

pipeline=${1:?usage: sbatch slurm-array.sh PIPELINE.yaml RUN_ROOT}
root=${2:?usage: sbatch slurm-array.sh PIPELINE.yaml RUN_ROOT}
bin=${CODEFEEDBACK_BIN:-codefeedback}

exec "$bin" run "$pipeline" --run-dir "$root/shard-${SLURM_ARRAY_TASK_ID}"
