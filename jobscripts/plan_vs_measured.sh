#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The planner's step time against measured runs on this machine: measure the machine (rates,
# cores, and the GEMM efficiency of the deck's own model), then for each strategy and N run
# fsdp-train and ask fsdp-plan for the same setup. Strong scaling at a fixed global batch, plus
# zero3 over the emulated link at prefetch 0 and 1. Prints a markdown table and writes
# $OUT/plan_vs_measured.jsonl.
#
#   jobscripts/plan_vs_measured.sh [OUT_DIR]
# Environment (optional): FSDP_BUILD, DECK (inputs/default.toml), RANKS ("1 2 4"),
#   STRATEGIES ("ddp zero1 zero2 zero3 hybrid"; hybrid shards over groups of 2), STEPS (12), BATCH (16), EMULATE_GBPS (0.4),
#   REPEATS (3: runs per case; the median of the runs' median step times is kept),
#   MACHINE (an existing machine file: skip the measurement)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
OUT=${1:-$ROOT/build/plan_vs_measured}
DECK=${DECK:-$ROOT/inputs/default.toml}
RANKS=${RANKS:-"1 2 4"}
STRATEGIES=${STRATEGIES:-"ddp zero1 zero2 zero3 hybrid"}
STEPS=${STEPS:-12}
BATCH=${BATCH:-16}
EMULATE_GBPS=${EMULATE_GBPS:-0.4}
REPEATS=${REPEATS:-3}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
: >"$OUT/plan_vs_measured.jsonl"
cores=$(nproc)

MACHINE=${MACHINE:-$OUT/machine.json}
if [ ! -f "$MACHINE" ]; then
  # One rank per core, all busy at once: the rates each rank sees when the node is full.
  mpirun --oversubscribe -np "$cores" "$BUILD/fsdp-bench" machine --calibrate "$DECK" \
    --out "$MACHINE" | tee "$OUT/machine.log"
fi

# case NAME N EXTRA...: one measured run and its plan.
case_run() {
  local name=$1 n=$2
  shift 2
  local micro=$((BATCH / n < 8 ? BATCH / n : 8))
  local sets=(--set train.batch_size="$BATCH" --set train.micro_batch_size="$micro" "$@")
  local metrics=()
  for r in $(seq "$REPEATS"); do
    metrics+=("$OUT/${name}_np${n}_run$r.jsonl")
    mpirun --oversubscribe -np "$n" "$BUILD/fsdp-train" --config "$DECK" "${sets[@]}" \
      --set train.steps="$STEPS" --set eval.every=0 --set eval.sequences=0 \
      --set train.peak_tflops=1 --metrics "${metrics[-1]}" >"$OUT/${name}_np${n}_run$r.log" 2>&1
  done
  "$BUILD/fsdp-plan" --config "$DECK" "${sets[@]}" --ranks "$n" --nodes 1 \
    --machine "$MACHINE" --json >"$OUT/${name}_np${n}.plan.json"
  /usr/bin/python3 - "$OUT/${name}_np${n}.plan.json" "$name" "$n" "${metrics[@]}" \
    >>"$OUT/plan_vs_measured.jsonl" <<'PY'
import json, statistics, sys
plan_path, name, n, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def run_median(path, key):
    steps = [r for r in map(json.loads, open(path)) if "loss" in r][2:]  # two warm-up steps
    return statistics.median(r[key] for r in steps)
med = lambda k: statistics.median(run_median(p, k) for p in runs)
plan = next(p for p in json.load(open(plan_path))["plans"] if p["chosen"])["time"]
print(json.dumps({"case": name, "ranks": int(n), "runs": len(runs),
    "measured": {"step_s": med("step_time_s"), "compute_s": med("compute_s"),
                 "comm_exposed_s": med("comm_exposed_s"), "optimizer_s": med("optimizer_s"),
                 "step_s_per_run": [run_median(p, "step_time_s") for p in runs]},
    "planned": {"step_s": plan["step_s"], "compute_s": plan["compute_s"] + plan["recompute_s"],
                "comm_exposed_s": plan["comm_exposed_s"], "optimizer_s": plan["optimizer_s"]}}))
PY
}

for s in $STRATEGIES; do
  for n in $RANKS; do
    echo "== $s N=$n"
    group=$((n < 2 ? 1 : 2))
    case_run "$s" "$n" --set fsdp.strategy="$s" --set fsdp.shard_group_size="$group"
  done
done
for k in 0 1; do
  for n in $RANKS; do
    echo "== zero3 prefetch $k, emulated link ${EMULATE_GBPS} GB/s, N=$n"
    case_run "zero3_link${EMULATE_GBPS}_prefetch$k" "$n" --set fsdp.strategy=zero3 \
      --set fsdp.prefetch="$k" --set comm.emulate_gbps="$EMULATE_GBPS"
  done
done

/usr/bin/python3 - "$OUT/plan_vs_measured.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| case | N | measured step ms (runs: min-max) | planned step ms | planned/measured | compute ms (m/p) | exposed comm ms (m/p) | optimizer ms (m/p) |")
print("|---|---|---|---|---|---|---|---|")
worst = 0.0
for r in rows:
    m, p = r["measured"], r["planned"]
    ratio = p["step_s"] / m["step_s"]
    worst = max(worst, abs(ratio - 1))
    f = lambda k: f"{1e3*m[k]:.1f} / {1e3*p[k]:.1f}"
    runs = m["step_s_per_run"]
    print(f"| {r['case']} | {r['ranks']} | {1e3*m['step_s']:.1f} ({1e3*min(runs):.1f}-{1e3*max(runs):.1f}) | {1e3*p['step_s']:.1f} | {ratio:.3f} | {f('compute_s')} | {f('comm_exposed_s')} | {f('optimizer_s')} |")
print(f"\nlargest deviation: {100*worst:.1f}% ({len(rows)} cases)")
PY
