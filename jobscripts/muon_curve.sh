#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The default deck for 200 steps with train.optimizer = adamw and = muon (each at its defaults,
# the same learning rate, np 2), evaluated every 20 steps; the curves into
# docs/optimizers_curve.png (jobscripts/plot_optimizers.py). Usage: muon_curve.sh BUILD [OUT]
set -euo pipefail
BUILD=${1:?build directory}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
SRC=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
for opt in adamw muon; do
  mpirun -np 2 --oversubscribe "$BUILD/fsdp-train" --config "$SRC/inputs/default.toml" \
    --set train.steps=200 --set train.optimizer=$opt --set eval.every=20 \
    --metrics "$OUT/$opt.jsonl" >"$OUT/$opt.log" 2>&1
  grep -E "^eval +200" "$OUT/$opt.log" | sed "s/^/$opt: /"
done
/usr/bin/python3 "$SRC/jobscripts/plot_optimizers.py" "$OUT/adamw.jsonl" "$OUT/muon.jsonl" \
  "$SRC/docs/optimizers_curve.png"
