#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The per-kernel table of a bf16 run beside a GEMM micro-benchmark of the same shapes, measured
# in one run on one core: fsdp-train --profile (bf16 parameters and GEMMs) gives each GEMM
# shape's rate inside training; fsdp-bench gemm times the same shapes alone, per library. Each
# shape's in-training rate is then a share of oneDNN's bf16 matmul rate, or, on a CPU without
# a bf16 kernel, of the fp32 GEMM rate that the widening path ends in.
#   jobscripts/gemm_rates.sh [DECK] [steps]        (default inputs/bench_124m.toml, 6 steps)
# Environment: FSDP_BUILD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
DECK=${1:-$ROOT/inputs/bench_124m.toml}
STEPS=${2:-6}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
bf16=(--set fsdp.mixed_precision=bf16 --set fsdp.gemm_dtype=bf16)
"$BUILD/fsdp-train" --config "$DECK" "${bf16[@]}" --set train.steps="$STEPS" \
  --set train.peak_tflops=1 --profile >"$WORK/train.txt" 2>&1
"$BUILD/fsdp-bench" gemm --config "$DECK" "${bf16[@]}" >"$WORK/bench.txt" 2>&1
grep -m1 "GEMMs:" "$WORK/train.txt"
sed -n '/^per-kernel time/,/^total (timed kernels)/p' "$WORK/train.txt" | head -14
cat "$WORK/bench.txt"
/usr/bin/python3 - "$WORK/train.txt" "$WORK/bench.txt" <<'PY'
import re, sys
train, bench = (open(p).read().splitlines() for p in sys.argv[1:3])
# fsdp-train's "GEMMs by shape" table: op, MxNxK, in, calls, ms/step, GFLOP/s, path
inside, on = {}, False
for line in train:
    if line.startswith("GEMMs by shape"):
        on = True
        continue
    if on:
        f = line.split()
        if len(f) < 7 or f[0] == "op":
            if f and f[0] != "op": on = False
            continue
        if f[2] == "bf16":
            inside[(f[0], f[1])] = (float(f[5]), float(f[4]))
ref = {}
for line in bench:
    f = line.split()
    if len(f) == 9 and re.fullmatch(r"[NT]{2}", f[0]):
        shape = f"{f[1]}x{f[2]}x{f[3]}"
        dnnl16 = None if f[6] == "n/a" else float(f[6])
        ref[(f[0], shape)] = (dnnl16, float(f[4]))
print("\nin training vs alone (same shapes, this run):")
print(f"{'op':4} {'M x N x K':22} {'ms/step':>9} {'train GF/s':>11} {'ref GF/s':>9} {'share':>7}  ref")
total_ms = 0.0
weighted = 0.0
for key, (rate, ms) in sorted(inside.items(), key=lambda kv: -kv[1][1]):
    if key not in ref: continue
    d16, f32 = ref[key]
    r, name = (d16, "oneDNN bf16") if d16 else (f32, "fp32 GEMM (no bf16 kernel)")
    print(f"{key[0]:4} {key[1]:22} {ms:9.2f} {rate:11.1f} {r:9.1f} {rate / r:6.0%}  {name}")
    total_ms += ms
    weighted += ms * rate / r
if total_ms:
    print(f"time-weighted share over {len(inside)} shapes: {weighted / total_ms:.0%}")
PY
