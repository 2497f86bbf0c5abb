# SPDX-License-Identifier: MIT
# Helpers for the Slurm tests (sourced after lib.sh): a private cluster (tests/slurm/) that is
# torn down by pid when the test ends, however it ends; job submission and polling.
# Without root or the Slurm packages (scripts/fsdp.sh installs them) the tests are skipped.
if [ "$(id -u)" -ne 0 ] || ! command -v sbatch >/dev/null || [ ! -x /usr/sbin/slurmctld ] ||
   [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/sbin/munged ]; then
  echo "SKIP: needs root and the packages slurmctld slurmd slurm-client munge"
  exit 77
fi
CLUSTER=$(mktemp -d /tmp/fsdp-slurm.XXXXXX)
JOBS=$WORK/jobs  # the submit folder: job logs and runs/<jobid>/ land here
mkdir -p "$JOBS"

slurm_teardown() {
  if [ "$FAILS" -gt 0 ] || [ "${SLURM_TEST_DONE:-0}" != 1 ]; then
    for f in "$CLUSTER"/slurmctld.log "$CLUSTER"/slurmd.*.log; do
      [ -f "$f" ] && { echo "----- $f (last 30 lines)"; tail -30 "$f"; }
    done
    for f in "$JOBS"/*.out; do
      [ -f "$f" ] && { echo "----- $f"; cat "$f"; }
    done
  fi
  "$SRC/tests/slurm/cluster_down.sh" "$CLUSTER"
  rm -rf "$WORK"
}
trap slurm_teardown EXIT
trap 'exit 1' TERM INT HUP  # so that a killed test still tears its cluster down

# Jobs run as root and find the build and the source tree through the environment (sbatch
# exports the submitter's environment to the job).
export FSDP_ROOT=$SRC FSDP_BUILD=$BUILD
export SLURM_CONF=$CLUSTER/slurm.conf

cluster_start() {
  local t0=$SECONDS
  if ! "$SRC/tests/slurm/cluster_up.sh" "$CLUSTER" >/dev/null; then
    bad "cluster did not come up"
    exit 1
  fi
  echo "cluster up in $((SECONDS - t0)) s: $(sinfo -h -N -o '%N:%t' | tr '\n' ' ')"
}

# submit SBATCH_OPTIONS... -- JOB_ARGS...: prints the job id.
submit() {
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  # From the submit folder: SLURM_SUBMIT_DIR (the run folders' default parent) is where sbatch runs.
  (cd "$JOBS" && sbatch --parsable "${opts[@]}" "$SRC/jobscripts/cpu_job.sbatch" "$@")
}

# job_field JOB KEY: one field of `scontrol show job` (sacct needs accounting, which is off).
job_field() {
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# wait_state JOB SECONDS STATE...: waits until the job is in one of the STATEs.
wait_state() {
  local job=$1 limit=$2 s
  shift 2
  local end=$((SECONDS + limit))
  while [ $SECONDS -lt $end ]; do
    s=$(job_field "$job" JobState)
    for want in "$@"; do [ "$s" = "$want" ] && return 0; done
    sleep 0.5
  done
  echo "job $job still ${s:-unknown} after ${limit}s (wanted $*)"
  return 1
}

# wait_step FILE STEP SECONDS: waits until the metrics FILE has a record for STEP.
wait_step() {
  local file=$1 step=$2 end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do
    grep -q "\"step\":$step," "$file" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# losses FILE...: the per-step losses of a run, one "step loss" line per step, in step order;
# a later file's record for a step replaces an earlier one's (a resumed attempt reruns the
# steps after its checkpoint).
losses() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
by_step = {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if "loss" in r:
            by_step[r["step"]] = r["loss"]
for s in sorted(by_step):
    print(s, repr(by_step[s]))
PY
}

# first_step FILE / last_step FILE: the first and last step with a loss in a metrics file.
first_step() { losses "$1" | head -1 | cut -d' ' -f1; }
last_step() { losses "$1" | tail -1 | cut -d' ' -f1; }
