#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bad run deck (exit 2) or bad data (exit 3) submitted through jobscripts/cpu_job.sbatch
# fails fast with the error in the job log and is not requeued, although the job is requeueable.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
cluster_start

# check_fails NAME CODE PATTERN JOB_ARGS...
check_fails() {
  local name=$1 code=$2 pattern=$3
  shift 3
  local t0=$SECONDS J
  J=$(submit -N2 --ntasks-per-node=1 -- "$@")
  wait_state "$J" 60 FAILED COMPLETED CANCELLED TIMEOUT || { bad "$name: job $J did not end"; return; }
  sleep 1  # let a requeue, if one were (wrongly) coming, show up
  local log=$JOBS/fsdp-fsdp-cpu-$J.out state exitcode restarts
  state=$(job_field "$J" JobState)
  exitcode=$(job_field "$J" ExitCode)
  restarts=$(job_field "$J" Restarts)
  echo "job $J ($name): $state, ExitCode=$exitcode, Restarts=$restarts, $((SECONDS - t0)) s"
  sed 's/^/    | /' "$log"
  if [ "$state" = FAILED ] && [ "$exitcode" = "$code:0" ] && [ "$restarts" = 0 ] &&
     grep -q "Not requeueing" "$log" && [ "$(grep -c -E -- "$pattern" "$log")" -ge 1 ]; then
    ok "$name: failed with exit $code in $((SECONDS - t0)) s, not requeued: $(grep -m1 -E -- "$pattern" "$log")"
  else
    bad "$name: state $state, exit $exitcode, restarts $restarts"
  fi
}

check_fails "unknown key" 2 "fsdp-train: .*train.stepz" "$SRC/inputs/default.toml" --set train.stepz=3
check_fails "missing data file" 3 "fsdp-train: .*$WORK/none.bin" "$SRC/inputs/default.toml" \
  --set data.train="$WORK/none.bin" --set train.peak_tflops=1
check_fails "missing deck" 2 "run deck .*nope.toml: cannot read" "$WORK/nope.toml"
SLURM_TEST_DONE=1
finish
