#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Strong and weak scaling over N = 1, 2, 4, ... ranks for each strategy, run locally with mpirun
# (or inside a Slurm allocation: LAUNCH="srun --mpi=pmix" and the allocation's ranks).
# Strong: fixed global batch. Weak: fixed per-rank batch. One JSON line per run goes to
# $OUT/results.jsonl; jobscripts/plot_scaling.py turns it into PNGs.
#
#   jobscripts/scaling_study.sh [OUT_DIR]
# Environment (all optional): FSDP_BUILD (build dir), RANKS ("1 2 4"), STRATEGIES,
#   DECK (run deck), STEPS, SEQ_PER_RANK (weak), GLOBAL_BATCH (strong), MICRO, LAUNCH,
#   EXTRA (more --set overrides)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
OUT=${1:-$ROOT/build/scaling}
RANKS=${RANKS:-"1 2 4"}
STRATEGIES=${STRATEGIES:-"ddp zero1 zero2 zero3"}
DECK=${DECK:-$ROOT/inputs/scaling.toml}
STEPS=${STEPS:-6}
SEQ_PER_RANK=${SEQ_PER_RANK:-4}
GLOBAL_BATCH=${GLOBAL_BATCH:-16}
MICRO=${MICRO:-4}  # sequences per forward/backward: fixed, so activations stay comparable
LAUNCH=${LAUNCH:-"mpirun --oversubscribe -np"}
EXTRA=${EXTRA:-}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
: >"$OUT/results.jsonl"
machine="$(hostname -s), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"

for mode in strong weak; do
  for s in $STRATEGIES; do
    for n in $RANKS; do
      if [ "$mode" = strong ]; then batch=$GLOBAL_BATCH; else batch=$((SEQ_PER_RANK * n)); fi
      per_rank=$((batch / n))
      metrics="$OUT/${mode}_${s}_np${n}.jsonl"
      echo "== $mode $s N=$n batch=$batch"
      # shellcheck disable=SC2086
      $LAUNCH "$n" "$BUILD/fsdp-train" --config "$DECK" --set fsdp.strategy="$s" \
        --set train.steps="$STEPS" --set train.batch_size="$batch" \
        --set train.micro_batch_size="$MICRO" --set eval.every=0 --set eval.sequences=0 \
        --metrics "$metrics" $EXTRA >"$OUT/${mode}_${s}_np${n}.log" 2>&1
      /usr/bin/python3 - "$metrics" "$mode" "$s" "$n" "$batch" "$machine" >>"$OUT/results.jsonl" <<'PY'
import json, statistics, sys
path, mode, strategy, n, batch, machine = sys.argv[1:7]
steps = [r for r in map(json.loads, open(path)) if "loss" in r][1:]  # step 1 warms up
med = lambda k: statistics.median(r[k] for r in steps)
print(json.dumps({"mode": mode, "strategy": strategy, "ranks": int(n), "batch": int(batch),
    "step_time_s": med("step_time_s"), "tokens_per_s": med("tokens_per_s"),
    "compute_s": med("compute_s"), "comm_exposed_s": med("comm_exposed_s"),
    "optimizer_s": med("optimizer_s"), "mem_peak_by_category": steps[-1]["mem_peak_by_category"],
    "machine": machine}))
PY
    done
  done
done
echo "results: $OUT/results.jsonl"
