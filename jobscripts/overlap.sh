#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prefetch overlap under the emulated link: zero3 on bench_small at N ranks, prefetch k = 0, 1, 2,
# each with and without the progress thread, REPEATS runs per case. Prints, per case, the median
# over runs of exposed/total communication (steps after the first 5, summed), of communication
# over compute, and of the step time.
#   jobscripts/overlap.sh
# Environment: RANKS (2), LAYERS (4), GBPS (0.4: communication about half of compute here),
#   STEPS (20), REPEATS (3), UNIT (fsdp.unit: block or sublayer), FSDP_BUILD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
RANKS=${RANKS:-2}
LAYERS=${LAYERS:-4}
GBPS=${GBPS:-0.4}
STEPS=${STEPS:-20}
REPEATS=${REPEATS:-3}
UNIT=${UNIT:-block}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

echo "zero3, $RANKS ranks, $LAYERS layers, fsdp.unit=$UNIT, comm.emulate_gbps=$GBPS, $STEPS steps, median of $REPEATS runs"
printf "%-3s %-15s %15s %15s %10s\n" k progress_thread exposed/total comm/compute "step ms"
for k in 0 1 2; do
  for pt in false true; do
    for r in $(seq "$REPEATS"); do
      mpirun --oversubscribe -np "$RANKS" "$BUILD/fsdp-train" --config "$ROOT/inputs/bench_small.toml" \
        --set model.n_layer="$LAYERS" --set train.micro_batch_size=$((8 / RANKS)) \
        --set fsdp.strategy=zero3 --set comm.emulate_gbps="$GBPS" --set fsdp.prefetch="$k" --set fsdp.unit="$UNIT" \
        --set comm.progress_thread="$pt" --set train.steps="$STEPS" --set train.peak_tflops=1 \
        --metrics "$DIR/k$k-$pt-$r.jsonl" >/dev/null
    done
    python3 - "$DIR" "$k" "$pt" <<'EOF'
import glob, json, statistics, sys
d, k, pt = sys.argv[1:]
runs = []
for f in sorted(glob.glob(f"{d}/k{k}-{pt}-*.jsonl")):
    rows = [json.loads(l) for l in open(f) if '"comm_total_s"' in l][5:]
    e = sum(r["comm_exposed_s"] for r in rows)
    t = sum(r["comm_total_s"] for r in rows)
    c = sum(r["compute_s"] for r in rows)
    s = sum(r["step_time_s"] for r in rows) / len(rows)
    runs.append((e / t, t / c, 1e3 * s))
med = [statistics.median(x[i] for x in runs) for i in range(3)]
lo = [min(x[0] for x in runs), max(x[0] for x in runs)]
print(f"{k:<3} {pt:<15} {med[0]:7.3f} ({lo[0]:.3f}-{lo[1]:.3f}) {med[1]:7.3f} {med[2]:10.1f}")
EOF
  done
done
