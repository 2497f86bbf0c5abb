#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fused attention's loss curve against the materialised one's on the same deck and seed:
# both runs at once (one rank each, one core each), then the worst relative difference of the
# per-step losses.
#   jobscripts/attention_curves.sh [DECK] [steps] [extra --set ...]
#   (default: inputs/bench_124m.toml at T = 1024, B = 1, lr 3e-4, 50 steps)
# Environment: FSDP_BUILD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
DECK=${1:-$ROOT/inputs/bench_124m.toml}
STEPS=${2:-50}
shift $(($# < 2 ? $# : 2))
export OPENBLAS_NUM_THREADS=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ARGS=(--config "$DECK" --set model.block_size=1024 --set model.n_positions=1024
  --set train.batch_size=1 --set train.micro_batch_size=1 --set train.lr=3e-4
  --set train.warmup_steps=10 --set train.steps="$STEPS" --set eval.every=0
  --set eval.sequences=0 --set train.peak_tflops=1 "$@")
for a in materialized fused; do
  "$BUILD/fsdp-train" "${ARGS[@]}" --set model.attention=$a --metrics "$WORK/$a.jsonl" \
    >"$WORK/$a.log" 2>&1 &
done
wait
grep -h "attention:\|done:" "$WORK/materialized.log" "$WORK/fused.log"
python3 - "$WORK/materialized.jsonl" "$WORK/fused.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:3])
rel = [abs(x - y) / abs(x) for x, y in zip(a, b)]
worst = max(range(len(rel)), key=lambda i: rel[i])
print(f"{len(a)} / {len(b)} steps; losses {a[0]:.4f} -> {a[-1]:.4f} (materialised), "
      f"{b[0]:.4f} -> {b[-1]:.4f} (fused)")
print(f"worst relative difference {rel[worst]:.2e} at step {worst + 1}; "
      f"mean {sum(rel) / len(rel):.2e}")
sys.exit(0 if len(a) == len(b) and rel[worst] <= 1e-5 else 1)
PY
