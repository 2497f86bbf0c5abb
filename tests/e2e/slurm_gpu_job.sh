#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# jobscripts/gpu_job.sbatch on a cluster whose nodes each have 2 fake GPUs (GRES gpu backed by
# character devices; fsdp-train itself runs on the CPU): 2 nodes x 2 ranks, launched by srun and
# by mpirun. Each rank must see exactly one GPU, a different one from the other rank on its
# node, and the run must finish.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
export FSDP_FAKE_GPUS=2
# Two ranks per "node", but both nodes are this host: OpenMPI's shared-memory transport names
# its segments by host and local rank, so the nodes' segments would collide. TCP only.
export OMPI_MCA_btl=self,tcp
cluster_start

# FSDP_BUILD for these jobs: an fsdp-train that reports the GPUs it sees, then runs the real one.
mkdir -p "$WORK/probe"
cat >"$WORK/probe/fsdp-train" <<PROBE
#!/bin/bash
echo "gpu-probe node=\${SLURMD_NODENAME:-?} CUDA_VISIBLE_DEVICES=\${CUDA_VISIBLE_DEVICES-unset}"
exec "$TRAIN" "\$@"
PROBE
chmod +x "$WORK/probe/fsdp-train"

for launcher in srun mpirun; do
  J=$(cd "$JOBS" && FSDP_BUILD=$WORK/probe FSDP_LAUNCHER=$launcher sbatch --parsable -N2 \
    --ntasks-per-node=2 --cpus-per-task=1 "$SRC/jobscripts/gpu_job.sbatch" "$SRC/inputs/default.toml" \
    --set train.steps=3 --set train.micro_batch_size=4 --set eval.every=0 --set train.peak_tflops=1)
  wait_state "$J" 90 COMPLETED FAILED CANCELLED TIMEOUT
  LOG=$JOBS/fsdp-fsdp-gpu-$J.out
  echo "job $J ($launcher): $(job_field "$J" JobState), ExitCode=$(job_field "$J" ExitCode)"
  grep -E "fsdp-job|gpu-probe|fsdp-train" "$LOG" | sed 's/^/    | /'
  [ "$(job_field "$J" JobState)" = COMPLETED ] && ok "$launcher: 2 nodes x 2 ranks finished" ||
    bad "$launcher: job $J did not complete"
  # One line per rank: node and its single visible GPU; the 4 (node, GPU) pairs must differ.
  pairs=$(sed -n 's/^gpu-probe node=\([^ ]*\) CUDA_VISIBLE_DEVICES=\([0-9]*\)$/\1:\2/p' "$LOG" | sort)
  if [ "$(wc -l <<<"$pairs")" -eq 4 ] && [ "$(sort -u <<<"$pairs" | wc -l)" -eq 4 ]; then
    ok "$launcher: one GPU per rank, distinct on each node: $(tr '\n' ' ' <<<"$pairs")"
  else
    bad "$launcher: GPUs per rank: $(grep gpu-probe "$LOG" | tr '\n' ';')"
  fi
done
SLURM_TEST_DONE=1
finish
