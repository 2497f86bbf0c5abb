#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# jobscripts/cpu_job.sbatch on a real Slurm cluster, 2 nodes x 1 rank, submitted with
# sbatch --wait: the job exits 0, its log shows the run, and its metrics file holds every step
# with the same losses as the same run launched by mpirun without Slurm.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
ARGS=(--set train.steps=6 --set eval.every=0 --set train.peak_tflops=1)
cluster_start

mpirun -np 2 "$TRAIN" --config inputs/default.toml "${ARGS[@]}" --set checkpoint.dir="$WORK/ref_ckpt" \
  --metrics "$WORK/ref.jsonl" >"$WORK/ref.log" 2>&1 || bad "reference run failed: $(tail -3 "$WORK/ref.log")"

t0=$SECONDS
out=$(cd "$JOBS" && sbatch --wait --parsable -N2 --ntasks-per-node=1 \
  "$SRC/jobscripts/cpu_job.sbatch" "$SRC/inputs/default.toml" "${ARGS[@]}")
rc=$?
J=${out%%;*}
LOG=$JOBS/fsdp-fsdp-cpu-$J.out
echo "job $J: sbatch --wait returned $rc after $((SECONDS - t0)) s"
sed 's/^/    | /' "$LOG"
[ "$rc" -eq 0 ] && ok "sbatch --wait: job $J exited 0" || bad "job $J exited $rc"
[ "$(job_field "$J" NumNodes)" = 2 ] && [ "$(job_field "$J" NumTasks)" = 2 ] &&
  ok "ran on 2 nodes, 2 ranks ($(job_field "$J" NodeList))" || bad "wrong shape: $(scontrol show job "$J" | grep -E 'NumNodes|NodeList')"
grep -q "2 ranks" "$LOG" && grep -q "training finished (exit 0)" "$LOG" &&
  ok "log shows a 2-rank run that finished" || bad "log lacks the run"
M=$JOBS/runs/$J/metrics.$J.0.jsonl
if [ -f "$M" ] && [ "$(losses "$M" | cut -d' ' -f1 | tr '\n' ' ')" = "1 2 3 4 5 6 " ]; then
  ok "metrics file has steps 1..6"
else
  bad "metrics file $M: $(ls "$JOBS/runs/$J" 2>&1)"
fi
[ "$(losses "$M")" = "$(losses "$WORK/ref.jsonl")" ] && ok "losses equal the mpirun run's exactly" ||
  bad "losses differ: slurm $(losses "$M" | tr '\n' ' ') vs mpirun $(losses "$WORK/ref.jsonl" | tr '\n' ' ')"
SLURM_TEST_DONE=1
finish
