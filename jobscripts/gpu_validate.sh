#!/bin/bash
# SPDX-License-Identifier: MIT
# Validates the GPU build on a machine with a GPU: configure and build with FSDP_ENABLE_CUDA=ON
# in a build folder of its own, run the test suite (the GPU tests must run, not skip), NCCL
# collectives at 1 rank and the host-staged MPI path at 2 ranks sharing the GPU, then the GPT-2
# 124M single-GPU benchmark with tok/s and MFU against the GPU's peak. docs/gpu.md explains it.
#
#   jobscripts/gpu_validate.sh [all|build|run]      (default all)
#   KOKKOS_ROOT=$HOME/kokkos-4-cuda jobscripts/gpu_validate.sh
#   salloc -N1 --gpus=1 -t 30 jobscripts/gpu_validate.sh         # interactive GPU node
#   jobscripts/gpu_validate.sh build && sbatch -N1 --gpus=1 jobscripts/gpu_validate.sh run
#
# Batch jobs do not compile (STYLE.md): under sbatch, build first (on a login or GPU node,
# `build` needs no GPU) and submit `run`. `all` is for an interactive GPU node.
#
# Environment (all optional):
#   KOKKOS_ROOT        a Kokkos 4 built with CUDA (else CMAKE_PREFIX_PATH must find one); its
#                      bin/nvcc_wrapper becomes the C++ compiler unless CXX is set
#   FSDP_ROOT          source tree (default: this script's repository)
#   FSDP_GPU_BUILD     build folder (default $FSDP_ROOT/build-gpu)
#   FSDP_CUDA_ARCH     CMAKE_CUDA_ARCHITECTURES (default: the GPU's compute capability, e.g. 90)
#   FSDP_PEAK_KIND     fp32 | tf32 | bf16: which peak MFU is measured against (default fp32, the
#                      trainer's default precision; cuBLAS uses no TF32 unless told to)
#   FSDP_PEAK_TFLOPS   per-GPU peak in TFLOP/s; default from the table below by GPU name
#   FSDP_BENCH_SET     extra --set overrides for the benchmark, space separated, e.g.
#                      "model.block_size=1024 train.batch_size=16 train.micro_batch_size=16"
#   MPIEXEC            launcher (default mpirun; add site flags through MPIEXEC_FLAGS)
#SBATCH --job-name=fsdp-gpu-validate
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --gpus=1
#SBATCH --time=00:30:00
#SBATCH --output=fsdp-%x-%j.out
set -euo pipefail

phase=${1:-all}
case $phase in all | build | run) ;; *) echo "usage: $0 [all|build|run]" >&2; exit 2 ;; esac
FSDP_ROOT=${FSDP_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${FSDP_GPU_BUILD:-$FSDP_ROOT/build-gpu}
MPIEXEC=${MPIEXEC:-mpirun}
read -ra MPIEXEC_FLAGS <<<"${MPIEXEC_FLAGS:-}"
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log() { echo "gpu_validate: $*"; }
die() { echo "gpu_validate: FAILED: $*" >&2; exit 1; }

# ---- a GPU, or one line saying there is none ------------------------------------------------
gpu_name=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)
fi
if [ -z "$gpu_name" ] && [ "$phase" != build ]; then
  echo "gpu_validate: no GPU visible on $(hostname) (nvidia-smi $(command -v nvidia-smi >/dev/null &&
    echo 'lists none' || echo 'not found')); run it on a GPU node, e.g. salloc --gpus=1" >&2
  exit 2
fi

# ---- build (no GPU needed) ------------------------------------------------------------------
if [ "$phase" != run ]; then
  arch=${FSDP_CUDA_ARCH:-}
  if [ -z "$arch" ] && [ -n "$gpu_name" ]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .')
  fi
  args=(-DCMAKE_BUILD_TYPE=Release -DFSDP_ENABLE_CUDA=ON -DFSDP_BUILD_CUDA_COMM=ON)
  [ -n "$arch" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
  if [ -n "${KOKKOS_ROOT:-}" ]; then
    args+=("-DKokkos_ROOT=$KOKKOS_ROOT")
    [ -z "${CXX:-}" ] && [ -x "$KOKKOS_ROOT/bin/nvcc_wrapper" ] &&
      args+=("-DCMAKE_CXX_COMPILER=$KOKKOS_ROOT/bin/nvcc_wrapper")
  elif [ -z "${CMAKE_PREFIX_PATH:-}" ]; then
    die "set KOKKOS_ROOT (or CMAKE_PREFIX_PATH) to a Kokkos 4 built with CUDA (docs/gpu.md)"
  fi
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  [ -n "$nvcc" ] && args+=("-DCMAKE_CUDA_COMPILER=$nvcc")
  log "configure $BUILD: ${args[*]}"
  cmake -S "$FSDP_ROOT" -B "$BUILD" "${args[@]}" || die "configure (see the CMake error above)"
  cmake --build "$BUILD" -j"$(nproc)" || die "build"
fi
[ "$phase" = build ] && { log "built $BUILD"; exit 0; }
[ -x "$BUILD/fsdp-train" ] || die "no $BUILD/fsdp-train: run '$0 build' first"

# ---- run ------------------------------------------------------------------------------------
OUT=$BUILD/gpu_validate
mkdir -p "$OUT"
log "GPU: $gpu_name; results in $OUT"

log "1/3 test suite (ctest)"
ctest --test-dir "$BUILD" --output-on-failure 2>&1 | tee "$OUT/ctest.log" || die "test suite (see above)"
if grep -E "test_nccl_np[0-9]+ .*Skipped" "$OUT/ctest.log"; then
  die "the GPU tests skipped themselves on a GPU node: the test binary saw no device"
fi

log "2/3 collectives: NCCL at 1 rank, host-staged MPI at 2 ranks on one GPU"
launch() { "$MPIEXEC" -np "$1" ${MPIEXEC_FLAGS[@]+"${MPIEXEC_FLAGS[@]}"} "${@:2}"; }
launch 1 "$BUILD/tests/test_nccl" "[nccl]" 2>&1 | tee "$OUT/nccl_np1.log" || die "NCCL at 1 rank"
# Both ranks on the first GPU: NCCL refuses that, so comm.backend=auto must choose MPI.
first_gpu=${CUDA_VISIBLE_DEVICES:-0}
CUDA_VISIBLE_DEVICES=${first_gpu%%,*} launch 2 "$BUILD/tests/test_nccl" "[mpi],[select]" 2>&1 |
  tee "$OUT/staged_np2.log" || die "MPI path at 2 ranks"
grep -q "mpi (host staging)\|mpi (CUDA-aware)" "$OUT/staged_np2.log" ||
  die "at 2 ranks on one GPU comm.backend=auto should pick the MPI path"

log "3/3 GPT-2 124M benchmark on one GPU"
kind=${FSDP_PEAK_KIND:-fp32}
peak=${FSDP_PEAK_TFLOPS:-}
if [ -z "$peak" ]; then
  # Dense peaks from NVIDIA's data sheets (no sparsity), TFLOP/s: fp32 (CUDA cores) tf32 bf16.
  case $gpu_name in
    *H200* | *H100*SXM* | *H100\ 80GB\ HBM3*) p=(67 495 989) ;;
    *H100*) p=(51 378 756) ;;  # PCIe
    *A100*) p=(19.5 156 312) ;;
    *L40S*) p=(91.6 183 362) ;;
    *) p=() ;;
  esac
  case $kind in fp32) i=0 ;; tf32) i=1 ;; bf16) i=2 ;; *) die "FSDP_PEAK_KIND=$kind: fp32, tf32 or bf16" ;; esac
  if [ ${#p[@]} -eq 3 ]; then peak=${p[$i]}; fi
fi
sets=()
if [ -n "$peak" ]; then
  sets+=(--set "train.peak_tflops=$peak")
else
  log "unknown GPU '$gpu_name': set FSDP_PEAK_TFLOPS; MFU is against the measured GEMM peak"
fi
for kv in ${FSDP_BENCH_SET:-}; do sets+=(--set "$kv"); done
metrics=$OUT/bench_124m.jsonl
rm -f "$metrics"
launch 1 "$BUILD/fsdp-train" --config "$FSDP_ROOT/inputs/bench_124m.toml" \
  ${sets[@]+"${sets[@]}"} --metrics "$metrics" 2>&1 | tee "$OUT/bench_124m.log" ||
  die "fsdp-train benchmark"
python3 - "$metrics" "${peak:-measured}" "$kind" "$gpu_name" <<'EOF' | tee "$OUT/summary.txt"
import json, statistics, sys
path, peak, kind, gpu = sys.argv[1:5]
steps = [r for r in map(json.loads, open(path)) if "tokens_per_s" in r]
timed = steps[1:] or steps  # the first step includes warm-up (allocations, cuBLAS handles)
tok = statistics.median(r["tokens_per_s"] for r in timed)
mfu = statistics.median(r["mfu"] for r in timed)
print(f"GPT-2 124M on 1x {gpu}: median {tok:.0f} tok/s over {len(timed)} steps, "
      f"MFU {100 * mfu:.1f}% of {peak} TFLOP/s ({kind}); llm.c: ~50-60% (bf16, T=1024)")
EOF
log "passed"
