#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A hard kill (SIGKILL to the ranks: no chance to checkpoint) of a jobscripts/cpu_job.sbatch
# job: the job fails and is not requeued (the exit is not a preemption); a new job given the
# same FSDP_RUN_DIR resumes from the last periodic checkpoint, this time launched by mpirun
# inside the allocation, and the losses of both jobs together equal an uninterrupted run's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
STEPS=30
EVERY=10
# Synchronous saves: the kill at step 14 must find step 10's file complete. With
# checkpoint.async that write may still be in flight when the ranks die (seconds on a loaded
# 2-core machine while a step takes 0.1 s); kill -9 during a background write is kill9.sh's
# and stop_signals.sh's case. This test is about Slurm: no requeue, resume by a new job.
ARGS=(--set train.steps=$STEPS --set checkpoint.every=$EVERY --set checkpoint.async=false
      --set eval.every=0 --set train.peak_tflops=1)
cluster_start

mpirun -np 2 "$TRAIN" --config inputs/default.toml "${ARGS[@]}" --set checkpoint.dir="$WORK/ref_ckpt" \
  --metrics "$WORK/ref.jsonl" >"$WORK/ref.log" 2>&1 || bad "uninterrupted run failed: $(tail -3 "$WORK/ref.log")"

# rank_pids JOB: the fsdp-train processes of a job, by the job id in their environment.
rank_pids() {
  local p exe train
  train=$(readlink -f "$TRAIN")
  for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null)
    [ "${exe% (deleted)}" = "$train" ] || continue  # (deleted): relinked while it runs
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$1" && echo "${p#/proc/}"
  done
}

t0=$SECONDS
# Rank 0 pauses before step 16 (FSDP_TEST_STALL, core/faults.cpp; the numerics are untouched) so
# that the kill after step 14 finds the job still running however slowly this script scans
# /proc: on a loaded machine the 30 steps (about 2 s) once ended before the scan found a rank.
J=$(FSDP_TEST_STALL=0@15:60 submit -N2 --ntasks-per-node=1 -- "$SRC/inputs/default.toml" "${ARGS[@]}")
RUN=$JOBS/runs/$J
M0=$RUN/metrics.$J.0.jsonl
wait_step "$M0" 1 90 || bad "job $J never reached step 1"
pids=$(rank_pids "$J" | tr '\n' ' ')
[ -n "$pids" ] || bad "job $J: no rank process found to kill"
if wait_step "$M0" 14 90; then
  kill -KILL $pids
  echo "job $J: SIGKILL to ranks (pids $pids) after step $(last_step "$M0")"
else
  bad "job $J never reached step 14"
fi
wait_state "$J" 60 FAILED COMPLETED CANCELLED
sleep 1
echo "job $J: $(job_field "$J" JobState), ExitCode=$(job_field "$J" ExitCode), Restarts=$(job_field "$J" Restarts)"
sed 's/^/    | /' "$JOBS/fsdp-fsdp-cpu-$J.out"
[ "$(job_field "$J" JobState)" = FAILED ] && [ "$(job_field "$J" Restarts)" = 0 ] &&
  ok "killed job failed and was not requeued" || bad "killed job: $(job_field "$J" JobState), restarts $(job_field "$J" Restarts)"
killed_at=$(last_step "$M0")
# The newest complete checkpoint when the ranks died (a *.tmp is one they were writing).
newest=$(ls "$RUN/checkpoints" | sed -n 's/^step_0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1)
echo "killed after step $killed_at; complete checkpoints: $(ls "$RUN/checkpoints" | tr '\n' ' ')"

J2=$(FSDP_RUN_DIR=$RUN FSDP_LAUNCHER=mpirun submit -N2 --ntasks-per-node=1 -- "$SRC/inputs/default.toml" "${ARGS[@]}")
wait_state "$J2" 120 COMPLETED FAILED CANCELLED TIMEOUT
echo "job $J2 (same run folder, mpirun): $(job_field "$J2" JobState), ExitCode=$(job_field "$J2" ExitCode)"
sed 's/^/    | /' "$JOBS/fsdp-fsdp-cpu-$J2.out"
[ "$(job_field "$J2" JobState)" = COMPLETED ] && ok "resubmitted job completed" || bad "resubmitted job did not complete"
M1=$RUN/metrics.$J2.0.jsonl
want=$((${newest:-0} + 1))
[ -n "$newest" ] && [ $((newest % EVERY)) -eq 0 ] && [ "$newest" -le "$killed_at" ] &&
  [ -f "$M1" ] && [ "$(first_step "$M1")" = "$want" ] &&
  ok "killed after step $killed_at; the new job resumed at step $want, after periodic checkpoint $newest" ||
  bad "new job began at step $(first_step "$M1" 2>/dev/null) (newest checkpoint ${newest:-none})"
if [ "$(losses "$M0" "$M1")" = "$(losses "$WORK/ref.jsonl")" ]; then
  ok "losses of both jobs equal the uninterrupted run's exactly ($STEPS steps)"
else
  bad "losses differ from the uninterrupted run:"
  diff <(losses "$M0" "$M1") <(losses "$WORK/ref.jsonl") | head -10
fi
echo "total $((SECONDS - t0)) s"
SLURM_TEST_DONE=1
finish
