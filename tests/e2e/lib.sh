# SPDX-License-Identifier: MIT
# Shared helpers for the end-to-end tests: $1 = build dir, $2 = source dir.
set -uo pipefail
BUILD=$1
SRC=$2
TRAIN="$BUILD/fsdp-train"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1
cd "$SRC"
FAILS=0
PASSES=0

ok() { PASSES=$((PASSES + 1)); echo "ok: $*"; }
bad() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }

# expect_fail NAME EXIT_CODE PATTERN CMD...: the command exits with EXIT_CODE within 60 s and
# its stderr has PATTERN on exactly one line.
expect_fail() {
  local name=$1 want=$2 pattern=$3
  shift 3
  timeout 60 "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  local lines
  lines=$(grep -c -E -- "$pattern" "$WORK/err")
  if [ "$rc" -eq "$want" ] && [ "$lines" -ge 1 ]; then
    ok "$name (exit $rc): $(grep -m1 -E -- "$pattern" "$WORK/err")"
  else
    bad "$name: exit $rc (wanted $want), stderr:"
    sed 's/^/    /' "$WORK/err" | head -20
  fi
}

finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}
