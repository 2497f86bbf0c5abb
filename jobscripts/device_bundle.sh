#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs a GPU build of fsdp, with every shared library it needs that a bare GPU node lacks and
# the Open MPI runtime, into one self-contained archive for jobscripts/device_check.sh: a node
# with the CUDA driver, the toolkit and PyTorch, and no MPI, HDF5 or BLAS. The CUDA libraries
# themselves (cudart, cuBLAS, NCCL) are not packed: the node's toolkit or PyTorch's wheels have
# them, and device_check.sh finds them there.
# The CPU build is not packed (it would bring oneDNN and OpenBLAS, 77 MB of the 175 unpacked, and
# it only runs fp32 there): its side of the checks runs here. Its 50-step fp32 run of the
# default deck (check 2's reference) is made now and packed as ref/cpu_fp32.jsonl; the GPU's
# checkpoint comes back from the node and jobscripts/device_check_cpu.sh reads it (check 4b).
#
#   jobscripts/device_bundle.sh GPU_BUILD CPU_BUILD [ARCHIVE]
#     GPU_BUILD  a build folder configured with -DFSDP_ENABLE_CUDA=ON (docs/gpu.md)
#     CPU_BUILD  the plain build folder (scripts/fsdp.sh build makes ./build): runs check 2's
#                reference here
#     ARCHIVE    default .device-bundle/fsdp-device.tar.xz (git-ignored; the device tool
#                carries it with carry=[".device-bundle"])
#
# Binaries built from Kokkos are packed, never committed. Fails if the archive is over 60 MiB.
# FSDP_DEVICE_BUNDLE_DRY=1 accepts a CPU build as GPU_BUILD (no GPU tests are packed): the
# bundle that tests/e2e/device_bundle.sh runs through device_check.sh's dry run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "device_bundle: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: jobscripts/device_bundle.sh GPU_BUILD CPU_BUILD [ARCHIVE]"
GPU=$(cd "$1" && pwd) || die "no GPU build folder $1"
CPU=$(cd "$2" && pwd) || die "no CPU build folder $2"
ARCHIVE=${3:-$ROOT/.device-bundle/fsdp-device.tar.xz}
LIMIT_MIB=60
export XZ_OPT=${XZ_OPT:--T0}  # all cores: the archive is written on every test run

DRY=${FSDP_DEVICE_BUNDLE_DRY:-0}
GPU_TESTS=("$GPU/tests/test_nccl" "$GPU/tests/test_device_select")
if [ "$DRY" = 1 ]; then
  GPU_TESTS=()
else
  grep -q '^FSDP_ENABLE_CUDA:BOOL=ON' "$GPU/CMakeCache.txt" 2>/dev/null ||
    die "$GPU is not a GPU build (its CMakeCache.txt has no FSDP_ENABLE_CUDA=ON)"
fi
for exe in "$GPU/fsdp-train" "$GPU/fsdp-ckpt" "$GPU/fsdp-bench" ${GPU_TESTS[@]+"${GPU_TESTS[@]}"} "$CPU/fsdp-train"; do
  [ -x "$exe" ] || die "missing $exe: build it first (make fsdp-train fsdp-ckpt fsdp-bench test_nccl test_device_select)"
done

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/fsdp-device
mkdir -p "$B/gpu" "$B/ref" "$B/lib" "$B/mpi/bin" "$B/mpi/lib" "$B/mpi/share" "$B/mpi/etc"
cp "$GPU/fsdp-train" "$GPU/fsdp-ckpt" "$GPU/fsdp-bench" ${GPU_TESTS[@]+"${GPU_TESTS[@]}"} "$B/gpu/"

# Check 2's reference: the CPU build's run, with device_check.sh's arguments (S50 there).
if ! OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$CPU/fsdp-train" --config "$ROOT/inputs/default.toml" \
  --set train.steps=50 --set eval.every=0 --metrics "$B/ref/cpu_fp32.jsonl" >"$STAGE/cpu_fp32.log" 2>&1; then
  tail -5 "$STAGE/cpu_fp32.log" >&2
  die "the CPU build's reference run failed ($CPU/fsdp-train)"
fi

# The Open MPI runtime as Debian lays it out, under one prefix that device_check.sh names with
# OPAL_PREFIX and friends: the launcher, its plugins (MCA components, PMIx's too), help texts.
ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
MPI_PKGLIBDIR=$(ompi_path pkglibdir)
MPI_PKGDATADIR=$(ompi_path pkgdatadir)
MPI_SYSCONFDIR=$(ompi_path sysconfdir)
[ -d "$MPI_PKGLIBDIR" ] || die "cannot find Open MPI's components (ompi_info --path pkglibdir)"
cp -L "$(readlink -f "$(command -v mpirun)")" "$B/mpi/bin/mpirun"
cp -L "$(command -v orted)" "$B/mpi/bin/orted"
cp -r "$MPI_PKGLIBDIR" "$B/mpi/lib/openmpi3"
cp -r "$MPI_PKGDATADIR" "$B/mpi/share/openmpi"
cp -r "$MPI_SYSCONFDIR/." "$B/mpi/etc/"
PMIX_PLUGINS=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libpmix.so.2 /{print $NF; exit}')")")/pmix
[ -d "$PMIX_PLUGINS" ] && cp -r "$PMIX_PLUGINS" "$B/mpi/lib/pmix"

# What the node provides: its C library (a newer glibc runs these binaries), the driver, and
# CUDA's own libraries. Everything else every binary and plugin loads is packed.
node_lib() {
  case "$1" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libutil.so.*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so.*|libnvidia-*) return 0 ;;
    libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) echo "$1" >>"$B/lib/FROM_NODE"; return 0 ;;
  esac
  return 1
}
: >"$B/lib/FROM_NODE"
while read -r name path; do
  node_lib "$name" && continue
  [ -n "$path" ] && [ -f "$path" ] || die "cannot find $name, which the builds need"
  [ -f "$B/lib/$name" ] || cp -L "$path" "$B/lib/$name"
done < <(find "$B/gpu" "$B/mpi" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
  xargs -0 ldd 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $1, $3} /=> not found/ {print $1, ""}' | sort -u)
sort -u -o "$B/lib/FROM_NODE" "$B/lib/FROM_NODE"
find "$B" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-unneeded {} + 2>/dev/null || true

{
  echo "fsdp device bundle, made $(date -u +%FT%TZ) on $(hostname) from $(git -C "$ROOT" rev-parse --short HEAD)"
  echo "gpu: $GPU"
  echo "cpu: $CPU (check 2's reference run: ref/cpu_fp32.jsonl)"
  echo "expected on the node: $(tr '\n' ' ' <"$B/lib/FROM_NODE")"
} >"$B/MANIFEST"

mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$STAGE" -cJf "$ARCHIVE" fsdp-device
packed=$(du -sm "$B" | cut -f1)
size=$(( $(stat -c %s "$ARCHIVE") / 1048576 ))
echo "device_bundle: $ARCHIVE: ${size} MiB packed, ${packed} MiB unpacked; the node must have: $(tr '\n' ' ' <"$B/lib/FROM_NODE")"
[ "$size" -lt "$LIMIT_MIB" ] || die "$ARCHIVE is ${size} MiB, over the ${LIMIT_MIB} MiB a device run may carry"
