#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The largest GPT (n_layer fixed, width searched) that trains under a per-rank device budget,
# for one configuration: shows the last width that takes steps and the first that fails with the
# tracker's out-of-memory report. Binary search over widths (multiples of 64).
#   jobscripts/largest_model.sh NAME "EXTRA --set ARGS"
# Environment: RANKS (4), BUDGET (1GiB), LAYERS (8), STEPS (2), MIN_W (128), MAX_W (4096),
#   FSDP_BUILD, OUT (results file, appended as JSON lines).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
NAME=$1
EXTRA=$2
RANKS=${RANKS:-4}
BUDGET=${BUDGET:-1GiB}
LAYERS=${LAYERS:-8}
STEPS=${STEPS:-2}
OUT=${OUT:-$BUILD/largest_model.jsonl}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

# try WIDTH -> 0 trains, 1 out of device memory, 2 anything else
try() {
  local w=$1
  # shellcheck disable=SC2086
  mpirun --oversubscribe -np "$RANKS" "$BUILD/fsdp-train" --config "$ROOT/inputs/default.toml" \
    --set model.n_layer="$LAYERS" --set model.n_embd="$w" --set model.n_head=$((w / 64)) \
    --set model.block_size=64 --set train.batch_size="$RANKS" --set train.micro_batch_size=1 \
    --set train.steps="$STEPS" --set eval.every=0 --set eval.sequences=0 \
    --set train.peak_tflops=1 --set memory.device_budget="$BUDGET" $EXTRA >"$LOG" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then return 0; fi
  grep -q "out of device memory" "$LOG" && return 1
  cat "$LOG" >&2
  return 2
}

params() {  # GPT-2 parameter count for width w (vocab 256, 64 positions)
  local w=$1
  echo $((LAYERS * (12 * w * w + 13 * w) + 256 * w + 64 * w + 2 * w))
}

lo=$((${MIN_W:-128} / 64)) hi=$((${MAX_W:-4096} / 64))
try $((lo * 64)) || { echo "$NAME: even width $((lo * 64)) does not fit" >&2; exit 1; }
while [ $((hi - lo)) -gt 1 ]; do
  mid=$(((lo + hi) / 2))
  if try $((mid * 64)); then lo=$mid; else rc=$?; [ $rc -eq 2 ] && exit 1; hi=$mid; fi
done
fits=$((lo * 64)) fails=$((hi * 64))
try "$fits" && tail -1 "$LOG" >/dev/null
ok_line=$(grep -m1 "^step" "$LOG")
try "$fails"
oom_line=$(grep -m1 "out of device memory" "$LOG" | cut -c1-240)
echo "$NAME: fits n_embd=$fits ($(params $fits) parameters); fails at n_embd=$fails ($(params $fails))"
echo "  takes steps: $ok_line"
echo "  one size up: $oom_line"
printf '{"config":"%s","ranks":%d,"budget":"%s","layers":%d,"fits_width":%d,"fits_params":%d,"fails_width":%d,"fails_params":%d}\n' \
  "$NAME" "$RANKS" "$BUDGET" "$LAYERS" "$fits" "$(params $fits)" "$fails" "$(params $fails)" >>"$OUT"
