#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Preemption on a real Slurm cluster: a running jobscripts/cpu_job.sbatch job (2 nodes x 1 rank)
# gets `scancel -b -s USR1` (what --signal=B:USR1@N sends before the time limit). The ranks
# finish their step, write a checkpoint and exit 75; the job requeues itself, the next attempt
# resumes from that checkpoint and finishes, and the per-step losses of both attempts together
# equal those of an uninterrupted run exactly.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
STEPS=24
# keep=10: the preemption's checkpoint is still there to check when the job ends.
ARGS=(--set train.steps=$STEPS --set checkpoint.every=10 --set checkpoint.keep=10 --set eval.every=20
  --set train.peak_tflops=1)
cluster_start

mpirun -np 2 "$TRAIN" --config inputs/default.toml "${ARGS[@]}" --set checkpoint.dir="$WORK/ref_ckpt" \
  --metrics "$WORK/ref.jsonl" >"$WORK/ref.log" 2>&1 || bad "uninterrupted run failed: $(tail -3 "$WORK/ref.log")"

t0=$SECONDS
J=$(submit -N2 --ntasks-per-node=1 -- "$SRC/inputs/default.toml" "${ARGS[@]}")
LOG=$JOBS/fsdp-fsdp-cpu-$J.out
M0=$JOBS/runs/$J/metrics.$J.0.jsonl
M1=$JOBS/runs/$J/metrics.$J.1.jsonl
if wait_step "$M0" 12 90; then
  scancel -b -s USR1 "$J"
  echo "job $J: USR1 to the batch shell after step $(last_step "$M0") ($((SECONDS - t0)) s)"
else
  bad "job $J never reached step 12"
fi
wait_state "$J" 180 COMPLETED FAILED CANCELLED TIMEOUT
echo "job $J ended after $((SECONDS - t0)) s; its log:"
sed 's/^/    | /' "$LOG"

state=$(job_field "$J" JobState)
restarts=$(job_field "$J" Restarts)
[ "$state" = COMPLETED ] && [ "$(job_field "$J" ExitCode)" = 0:0 ] && ok "job completed, exit 0" ||
  bad "job $J: $state, ExitCode=$(job_field "$J" ExitCode)"
[ "$restarts" = 1 ] && ok "requeued once (Restarts=1)" || bad "Restarts=$restarts (wanted 1)"
grep -q "batch shell got SIGUSR1" "$LOG" && grep -q "exit 75" "$LOG" && grep -q "attempt 1 on" "$LOG" &&
  ok "log: USR1 forwarded, exit 75, requeued, attempt 1 started" || bad "log lacks the preemption sequence"
ckpt=$(sed -n 's/.*checkpoint written: \([^ ;]*\).*/\1/p' "$LOG" | head -1)
[ -n "$ckpt" ] && [ -e "$ckpt" ] && ok "checkpoint written on preemption: $ckpt" ||
  bad "no checkpoint named in the log, or it is missing: '$ckpt'"
grep -q "resumed from $ckpt at step" "$LOG" && ok "attempt 1 resumed from that checkpoint" ||
  bad "attempt 1 did not resume from $ckpt"
if [ -f "$M0" ] && [ -f "$M1" ]; then
  a=$(last_step "$M0")
  b=$(first_step "$M1")
  [ "$b" -eq $((a + 1)) ] && ok "attempt 0 ran steps 1..$a, attempt 1 resumed at step $b" ||
    bad "attempt 0 ended at step $a but attempt 1 began at step $b"
  [ "$(last_step "$M1")" -eq $STEPS ] && ok "attempt 1 finished step $STEPS" || bad "attempt 1 ended early"
else
  bad "metrics files missing: $(ls "$JOBS/runs/$J")"
fi
if [ "$(losses "$M0" "$M1")" = "$(losses "$WORK/ref.jsonl")" ]; then
  ok "losses of both attempts equal the uninterrupted run's exactly ($STEPS steps)"
else
  bad "losses differ from the uninterrupted run:"
  diff <(losses "$M0" "$M1") <(losses "$WORK/ref.jsonl") | head -10
fi
echo "total $((SECONDS - t0)) s"
SLURM_TEST_DONE=1
finish
