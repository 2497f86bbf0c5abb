#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp.offload = nvme on this machine (docs/offload.md), three parts:
#   disk    the node-local disk's rates as the offload uses it (fsdp-bench machine --offload-path)
#   fits    a model that also fits in RAM (GPT-2 124M shape, zero3, np 2): step time without
#           offload, with the moments on disk and with the parameter shards too, alternating
#           ROUNDS times; each against max(compute, disk bound), where compute is the step
#           without offload and the disk bound is the step's bytes (every rank of the node) over
#           the measured read and write rates
#   large   a model whose parameters and AdamW state (12 bytes per parameter) are at least 1.5x
#           this machine's RAM: a few steps at np 2, zero3, offload.params = true; the ranks'
#           summed resident memory sampled every 0.2 s, its peak against MemTotal
#   jobscripts/bench_offload.sh [disk|fits|large|all] [OFFLOAD_DIR]
# Environment: FSDP_BUILD, ROUNDS (3), LARGE_STEPS (3), LARGE_FACTOR (1.5).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
WHAT=${1:-all}
DIR=${2:-/var/tmp/fsdp-offload}
ROUNDS=${ROUNDS:-3}
LARGE_STEPS=${LARGE_STEPS:-3}
LARGE_FACTOR=${LARGE_FACTOR:-1.5}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$DIR"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
MACHINE="$DIR/../fsdp-offload-machine.json"
NP=2

disk() {
  mpirun --oversubscribe -np $NP "$BUILD/fsdp-bench" machine --out "$MACHINE" --iters 3 \
    --offload-path "$DIR" | grep -E "disk|written"
}

# One run: prints "<median step s over steps 2..> <disk read B> <disk write B> <disk wait s>"
# (rank 0's per step, medians).
run() {
  local name=$1
  shift
  mpirun --oversubscribe -np $NP "$BUILD/fsdp-train" "$@" --metrics "$OUT/$name.jsonl" \
    >"$OUT/$name.log" 2>&1 || { echo "bench_offload: $name failed:" >&2; tail -5 "$OUT/$name.log" >&2; exit 1; }
  /usr/bin/python3 - "$OUT/$name.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step_time_s"' in l][1:]
med = lambda k: statistics.median(r.get(k, 0.0) for r in rows)
print(med("step_time_s"), med("disk_read_bytes"), med("disk_write_bytes"), med("disk_wait_s"))
EOF
}

fits() {
  [ -f "$MACHINE" ] || disk >/dev/null
  read -r RBW WBW < <(/usr/bin/python3 -c "import json; m = json.load(open('$MACHINE')); print(m['disk_read_bandwidth'], m['disk_write_bandwidth'])")
  local deck=(--config "$ROOT/inputs/bench_124m.toml" --set fsdp.strategy=zero3 --set train.batch_size=8
              --set train.steps=6 --set train.peak_tflops=0.1 --set checkpoint.every=0)
  local nvme=(--set fsdp.offload=nvme --set offload.path="$DIR")
  : >"$OUT/fits"
  for r in $(seq "$ROUNDS"); do
    echo "none $(run none "${deck[@]}")" >>"$OUT/fits"
    echo "moments $(run moments "${deck[@]}" "${nvme[@]}")" >>"$OUT/fits"
    echo "params $(run params "${deck[@]}" "${nvme[@]}" --set offload.params=true)" >>"$OUT/fits"
  done
  /usr/bin/python3 - "$OUT/fits" "$RBW" "$WBW" "$NP" "$ROUNDS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
rbw, wbw, np_, rounds = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
by = {}
for name, step, rd, wr, wait in rows:
    by.setdefault(name, []).append((float(step), float(rd), float(wr), float(wait)))
none = [s for s, *_ in by["none"]]
print(f"# fits in RAM: GPT-2 124M shape, zero3, {np_} ranks, 8 x 64 tokens per step; disk "
      f"{rbw/1e9:.2f} GB/s read, {wbw/1e9:.2f} GB/s write per node; {rounds} rounds, medians "
      f"(spread min-max)")
print(f"{'run':10} {'step s':>18} {'read/rank':>11} {'write/rank':>11} {'wait s':>7} "
      f"{'disk bound s':>12} {'vs max(compute, disk)':>22}")
compute = statistics.median(none)
for name in ("none", "moments", "params"):
    runs = by[name]
    steps = [s for s, *_ in runs]
    rd = statistics.median(r for _, r, _, _ in runs)
    wr = statistics.median(w for _, _, w, _ in runs)
    wait = statistics.median(x for *_, x in runs)
    bound = np_ * rd / rbw + np_ * wr / wbw  # every rank's bytes through the one disk
    ratios = [s / max(compute, bound) for s in steps]
    print(f"{name:10} {statistics.median(steps):7.3f} ({min(steps):.3f}-{max(steps):.3f}) "
          f"{rd/1e6:8.0f} MB {wr/1e6:8.0f} MB {wait:7.2f} {bound:12.3f} "
          f"{statistics.median(ratios):8.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
EOF
}

large() {
  local mem_kib n_layer
  mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
  # GPT-2 blocks of 3072 channels (113.3M parameters each) over a 32000-token vocabulary: the
  # fewest layers whose 12 bytes per parameter reach LARGE_FACTOR x RAM.
  n_layer=$(/usr/bin/python3 -c "
import math
mem = $mem_kib * 1024; d, V, T = 3072, 32000, 64
base = V * d + T * d + 2 * d
per = 12 * d * d + 13 * d
print(math.ceil(($LARGE_FACTOR * mem / 12 - base) / per))")
  local deck=(--config "$ROOT/inputs/bench_124m.toml" --set model.n_layer="$n_layer" --set model.n_embd=3072
              --set model.n_head=24 --set model.vocab_size=32000 --set model.n_positions=64
              --set fsdp.strategy=zero3 --set train.batch_size=2 --set train.micro_batch_size=1
              --set train.steps="$LARGE_STEPS" --set train.peak_tflops=0.1 --set checkpoint.every=0
              --set fsdp.offload=nvme --set offload.path="$DIR" --set offload.params=true)
  "$BUILD/fsdp-plan" "${deck[@]}" --ranks $NP --machine "$MACHINE" >"$OUT/plan" 2>&1 || true
  mpirun --oversubscribe -np $NP "$BUILD/fsdp-train" "${deck[@]}" --metrics "$OUT/large.jsonl" \
    >"$OUT/large.log" 2>&1 &
  local job=$! peak=0 rss
  while kill -0 $job 2>/dev/null; do
    rss=$(for p in $(pgrep -f "fsdp-train.*model.n_layer=$n_layer" | grep -v "^$$\$"); do
            awk '/VmRSS/ {print $2}' /proc/$p/status 2>/dev/null; done | awk '{s += $1} END {print s + 0}')
    [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.2
  done
  wait $job || { echo "bench_offload: the large run failed:" >&2; tail -5 "$OUT/large.log" >&2; exit 1; }
  grep -E "^fsdp-train: (GPT|offload)|^step|^done" "$OUT/large.log" | cut -c1-400
  /usr/bin/python3 - "$OUT/large.jsonl" "$mem_kib" "$peak" "$OUT/plan" <<'EOF'
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step_time_s"' in l]
mem, peak = int(sys.argv[2]) * 1024, int(sys.argv[3]) * 1024
plan = open(sys.argv[4]).read()
params = int(re.search(r"([\d,]+) parameters", plan).group(1).replace(",", ""))
disk = re.search(r"per-rank offload file \(disk\)\s+.*?([\d.]+ [KMGT]iB)\s*$", plan, re.M)
later = rows[1:] or rows
print(f"# larger than RAM: {params/1e9:.3f}B parameters; parameters + AdamW state {12*params/1e9:.1f} GB "
      f"= {12*params/mem:.2f}x RAM ({mem/2**30:.1f} GiB)")
print(f"offload file per rank (planned): {disk.group(1) if disk else '?'}")
print(f"peak resident memory, both ranks summed: {peak/2**30:.2f} GiB = {peak/mem:.2f} of RAM")
print(f"step time (median of steps 2..): {statistics.median(r['step_time_s'] for r in later):.1f} s; "
      f"disk per rank per step: {statistics.median(r['disk_read_bytes'] for r in later)/1e9:.2f} GB read, "
      f"{statistics.median(r['disk_write_bytes'] for r in later)/1e9:.2f} GB written; "
      f"waited {statistics.median(r['disk_wait_s'] for r in later):.1f} s")
m = re.search(r"step time\s+.*?([\d.]+ m?s)\s*$", plan, re.M)
print(f"planner's step time: {m.group(1) if m else '?'}")
EOF
}

case "$WHAT" in
  disk) disk ;;
  fits) fits ;;
  large) large ;;
  all) disk; fits; large ;;
  *) echo "usage: $0 [disk|fits|large|all] [OFFLOAD_DIR]" >&2; exit 2 ;;
esac
