#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stops the cluster that tests/slurm/cluster_up.sh started in DIR, by the pids in its pid files
# (never by name: other Slurm or munge daemons on the machine are left alone), then removes DIR.
#   tests/slurm/cluster_down.sh DIR [--keep]    --keep: leave DIR (its logs) in place
set -uo pipefail
D=${1:?usage: cluster_down.sh DIR [--keep]}
[ -d "$D" ] || exit 0

# alive PID: running and not a zombie (killed daemons can linger here as <defunct>).
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [[ $st != Z* ]]
}

stop() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null)
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 20); do alive "$pid" || return 0; sleep 0.1; done
  echo "cluster_down: pid $pid ($pidfile) still running" >&2
}

# Jobs first, while the daemons can still end them cleanly (slurmstepd kills its tasks).
export SLURM_CONF=$D/slurm.conf
if [ -f "$SLURM_CONF" ] && timeout 5 scontrol ping >/dev/null 2>&1; then
  jobs=$(timeout 5 squeue -h -o %A 2>/dev/null)
  if [ -n "$jobs" ]; then
    timeout 5 scancel $jobs 2>/dev/null
    for _ in $(seq 30); do [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.5; done
  fi
fi
# Then anything a job left behind (batch shell, srun, mpirun, ranks): by pid, found by a job id
# and this cluster's SLURM_CONF in its environment (job processes inherit the submitter's).
for p in /proc/[0-9]*; do
  { env=$(tr '\0' '\n' <"$p/environ"); } 2>/dev/null || continue
  grep -qxF "SLURM_CONF=$SLURM_CONF" <<<"$env" && grep -q "^SLURM_JOB_ID=" <<<"$env" &&
    kill -KILL "${p#/proc/}" 2>/dev/null
done
for f in "$D"/slurmd.*.pid; do stop "$f"; done
stop "$D/slurmctld.pid"
stop "$D/munge/munged.pid"
[ "${2:-}" = "--keep" ] || rm -rf "$D"
