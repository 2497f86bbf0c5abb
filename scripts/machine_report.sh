#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the test suite's numbers depend on, printed before it runs: the CPU, the vector and bf16
# units it has, the OpenBLAS kernel family fsdp will run (core/blas_setup.cpp chooses it the
# same way: an OPENBLAS_CORETYPE in the environment wins, else SkylakeX with AVX-512, else
# Haswell with AVX2 + FMA), the ISA oneDNN's bf16 GEMMs may use, and the environment's pins.
# docs/testing.md says which tests are bitwise and on what.
set -uo pipefail
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2)
has() { [[ " $flags " == *" $1 "* ]]; }
yes_no() { has "$1" && echo yes || echo no; }
model=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')

if has avx512f && has avx512bw && has avx512vl; then best=SkylakeX
elif has avx2 && has fma; then best=Haswell
else best="OpenBLAS's own choice"; fi
blas=${OPENBLAS_CORETYPE:-$best}
if has amx_bf16; then isa=avx512_core_amx
elif has avx512_bf16; then isa=avx512_core_bf16
elif has avx512f; then isa=avx512_core
elif has avx2; then isa=avx2
else isa=sse41; fi

echo "machine: ${model:-unknown CPU}, $(nproc) cores"
echo "machine: AVX2 $(yes_no avx2), FMA $(yes_no fma), AVX-512 $(yes_no avx512f), AVX512_BF16 $(yes_no avx512_bf16), AMX-BF16 $(yes_no amx_bf16)"
pinned=""
[ -n "${OPENBLAS_CORETYPE:-}" ] && pinned=" (pinned by the environment; the CPU runs $best)"
echo "machine: OpenBLAS kernel fsdp will use: $blas$pinned"
dnnl="$isa"
[ -n "${ONEDNN_MAX_CPU_ISA:-}" ] && dnnl="at most $ONEDNN_MAX_CPU_ISA (ONEDNN_MAX_CPU_ISA; the CPU runs $isa)"
has avx512_bf16 || has amx_bf16 || dnnl="$dnnl (no bf16 units: bf16 GEMMs widen to fp32)"
echo "machine: oneDNN ISA: $dnnl"
pins=$(env | grep -E '^(OPENBLAS_|ONEDNN_|DNNL_|OMP_NUM_THREADS|FSDP_FLASH_ISA)' | sort | tr '\n' ' ')
echo "machine: environment pins: ${pins:-none}"
