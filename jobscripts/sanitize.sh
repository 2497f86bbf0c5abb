#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole project under AddressSanitizer + UndefinedBehaviorSanitizer (gcc), in a build dir of
# its own, then the unit tests, every MPI test at 2 ranks and the end-to-end tests through CTest.
# Any sanitizer report fails its test; the reports are also collected in <build>/sanitizer-logs
# and listed at the end. Leak checking stays on for our code; Open MPI's, HDF5's, OpenBLAS' and
# Kokkos' own leaks are suppressed (jobscripts/lsan.supp).
#
#   jobscripts/sanitize.sh [BUILD_DIR]       (default: build-asan beside the sources)
# Environment (optional): JOBS (build and ctest parallelism, default nproc), TESTS (ctest -R
#   regex for the MPI and end-to-end part, default "_np2$|^e2e_"), SKIP_BUILD=1 (test only),
#   FSDP_SHARED_ARENA (default 0: tracked buffers come from malloc, whose overflows ASan sees;
#   buffers carved from the shared arena have no red zones. 1 sanitizes the arena's paths).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$ROOT/build-asan}
JOBS=${JOBS:-$(nproc)}
TESTS=${TESTS:-'_np2$|^e2e_'}
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  t0=$(date +%s)
  cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -g" -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_C_FLAGS="$SAN" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null || exit 1
  cmake --build "$B" -j"$JOBS" || exit 1
  echo "sanitize: built $B in $(($(date +%s) - t0)) s"
fi

LOGS=$B/sanitizer-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
# fast_unwind_on_malloc=0: MPI and HDF5 have no frame pointers; full stacks let the suppressions
# match. Open MPI keeps its components loaded, so their frames keep their names at exit.
# intercept_tls_get_addr=0: gcc <= 13's runtime misreads glibc >= 2.25 dynamic TLS blocks and
# LeakSanitizer's tracer then dies at exit ("Tracer caught signal 11"), failing the process.
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
ASAN_OPTIONS+=":halt_on_error=1:log_path=$LOGS/asan"
export LSAN_OPTIONS="suppressions=$ROOT/jobscripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
export OMPI_MCA_mca_base_component_disable_dlclose=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export FSDP_SHARED_ARENA=${FSDP_SHARED_ARENA:-0}

t0=$(date +%s)
ctest --test-dir "$B" -L unit -j"$JOBS" --output-on-failure 2>&1 | tee "$B/sanitize-unit.log" | tail -3
rc_unit=${PIPESTATUS[0]}
ctest --test-dir "$B" -R "$TESTS" -LE "slurm|gpu|fuzz" -j"$JOBS" --output-on-failure 2>&1 \
  | tee "$B/sanitize-mpi-e2e.log" | grep -E "Test +#|tests passed|tests failed|Total Test time|\(Failed\)|\(Timeout\)"
rc_rest=${PIPESTATUS[0]}
echo "sanitize: tests took $(($(date +%s) - t0)) s"

reports=$(ls "$LOGS" | wc -l)
echo "sanitize: $reports sanitizer report file(s) in $LOGS"
for f in "$LOGS"/*; do
  [ -e "$f" ] || continue
  echo "  $(basename "$f"): $(grep -m1 -E 'SUMMARY|runtime error' "$f")"
done
[ "$rc_unit" -eq 0 ] && [ "$rc_rest" -eq 0 ] && [ "$reports" -eq 0 ]
