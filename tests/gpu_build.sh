#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU build compiles: the whole project (library, apps, tests) against the CUDA Kokkos of
# scripts/cuda_kokkos.sh, with -DFSDP_ENABLE_CUDA=ON and nvcc_wrapper, with 0 errors and 0
# warnings. nvcc refuses things g++ accepts (docs/gpu.md), so only this sees them; no GPU needed.
#   tests/gpu_build.sh SOURCE_DIR [CPU_BUILD_DIR]
# Incremental across clones: the sources are mirrored into a persistent folder outside the clone
# ($FSDP_GPU_BUILD_DIR, default ~/.cache/fsdp/gpu-build), copying only files whose bytes differ,
# so an unchanged file keeps its old time stamp and make rebuilds only what a change touches.
# Warnings are errors there (nvcc's -Werror all-warnings and the host compiler's -Werror): a
# file with a warning leaves no object, so it is compiled, and fails, again at every run.
# SKIPPED (exit 0) where no CUDA toolkit or no CUDA Kokkos is installed. The first run after
# installing (or changing) the Kokkos builds everything: about 22 min on 2 idle cores.
# FSDP_GPU_BUILD_JOBS: parallel compiles (default 2).
set -uo pipefail
SRC=$(cd "${1:?usage: tests/gpu_build.sh SOURCE_DIR}" && pwd)
DIR=${FSDP_GPU_BUILD_DIR:-${HOME:-/root}/.cache/fsdp/gpu-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

[ -x "$CUDA_HOME/bin/nvcc" ] || { echo "SKIPPED: no CUDA toolkit ($CUDA_HOME/bin/nvcc)"; exit 0; }
KOKKOS=$("$SRC/scripts/cuda_kokkos.sh" --check) || {
  echo "SKIPPED: no CUDA Kokkos installed (scripts/cuda_kokkos.sh builds one, ~2 min on 2 idle cores)"
  exit 0
}
export PATH="$CUDA_HOME/bin:$PATH"
mkdir -p "$DIR"
# One build at a time per folder: two clones' suites on one machine take turns.
exec 9>"$DIR/.lock"
flock 9

# The mirror: the clone's files (git's list when it is a git work tree: tracked and untracked
# but not ignored; else everything outside build folders), copied where the bytes differ (an
# unchanged file keeps its time stamp); files gone from the clone are removed. One python3
# process: a shell loop forks twice per file, ten times slower here.
mirror() {
  local from=$1 to=$2
  {
    if git -C "$from" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git -C "$from" ls-files -co --exclude-standard -z
    else
      (cd "$from" && find . -type f ! -path './.git/*' ! -path './build*' ! -path './.device-bundle/*' -printf '%P\0')
    fi
  } | python3 -c '
import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
names = {n for n in sys.stdin.buffer.read().decode().split("\0") if n and os.path.isfile(os.path.join(src, n))}
copied = removed = 0
for n in sorted(names):
    a, b = os.path.join(src, n), os.path.join(dst, n)
    with open(a, "rb") as f:
        data = f.read()
    try:
        with open(b, "rb") as f:
            if f.read() == data:
                continue
    except OSError:
        pass
    os.makedirs(os.path.dirname(b), exist_ok=True)
    with open(b, "wb") as f:
        f.write(data)
    shutil.copymode(a, b)
    copied += 1
for base, _, files in os.walk(dst):
    for f in files:
        n = os.path.relpath(os.path.join(base, f), dst)
        if n not in names:
            os.remove(os.path.join(dst, n))
            removed += 1
print(f"gpu_build: mirrored {src} into {dst}: {copied} file(s) copied, {removed} removed")
' "$from" "$to"
}

start=$(date +%s)
mirror "$SRC" "$DIR/src"
B=$DIR/build
# A build made against another Kokkos (or another recipe of it) starts afresh.
stamp="$KOKKOS $(cat "$KOKKOS/.fsdp-recipe.sha256")"
if [ ! -f "$B/CMakeCache.txt" ] || [ "$(cat "$B/.fsdp-kokkos" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$B"
  if ! cmake -S "$DIR/src" -B "$B" -DCMAKE_BUILD_TYPE=Release -DFSDP_ENABLE_CUDA=ON \
    -DKokkos_ROOT="$KOKKOS" -DCMAKE_CXX_COMPILER="$KOKKOS/bin/nvcc_wrapper" \
    -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CXX_FLAGS=-Werror=all-warnings -Xcompiler -Werror" \
    >"$DIR/configure.log" 2>&1; then
    echo "FAILED: the GPU build does not configure ($DIR/configure.log):"
    grep -A5 -m3 'CMake Error' "$DIR/configure.log" || tail -20 "$DIR/configure.log"
    exit 1
  fi
  echo "$stamp" >"$B/.fsdp-kokkos"
fi

log=$DIR/build.log
# -k: every broken file in one run, not only the first.
cmake --build "$B" -j"${FSDP_GPU_BUILD_JOBS:-2}" -- -k >"$log" 2>&1
rc=$?
# Catch's test discovery runs the unit tests after linking; without the CUDA driver it prints
# "libcuda.so.1: cannot open shared object file" (harmless, the build goes on).
diags=$(grep -iE '(^|[^a-z_])(error|warning)([^a-z_]|$)' "$log" | grep -vE '^\[ *[0-9]+%\]' |
  grep -vE 'libcuda\.so\.1|^Remark: The warnings can be suppressed')
errors=$(grep -ciE 'error' <<<"$diags")
warnings=$(grep -ciE 'warning' <<<"$diags")
[ -n "$diags" ] || { errors=0; warnings=0; }
echo "gpu_build: cmake --build exit $rc, $errors error line(s), $warnings warning line(s), $(($(date +%s) - start)) s (log: $log)"
if [ $rc != 0 ] || [ -n "$diags" ]; then
  head -40 <<<"$diags"
  echo "FAILED: the GPU build has errors or warnings (warnings are errors here; docs/gpu.md);" \
    "what depends on a failed target (the apps and tests on the library) was not compiled"
  exit 1
fi
echo "gpu_build: the GPU build compiles and links with 0 errors and 0 warnings"

# The GPU build's planner runs where there is no device (a login node): fsdp-plan builds the
# engine on a counting tracker and runs its steps without a kernel, a fence or an execution-space
# instance (plan/counted_step.hpp). Here there is no driver either: the toolkit's stub libcuda
# stands in for it (every CUDA call fails, so any device use aborts), and its tables must be the
# CPU build's, byte for byte ($2: the CPU build folder, when given).
stub=$CUDA_HOME/lib64/stubs/libcuda.so
if [ ! -f "$stub" ]; then
  echo "gpu_build: no stub libcuda ($stub): the GPU build's planner is not run"
  exit 0
fi
mkdir -p "$DIR/stub" && ln -sf "$stub" "$DIR/stub/libcuda.so.1"
# Two decks: a dense one in bf16 with offload, and a mixture of experts with expert parallelism,
# NVMe offload and Muon (every strategy each).
plans=("--config $SRC/inputs/gpt2_124m.toml --ranks 8 --machine h100 --set fsdp.mixed_precision=bf16 --set fsdp.offload=optimizer --set model.attention=fused"
  "--config $SRC/inputs/qwen3_moe_tiny.toml --ranks 8 --machine h100 --set fsdp.expert_parallel=2 --set fsdp.offload=nvme --set offload.path=/tmp --set train.optimizer=muon --set train.batch_size=64 --set model.attention=fused")
for args in "${plans[@]}"; do
  # shellcheck disable=SC2086
  if ! gpu_plan=$(cd "$SRC" && LD_LIBRARY_PATH="$DIR/stub" timeout 120 "$B/fsdp-plan" $args 2>&1); then
    echo "FAILED: the GPU build's fsdp-plan does not run without a device (fsdp-plan $args):"
    tail -5 <<<"$gpu_plan"
    exit 1
  fi
  [ -n "${2:-}" ] && [ -x "$2/fsdp-plan" ] || continue
  # shellcheck disable=SC2086
  cpu_plan=$(cd "$SRC" && "$2/fsdp-plan" $args 2>&1)
  if [ "$gpu_plan" != "$cpu_plan" ]; then
    echo "FAILED: the GPU build's fsdp-plan differs from the CPU build's (fsdp-plan $args):"
    diff <(echo "$cpu_plan") <(echo "$gpu_plan") | head -20
    exit 1
  fi
done
if [ -n "${2:-}" ] && [ -x "$2/fsdp-plan" ]; then
  echo "gpu_build: the GPU build's fsdp-plan runs without a device and prints the CPU build's tables"
else
  echo "gpu_build: the GPU build's fsdp-plan runs without a device"
fi
