#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The device check's CPU half (check 4b), on the CPU machine after the GPU run: the CPU build
# verifies the checkpoint the GPU build wrote at step 25 and resumes from it; steps 26-30 must
# be within 1e-4 relative of the GPU's uninterrupted run. The bundle carries no CPU build (it
# would bring oneDNN and OpenBLAS to the node for two fp32 runs), so this runs here.
#   jobscripts/device_check_cpu.sh DIR [CPU_BUILD]
#     DIR        what jobscripts/device_check.sh left: gpu_step25.h5, logs.tar.gz, summary.txt
#     CPU_BUILD  default ./build
# Appends its PASS/FAIL line to DIR/summary.txt; exit 0 when it passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:?usage: jobscripts/device_check_cpu.sh DIR [CPU_BUILD]}
CPU=${2:-$ROOT/build}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
say() { echo "device_check: $*" | tee -a "$DIR/summary.txt"; }

ck=$DIR/gpu_step25.h5
if [ ! -f "$ck" ] || ! tar -C "$WORK" -xzf "$DIR/logs.tar.gz" ./gpu_fp32.jsonl 2>/dev/null; then
  say "FAIL 4b the CPU build reads the GPU checkpoint: $DIR has no gpu_step25.h5 or no gpu_fp32.jsonl in logs.tar.gz"
  exit 1
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
if ! "$CPU/fsdp-ckpt" verify "$ck" >"$WORK/verify.log" 2>&1; then
  say "FAIL 4b the CPU build does not verify the GPU checkpoint: $(tail -1 "$WORK/verify.log")"
  exit 1
fi
if ! "$CPU/fsdp-train" --config "$ROOT/inputs/default.toml" --set train.steps=30 --set eval.every=0 \
  --set checkpoint.dir="$WORK/ck" --resume "$ck" --metrics "$WORK/cpu_resume.jsonl" >"$WORK/resume.log" 2>&1; then
  say "FAIL 4b the CPU build cannot resume from the GPU checkpoint: $(tail -1 "$WORK/resume.log")"
  exit 1
fi
r=$(python3 - "$WORK/cpu_resume.jsonl" "$WORK/gpu_fp32.jsonl" <<'PY'
import json, sys
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r and "eval_loss" not in r}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = sorted(s for s in a if s >= 26)
worst = max((abs(a[s] - b[s]) / abs(b[s]), s) for s in steps) if steps and all(s in b for s in steps) else (float("inf"), 0)
print(f"{len(steps)} steps, worst relative difference {worst[0]:.2e} at step {worst[1]}")
sys.exit(0 if steps and worst[0] <= 1e-4 else 1)
PY
)
if [ $? = 0 ]; then
  say "PASS 4b the CPU build reads the GPU checkpoint and resumes: $r"
else
  say "FAIL 4b the CPU build resumed from the GPU checkpoint: $r"
  exit 1
fi
