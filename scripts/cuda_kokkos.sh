#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A CUDA Kokkos for the GPU build, made once per machine outside the clone (no GPU needed):
# Kokkos 4.6.01 with the CUDA backend for sm_90 (H100/H200), extended (CUDA) lambdas, Serial and
# OpenMP host backends, C++17, installed with its nvcc_wrapper. Reused while the recipe below is
# unchanged (the hash of its code is stamped into the install); the compile check
# (tests/gpu_build.sh) and docs/gpu.md's GPU build use it.
#   scripts/cuda_kokkos.sh          build and install it if missing or stale; print its prefix
#   scripts/cuda_kokkos.sh --check  print its prefix if it is installed and current, else exit 1
# Environment: FSDP_CUDA_KOKKOS the prefix (default ~/.cache/fsdp/kokkos-cuda-4.6.01);
# FSDP_KOKKOS_GIT a git directory of github.com/kokkos/kokkos holding the 4.6.01 tag (default: the
# fetched snapshot /work/.mirror/kokkos+kokkos/repo, else a shallow clone from GitHub);
# CUDA_HOME (default /usr/local/cuda); FSDP_JOBS (default 2). Exit 1 when it cannot be built,
# with the log's path.
#
# Kokkos 4.6.01 predates CUDA 13, which changed three runtime calls and dropped sm_70; 4.7.01
# has the changes, but the snapshot here stops at 4.6.01. So the source is patched in the
# scratch copy (never committed): see patch_for_cuda13.
set -euo pipefail
VERSION=4.6.01
ARCH=HOPPER90 # Kokkos_ARCH_<ARCH>; nvcc_wrapper's default below matches it
PREFIX=${FSDP_CUDA_KOKKOS:-${HOME:-/root}/.cache/fsdp/kokkos-cuda-$VERSION}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
STAMP="$PREFIX/.fsdp-recipe.sha256"
# The recipe is this file's code: editing the patches or options rebuilds, editing comments not.
want=$(grep -v '^[[:space:]]*#' "$0" | sha256sum | cut -d' ' -f1)

current() { [ -x "$PREFIX/bin/nvcc_wrapper" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; }

if [ "${1:-}" = --check ]; then
  current && { echo "$PREFIX"; exit 0; }
  exit 1
fi
current && { echo "$PREFIX"; exit 0; }

die() { echo "cuda_kokkos: $*" >&2; exit 1; }
[ -x "$CUDA_HOME/bin/nvcc" ] || die "no CUDA toolkit: $CUDA_HOME/bin/nvcc is missing (set CUDA_HOME)"
export PATH="$CUDA_HOME/bin:$PATH" # nvcc_wrapper calls nvcc from PATH

# sed that must change something: a Kokkos whose text moved fails here, not at compile time.
must_sed() {
  local file=$1 expr=$2 check=$3
  sed -i -e "$expr" "$file"
  grep -q -- "$check" "$file" || die "patch '$expr' did not apply to $file"
}

# The CUDA-13 runtime API (as Kokkos 4.7.01 adapts to it):
# - cudaGraphAddDependencies gained an edge-data argument (null: plain dependencies);
# - cudaMemAdvise and cudaMemPrefetchAsync take a cudaMemLocation instead of a device number
#   (cudaCpuDeviceId, -1, becomes the host location), and the prefetch a flags argument;
# - sm_70 is gone, and nvcc_wrapper's default -arch=sm_70 fails Kokkos' compiler check.
patch_for_cuda13() {
  local src=$1 inst=$1/core/src/Cuda/Kokkos_Cuda_Instance.hpp space=$1/core/src/Cuda/Kokkos_CudaSpace.cpp
  must_sed "$inst" 's/return cudaGraphAddDependencies(graph, from, to, numDependencies);/return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);/' \
    'cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies)'
  must_sed "$inst" 's/return cudaMemAdvise(devPtr, count, advice, device);/cudaMemLocation loc{}; loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice; loc.id = device == cudaCpuDeviceId ? 0 : device; return cudaMemAdvise(devPtr, count, advice, loc);/' \
    'return cudaMemAdvise(devPtr, count, advice, loc);'
  must_sed "$inst" 's/return cudaMemPrefetchAsync(devPtr, count, dstDevice,/cudaMemLocation loc{}; loc.type = dstDevice == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice; loc.id = dstDevice == cudaCpuDeviceId ? 0 : dstDevice; return cudaMemPrefetchAsync(devPtr, count, loc, 0,/' \
    'return cudaMemPrefetchAsync(devPtr, count, loc, 0,'
  # Only under KOKKOS_IMPL_DEBUG_CUDA_PIN_UVM_TO_HOST, patched so that the debug path compiles too.
  must_sed "$space" 's/cudaMemAdvise(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation,$/cudaMemAdvise(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation, cudaMemLocation{cudaMemLocationTypeHost, 0}));/' \
    'cudaMemLocation{cudaMemLocationTypeHost, 0}));'
  # The line after the patched one held the old last argument.
  sed -i -e '/cudaMemLocation{cudaMemLocationTypeHost, 0}));/{n;/^ *cudaCpuDeviceId));$/d}' "$space"
  ! grep -q '^ *cudaCpuDeviceId));$' "$space" || die "patch of cudaMemAdvise in $space left its old argument"
  must_sed "$src/bin/nvcc_wrapper" 's/^default_arch="sm_70"/default_arch="sm_90"/' '^default_arch="sm_90"'
}

GIT=${FSDP_KOKKOS_GIT:-/work/.mirror/kokkos+kokkos/repo}
mkdir -p "$(dirname "$PREFIX")"
work=$(mktemp -d "$(dirname "$PREFIX")/kokkos-build.XXXXXX")
log="$PREFIX.log"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
: >"$log"
echo "cuda_kokkos: building Kokkos $VERSION (CUDA $ARCH, Serial, OpenMP) into $PREFIX (log: $log)" >&2
if [ -d "$GIT" ] && git --git-dir="$GIT" rev-parse -q --verify "refs/tags/$VERSION" >/dev/null; then
  git --git-dir="$GIT" archive "$VERSION" | tar -x -C "$work" || die "cannot export tag $VERSION from $GIT"
  mkdir -p "$work/src" && (cd "$work" && find . -mindepth 1 -maxdepth 1 ! -name src -exec mv {} src/ \;)
else
  git clone -q --depth 1 --branch "$VERSION" https://github.com/kokkos/kokkos "$work/src" >"$log" 2>&1 ||
    die "no Kokkos source: $GIT has no tag $VERSION and GitHub cannot be reached (set FSDP_KOKKOS_GIT)"
fi
patch_for_cuda13 "$work/src"

rm -f "$STAMP"
if ! {
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DCMAKE_CXX_COMPILER="$work/src/bin/nvcc_wrapper" -DCMAKE_CXX_STANDARD=17 \
    -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_$ARCH=ON \
    -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON \
    -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF &&
    cmake --build "$work/build" -j"${FSDP_JOBS:-2}" &&
    rm -rf "$PREFIX" && cmake --install "$work/build"
} >>"$log" 2>&1; then
  die "Kokkos did not build: $(grep -m1 -i 'error' "$log" || tail -1 "$log") (full log: $log)"
fi
echo "$want" >"$STAMP"
echo "cuda_kokkos: Kokkos $VERSION with CUDA installed in $(($(date +%s) - start)) s" >&2
echo "$PREFIX"
