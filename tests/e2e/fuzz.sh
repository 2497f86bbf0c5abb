#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A short fuzz pass: builds the libFuzzer targets (clang++, ASan+UBSan) in a build dir of their
# own, $FSDP_FUZZ_BUILD_DIR or <build>/fuzz, reused when present, then runs each target for
# FUZZ_SECONDS (default 5: the suite's time budget; longer by hand) over a scratch copy of its
# committed seed corpus. Fails on any crash, sanitizer report, leak, timeout or out-of-memory. Skipped (exit 77) without clang++.
# FUZZ_STAGE=build stops after the build (the suite's fuzz_build, on both cores); the fuzzing
# itself is one process, so the suite runs it as a test of one core (fuzz_smoke).
source "$(dirname "$0")/lib.sh"
FB=${FSDP_FUZZ_BUILD_DIR:-$BUILD/fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-5}
CXX_FUZZ=$(command -v clang++ || command -v clang++-14 || true)
CC_FUZZ=$(command -v clang || command -v clang-14 || true)
if [ -z "$CXX_FUZZ" ] || [ -z "$CC_FUZZ" ]; then
  echo "SKIP: no clang++ (scripts/fsdp.sh installs clang-14 and libclang-rt-14-dev)"
  exit 77
fi

t0=$(date +%s)
if [ ! -f "$FB/CMakeCache.txt" ]; then
  cmake -S "$SRC" -B "$FB" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
    -DCMAKE_C_COMPILER="$CC_FUZZ" -DFSDP_BUILD_FUZZERS=ON -DFSDP_BUILD_TESTS=OFF >"$WORK/configure.log" 2>&1 \
    || { bad "configure of $FB: $(tail -5 "$WORK/configure.log")"; finish; exit 1; }
fi
cmake --build "$FB" -j"$(nproc)" --target fuzz_config fuzz_checkpoint fuzz_weights fuzz_chat_template fuzz_tokenizer >"$WORK/build.log" 2>&1 \
  || { bad "build of the fuzz targets: $(grep -m5 -E 'error' "$WORK/build.log")"; finish; exit 1; }
ok "fuzz targets built in $FB ($(($(date +%s) - t0)) s)"
if [ "${FUZZ_STAGE:-}" = build ]; then finish; exit; fi

for target in config checkpoint weights chat_template tokenizer; do
  corpus="$WORK/corpus_$target"
  mkdir -p "$corpus" "$WORK/artifacts_$target"
  # New inputs go to the scratch corpus (the first dir); the committed seeds are only read.
  # A fixed seed (FUZZ_SEED) keeps CI reproducible: a finding recurs until it is fixed, and a
  # fixed one stays fixed; long exploratory runs (docs/reliability.md) use random seeds.
  # stdout is closed (fsdp-ckpt info prints a report per input); the log has the rest.
  "$FB/tests/fuzz/fuzz_$target" -seed="${FUZZ_SEED:-1}" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 \
    -close_fd_mask=1 -print_final_stats=1 -artifact_prefix="$WORK/artifacts_$target/" \
    "$corpus" "$SRC/tests/fuzz/corpus/$target" >"$WORK/fuzz_$target.log" 2>&1
  rc=$?
  stats=$(grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$WORK/fuzz_$target.log" \
          | sed 's/^stat:://' | tr -s ' ' | tr '\n' ' ')
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$WORK/fuzz_$target.log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    ok "fuzz_$target ${SECONDS_EACH}s: $cov, $stats"
  else
    bad "fuzz_$target exit $rc; the input is kept under tests/fuzz/crashes/ of the build:"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz_(config|checkpoint|weights|chat_template|tokenizer):' "$WORK/fuzz_$target.log" | head -10 | sed 's/^/    /'
    mkdir -p "$BUILD/tests/fuzz/crashes" && cp "$WORK/artifacts_$target"/* "$BUILD/tests/fuzz/crashes/" 2>/dev/null
    ls "$BUILD/tests/fuzz/crashes" | sed 's/^/    /'
  fi
done
echo "fuzz pass took $(($(date +%s) - t0)) s"
finish
