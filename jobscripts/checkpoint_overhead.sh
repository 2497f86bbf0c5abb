#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What checkpoints cost a training run: the same run with no checkpoints, with synchronous
# saves and with background saves (checkpoint.async), interleaved round by round on one machine
# (paired: a drift in the machine's speed hits all three alike). Prints each run's wall time,
# the medians, the extra time of each over no checkpoints and their ratio, and per save what
# training waited (the staging copy and any wait for the previous write) against the
# synchronous save's time. docs/checkpoints.md quotes its figures.
#   jobscripts/checkpoint_overhead.sh [BUILD_DIR]
#   STEPS (100), EVERY (10), ROUNDS (3), NP (2), DECK (inputs/bench_124m.toml), DIR (a temp dir),
#   MODES ("none sync async"; also async_spin: async with Open MPI's progress loop spinning
#   rather than yielding the core, OMPI_MCA_mpi_yield_when_idle=0; comm/mpi_session.hpp)
set -euo pipefail
BUILD=${1:-build}
STEPS=${STEPS:-100} EVERY=${EVERY:-10} ROUNDS=${ROUNDS:-3} NP=${NP:-2}
DECK=${DECK:-inputs/bench_124m.toml}
DIR=${DIR:-$(mktemp -d)}
MODES=${MODES:-none sync async}
mkdir -p "$DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
ARGS=(--config "$DECK" --set fsdp.strategy=zero3 --set train.batch_size=$((2 * NP))
      --set train.micro_batch_size=2 --set train.steps="$STEPS" --set train.peak_tflops=1)
declare -A MODE=([none]="--set checkpoint.every=0"
                 [sync]="--set checkpoint.every=$EVERY --set checkpoint.async=false"
                 [async]="--set checkpoint.every=$EVERY --set checkpoint.async=true"
                 [async_spin]="--set checkpoint.every=$EVERY --set checkpoint.async=true")
declare -A ENV=([none]="" [sync]="" [async]="" [async_spin]="OMPI_MCA_mpi_yield_when_idle=0")
for m in none sync; do
  [[ " $MODES " == *" $m "* ]] ||
    { echo "checkpoint_overhead.sh: MODES must include $m (it has: $MODES)" >&2; exit 2; }
done
for m in $MODES; do
  [[ -v "MODE[$m]" ]] ||
    { echo "checkpoint_overhead.sh: MODES: unknown mode '$m' (none sync async async_spin)" >&2; exit 2; }
done
echo "# $STEPS steps of $DECK at np $NP (zero3), checkpoint.every = $EVERY, $ROUNDS rounds; $DIR"
for r in $(seq 1 "$ROUNDS"); do
  for m in $MODES; do
    rm -rf "$DIR/ck_$m"
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    env ${ENV[$m]} mpirun -np "$NP" --oversubscribe "$BUILD/fsdp-train" "${ARGS[@]}" ${MODE[$m]} \
      --set checkpoint.dir="$DIR/ck_$m" >"$DIR/$m.$r.log" 2>&1
    ms=$((($(date +%s%N) - t0) / 1000000))
    echo "round $r $m $((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  done
done | tee "$DIR/times"
/usr/bin/python3 - "$DIR" "$ROUNDS" $MODES <<'PY'
import re, statistics, sys
d, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
asyncs = [m for m in modes if m.startswith("async")]
t = {}
for line in open(f"{d}/times"):
    _, r, m, s = line.split()
    t.setdefault(m, []).append(float(s))
med = {m: statistics.median(v) for m, v in t.items()}
for m in modes:
    print(f"{m:10s} wall median {med[m]:8.1f} s  (min {min(t[m]):.1f}, max {max(t[m]):.1f})")
xs = med["sync"] - med["none"]
for a in asyncs:
    xa = med[a] - med["none"]
    print(f"extra over no checkpoints: sync {xs:.1f} s, {a} {xa:.1f} s; {a}/sync {xa / xs:.2f}")
# Per save: the synchronous save's time; each asynchronous mode's staging and wait.
sync_s = [float(m.group(1)) for r in range(1, rounds + 1) for line in open(f"{d}/sync.{r}.log")
          if (m := re.match(r"checkpoint \S+: step \d+, .* in ([0-9.]+) s \(", line))]
for a_mode in asyncs:
    stall_s, write_s = [], []
    for r in range(1, rounds + 1):
        for line in open(f"{d}/{a_mode}.{r}.log"):
            m = re.match(r"checkpoint step \d+: staged .* in ([0-9.]+) s \(training waited ([0-9.]+) s", line)
            if m: stall_s.append(float(m.group(1)) + float(m.group(2)))
            m = re.match(r"checkpoint \S+: step \d+, .* in the background in ([0-9.]+) s", line)
            if m: write_s.append(float(m.group(1)))
    if sync_s and stall_s:
        a, b = statistics.median(stall_s), statistics.median(sync_s)
        print(f"per save: synchronous {b:.2f} s (median of {len(sync_s)}); {a_mode} stall {a:.3f} s "
              f"(median of {len(stall_s)}, max {max(stall_s):.3f}) = {100 * a / b:.1f}% of it; "
              f"background write {statistics.median(write_s):.2f} s")
# Within each run, which the machine's drift between runs does not touch: what the
# asynchronous run lost (the steps that ran while a write was in flight, to the first step that
# ended after it, against the run's median step; the staging; and the last write, which the
# run waits for) against the synchronous saves' time.
for a_mode, r in ((a, r) for a in asyncs for r in range(1, rounds + 1)):
    txt = open(f"{d}/{a_mode}.{r}.log").read()
    steps, hit, in_flight = {}, set(), False
    for line in txt.splitlines():
        m = re.match(r"step\s+(\d+)/\d+ .*?\|\s+(\d+) tok/s", line)
        if m:
            steps[int(m.group(1))] = float(m.group(2))
            if in_flight is not False:
                hit.add(int(m.group(1)))
                if in_flight == "done":
                    in_flight = False
        elif re.match(r"checkpoint step \d+: staged", line):
            in_flight = True
        elif "written in the background" in line and in_flight is True:
            in_flight = "done"
    saves = [int(x) for x in re.findall(r"checkpoint step (\d+): staged", txt)]
    stall = sum(float(a) + float(b) for a, b in
                re.findall(r"staged .* in ([0-9.]+) s \(training waited ([0-9.]+)", txt))
    writes = [float(x) for x in re.findall(r"written in the background in ([0-9.]+) s", txt)]
    sync = sum(float(x) for x in re.findall(r"checkpoint \S+: step \d+, .* in ([0-9.]+) s \(",
                                            open(f"{d}/sync.{r}.log").read()))
    if not (steps and saves and writes and sync):
        continue
    # Step seconds from the logged rate (tokens over all ranks): context x global batch.
    m = re.search(r"context (\d+):.*?, (\d+) ranks,.*?(\d+) micro-batch\(es\) of (\d+) per rank", txt)
    tok_per_step = int(m.group(1)) * int(m.group(2)) * int(m.group(3)) * int(m.group(4))
    secs = {s: tok_per_step / v for s, v in steps.items()}
    med = statistics.median(t for s, t in secs.items() if s not in hit and s > 1)
    slow = sum(secs[s] - med for s in hit)
    lost = slow + stall + writes[-1]
    print(f"{a_mode} round {r} in-run: lost {lost:.2f} s (steps after saves {slow:.2f}, staging "
          f"{stall:.2f}, last write {writes[-1]:.2f}); sync saves {sync:.2f} s; async/sync "
          f"{lost / sync:.2f}")
PY
