#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The device check's bundle is self-contained: jobscripts/device_bundle.sh packs the CPU build
# (standing in for the GPU build), and jobscripts/device_check.sh's dry run then trains from it
# in a mount namespace where this machine's Open MPI, PMIx, HDF5, OpenBLAS, Kokkos and the other
# libraries the build links are hidden, as on a GPU node that has none of them. The checks that
# need no GPU must pass: against the CPU reference run packed in the bundle, bf16 against fp32,
# a checkpoint resumed bitwise, and zero3 at 2 ranks through the bundle's own mpirun; then, out
# of the namespace, jobscripts/device_check_cpu.sh must read the checkpoint the check left.
#   tests/e2e/device_bundle.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
BUILD=$1
SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fails=$((fails + 1)); }

if ! unshare -m true 2>/dev/null; then
  echo "skipped: unshare -m is not permitted here (the hidden-library namespace needs it)"
  exit 77
fi

# xz's fastest level: what is checked is what the bundle holds, not how small it packs (the
# default level takes 3x the time here).
if XZ_OPT="-T0 -1" FSDP_DEVICE_BUNDLE_DRY=1 "$SRC/jobscripts/device_bundle.sh" "$BUILD" "$BUILD" "$WORK/b.tar.xz" >"$WORK/bundle.log" 2>&1; then
  ok "$(tail -1 "$WORK/bundle.log")"
else
  bad "device_bundle.sh failed:"
  tail -5 "$WORK/bundle.log"
  exit 1
fi

# Everything the builds load from the system, bar the C library: what a bare node lacks.
hide_libs() {
  local dir=/usr/lib/x86_64-linux-gnu
  for d in $dir/openmpi $dir/pmix2 $dir/openblas-pthread /usr/share/openmpi /etc/openmpi; do
    [ -d "$d" ] && mount -t tmpfs none "$d"
  done
  for f in $dir/lib{mpi,open-rte,open-pal,hdf5_openmpi,pmix,hwloc,kokkos,trilinos_kokkos,tomlplusplus,xxhash,openblas,blas,lapack,gfortran,sz,curl}*.so* \
    /usr/bin/mpirun /usr/bin/orterun /usr/bin/orted; do
    [ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
  done
  return 0
}
export -f hide_libs

unshare -m bash -c '
  set -e
  hide_libs
  # The namespace really lacks them: the system build can no longer start.
  if "$0"/fsdp-train --help >/dev/null 2>&1; then echo "the libraries were not hidden"; exit 3; fi
  cd "$1" && OUT="$2/out" FSDP_DEVICE_CHECK_DRY=1 bash jobscripts/device_check.sh "$2/b.tar.xz"
' "$BUILD" "$SRC" "$WORK" >"$WORK/check.log" 2>&1
rc=$?
sed 's/^/    /' "$WORK/out/summary.txt" 2>/dev/null || tail -20 "$WORK/check.log"
[ $rc = 3 ] && bad "hiding the system libraries did not stop the system build"
[ $rc = 0 ] && ok "the dry device check passed from the bundle alone" || bad "the dry device check failed (exit $rc)"
tar -tJf "$WORK/b.tar.xz" | grep -q '^fsdp-device/cpu/' && bad "the bundle carries a CPU build"
for want in "PASS 2 " "PASS 3 " "PASS 4a " "NOT RUN 4b " "PASS 5 " "NOT RUN 1 " "NOT RUN 6 " "PASS 7a " "NOT RUN 7b "; do
  grep -q "device_check: $want" "$WORK/out/summary.txt" 2>/dev/null || bad "summary has no '$want' line"
done
# Check 4b's CPU half, on the checkpoint the check left.
if "$SRC/jobscripts/device_check_cpu.sh" "$WORK/out" "$BUILD" >"$WORK/cpu.log" 2>&1; then
  ok "$(tail -1 "$WORK/cpu.log")"
else
  bad "jobscripts/device_check_cpu.sh: $(tail -1 "$WORK/cpu.log")"
fi
# What comes back from a device run: at most 8 files of at most 16 MiB; the logs travel as one
# archive.
ck_mib=$(( $(stat -c %s "$WORK/out/gpu_step25.h5" 2>/dev/null || echo 0) / 1048576 ))
[ "$ck_mib" -lt 16 ] || bad "the GPU checkpoint the check leaves is $ck_mib MiB, over the 16 MiB a file may come back with"
files=$(find "$WORK/out" -type f | wc -l)
if [ -f "$WORK/out/logs.tar.gz" ] && [ "$files" -le 8 ]; then
  ok "the check leaves $files files (summary, logs archive, the GPU checkpoint)"
else
  bad "the check leaves $files files in its output folder, or no logs.tar.gz"
fi
[ $fails = 0 ] && echo "all device bundle checks passed" || echo "$fails device bundle check(s) failed"
[ $fails = 0 ]
