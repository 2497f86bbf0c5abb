#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ranks that disagree never hang: a rank that skips a unit's all-gather is caught by the
# collective fingerprints (debug.check_collectives) within seconds, naming both sides; a stalled
# rank is caught by the watchdog (comm.timeout_s), naming the operation and the missing rank.
source "$(dirname "$0")/lib.sh"
S=(--config inputs/default.toml --set train.steps=4 --set eval.every=0)

start=$(date +%s)
FSDP_TEST_SKIP_GATHER=h.1@1 timeout 60 mpirun -np 2 "$TRAIN" "${S[@]}" \
  --set debug.check_collectives=true >"$WORK/out" 2>"$WORK/err"
rc=$? took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 30 ] &&
   grep -q "collective mismatch on communicator 'shard': rank 1 is in all_gather.*h.2.*but rank 0 is in all_gather.*h.1" "$WORK/err"; then
  ok "mismatched collective failed in ${took} s: $(grep -m1 'collective mismatch' "$WORK/err" | cut -c1-200)"
else
  bad "mismatched collective: exit $rc after ${took} s"; sed 's/^/    /' "$WORK/err" | head -20
fi

start=$(date +%s)
FSDP_TEST_STALL=1@2:120 timeout 90 mpirun -np 3 "$TRAIN" "${S[@]}" --set train.batch_size=12 \
  --set train.micro_batch_size=4 --set comm.timeout_s=3 >"$WORK/out" 2>"$WORK/err"
rc=$? took=$(($(date +%s) - start))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -lt 45 ] &&
   grep -q "watchdog on rank [02].*has not completed after .*ranks that have not arrived: 1$" "$WORK/err"; then
  ok "stalled rank caught by the watchdog in ${took} s: $(grep -m1 watchdog "$WORK/err" | cut -c1-200)"
else
  bad "stalled rank: exit $rc after ${took} s"; sed 's/^/    /' "$WORK/err" | head -20
fi

# The same runs without faults pass the checks (no false positives).
mpirun -np 2 "$TRAIN" "${S[@]}" --set debug.check_collectives=true --set comm.timeout_s=30 \
  >"$WORK/out" 2>"$WORK/err" && ok "no false alarm with both checks on" || { bad "false alarm"; tail -5 "$WORK/err"; }
finish
