#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Slurm 22.05 cluster on this machine for the tests: a private munged, slurmctld and two
# slurmd "nodes" (n1, n2, 2 CPUs each) on 127.0.0.1, every file under one state folder.
#   tests/slurm/cluster_up.sh [DIR]    prints DIR; then: export SLURM_CONF=DIR/slurm.conf
#   FSDP_FAKE_GPUS=2 tests/slurm/cluster_up.sh   also 2 "GPUs" per node (GRES gpu backed by
#                                                 character devices under DIR; nothing runs on them)
#   tests/slurm/cluster_down.sh DIR    stops the daemons by pid and removes DIR
# Both nodes are this host: for more than one rank per node, OpenMPI needs OMPI_MCA_btl=self,tcp
# (its shared-memory segments are named by host and local rank and would collide).
# Needs root (slurmd runs jobs as their user) and the Debian packages slurmctld slurmd
# slurm-client munge. On any failure it prints the daemons' logs, stops what it started and
# exits non-zero.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
D=${1:-$(mktemp -d /tmp/fsdp-slurm.XXXXXX)}
mkdir -p "$D"
chmod 755 "$D"  # munged insists that every folder above its socket is traversable
HOST=$(hostname -s)
SBIN=/usr/sbin

fail() {
  echo "cluster_up: $*" >&2
  for f in "$D"/munge/munged.log "$D"/slurmctld.log "$D"/slurmd.*.log; do
    [ -f "$f" ] && { echo "----- $f" >&2; tail -40 "$f" >&2; }
  done
  "$HERE/cluster_down.sh" "$D" --keep >&2 || true
  exit 1
}

# wait_for SECONDS WHAT CMD...: polls CMD every 0.2 s until it succeeds.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $end ] && fail "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

[ "$(id -u)" -eq 0 ] || fail "needs root"
for b in munged slurmctld slurmd; do [ -x "$SBIN/$b" ] || fail "$SBIN/$b missing (apt-get install slurmctld slurmd munge)"; done
for b in sbatch scontrol sinfo; do command -v $b >/dev/null || fail "$b missing (apt-get install slurm-client)"; done

# Three TCP ports nobody listens on (slurmctld and one per slurmd), below the kernel's ephemeral
# range: a port the kernel hands out for bind(0) is released when this probe exits, and any
# process's next outgoing connection (mpirun's, for one) may take it before slurmctld binds it
# ("Address already in use", seen once in CI beside other MPI jobs).
read -r P_CTL P_N1 P_N2 < <(/usr/bin/python3 - <<'PY'
import random, socket
lo = 32768
try:
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    pass
ports, rng = [], random.SystemRandom()
while len(ports) < 3:
    p = rng.randrange(max(1024, lo - 12000), lo)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    if p not in ports:
        ports.append(p)
print(*ports)
PY
) || fail "could not find free ports"

# A private munged with its own key and socket: nothing shared with a system munge.
mkdir -p "$D/munge"
if [ -f /etc/munge/munge.key ]; then cp /etc/munge/munge.key "$D/munge/munge.key"
else dd if=/dev/urandom of="$D/munge/munge.key" bs=1 count=1024 status=none; fi
chown -R munge:munge "$D/munge"
chmod 711 "$D/munge"
chmod 400 "$D/munge/munge.key"
runuser -u munge -- $SBIN/munged --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" \
  --seed-file="$D/munge/munged.seed" || fail "munged did not start"
wait_for 10 munged bash -c "munge -S '$D/munge/munge.sock' -n | unmunge -S '$D/munge/munge.sock'"

mkdir -p "$D/state" "$D/spool/n1" "$D/spool/n2" "$D/tmp/n1" "$D/tmp/n2"
# Fake GPUs: Slurm only needs device files to hand out (it sets CUDA_VISIBLE_DEVICES per task).
GPUS=${FSDP_FAKE_GPUS:-0}
GRES=""
: >"$D/gres.conf"
if [ "$GPUS" -gt 0 ]; then
  GRES="Gres=gpu:$GPUS"
  for n in n1 n2; do
    mkdir -p "$D/dev/$n"
    for ((g = 0; g < GPUS; g++)); do
      mknod "$D/dev/$n/nvidia$g" c 1 3 || fail "mknod for a fake GPU failed"
      echo "NodeName=$n Name=gpu File=$D/dev/$n/nvidia$g" >>"$D/gres.conf"
    done
  done
fi
cat >"$D/slurm.conf" <<CONF
# Written by tests/slurm/cluster_up.sh: two slurmd nodes on one host.
ClusterName=fsdptest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$P_CTL
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire=10: a requeued job starts again in ~20 s instead of ~150 s.
AuthInfo=cred_expire=10,socket=$D/munge/munge.sock
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.%n.log
TmpFS=$D/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Look at pending jobs every 2 s (default 60), so a requeued job starts once it is eligible.
SchedulerParameters=sched_interval=2,bf_interval=2
InactiveLimit=0
KillWait=10
MinJobAge=600
GresTypes=gpu
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$P_N1 CPUs=2 RealMemory=1000 $GRES State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$P_N2 CPUs=2 RealMemory=1000 $GRES State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$D/slurm.conf

$SBIN/slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
wait_for 20 slurmctld scontrol ping
for n in n1 n2; do
  $SBIN/slurmd -f "$SLURM_CONF" -N $n || fail "slurmd $n did not start"
done
nodes_idle() { [ "$(sinfo -h -N -o '%N %t' | grep -c ' idle$')" -eq 2 ]; }
wait_for 30 "nodes n1 and n2 idle" nodes_idle
echo "$D"
