#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A context the materialised attention cannot hold on this machine, trained with the fused one:
# block_size 16384, B = 1, 3 layers of 8 heads (n_embd 256). The materialised path would keep
# 3 x 8 x 16384^2 probabilities (24 GiB) plus a 1 GiB score work space; the fused path keeps
# 8 x 16384 log-sum-exps per layer. Prints the planner's activation figures for both, the
# materialised run refused by a device budget of this machine's RAM (it would otherwise swap or
# be killed), and a two-step fused run's step time and peak resident memory.
#   jobscripts/long_context.sh [T] [n_layer]     (default 16384, 3)
# Environment: FSDP_BUILD. One rank (the whole sequence is one sample).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
T=${1:-16384}
L=${2:-3}
export OPENBLAS_NUM_THREADS=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RAM=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) * 1024))
DECK=(--config "$ROOT/inputs/default.toml" --set model.block_size="$T" --set model.n_layer="$L"
  --set model.n_head=8 --set model.n_embd=256 --set train.batch_size=1
  --set train.micro_batch_size=1 --set train.steps=2 --set train.warmup_steps=1
  --set eval.every=0 --set eval.sequences=0 --set train.peak_tflops=1)
echo "T = $T, $L layers, 8 heads of 64, B = 1; this machine's RAM: $((RAM / 1048576)) MiB"
for a in materialized fused; do
  "$BUILD/fsdp-plan" "${DECK[@]}" --set model.attention=$a --json >"$WORK/plan_$a.json"
  python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['plans'][0]['memory']['device']
print(f'planned {sys.argv[2]:13s}: activations {p[\"activations\"] / 2**20:10.1f} MiB')" \
    "$WORK/plan_$a.json" "$a"
done
echo "materialized run with memory.device_budget = RAM:"
if "$BUILD/fsdp-train" "${DECK[@]}" --set model.attention=materialized \
  --set memory.device_budget="$RAM" >"$WORK/mat.log" 2>&1; then
  echo "  it ran (this machine has room for it)"
else
  echo "  refused: $(grep -m1 -iE "memory|budget" "$WORK/mat.log")"
fi
echo "fused run:"
/usr/bin/time -v "$BUILD/fsdp-train" "${DECK[@]}" --set model.attention=fused \
  --metrics "$WORK/fused.jsonl" >"$WORK/fused.log" 2>"$WORK/time.txt"
grep -E "attention:|^step|done:" "$WORK/fused.log" | sed 's/^/  /'
echo "  peak resident memory: $(awk '/Maximum resident/ {printf "%.0f MiB", $6 / 1024}' "$WORK/time.txt")"
