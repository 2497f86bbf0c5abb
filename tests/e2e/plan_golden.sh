#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The planner's tables for the shipped decks, recorded before the engine and planner were
# restructured, reproduced byte for byte (tests/golden/plan.txt). One deliberate change since:
# the bf16-reduce ddp (and hybrid) columns time the engine's bf16 all-reduce as the
# reduce-scatter and all-gather it issues, once the timeline read the engine's own log (issue
# 64); every other table is the recording's. FSDP_GOLDEN_WRITE=1 rewrites
# the file, only for a deliberate change of the models, which the commit must say. The decks are
# the ones the golden file records (a deck added later, e.g. qwen3_*, is planned in its own test
# and does not rewrite the recording); FSDP_GOLDEN_WRITE=1 records every deck in inputs/.
source "$(dirname "$0")/lib.sh"
PLAN="$BUILD/fsdp-plan"
GOLDEN="$SRC/tests/golden/plan.txt"
{
  if [ -n "${FSDP_GOLDEN_WRITE:-}" ]; then decks=(inputs/*.toml)
  else mapfile -t decks < <(grep '^== inputs/' "$GOLDEN" | awk '{print $2}' | sort -u); fi
  for deck in "${decks[@]}"; do
    for spec in "1 a100" "8 a100" "16 h100" "64 h200"; do
      set -- $spec
      for mode in "" "--set fsdp.mixed_precision=bf16 --set fsdp.reduce_dtype=bf16" \
        "--set fsdp.unit=sublayer --set model.activation_checkpointing=blocks"; do
        echo "== $deck --ranks $1 --machine $2 $mode"
        # shellcheck disable=SC2086
        "$PLAN" --config "$deck" --ranks "$1" --machine "$2" $mode 2>&1
      done
    done
  done
  echo "== largest model, 8 x a100"
  "$PLAN" --config inputs/gpt2_124m.toml --ranks 8 --largest-model 2>&1
  echo "== published checks"
  "$PLAN" --published-checks 2>&1
} >"$WORK/plan.txt"
if [ -n "${FSDP_GOLDEN_WRITE:-}" ]; then
  cp "$WORK/plan.txt" "$GOLDEN"
  ok "wrote $GOLDEN ($(wc -l <"$GOLDEN") lines)"
elif diff -u "$GOLDEN" "$WORK/plan.txt" >"$WORK/diff"; then
  ok "planner tables for ${#decks[@]} decks x 4 machines x 3 modes match $GOLDEN"
else
  bad "planner tables differ from $GOLDEN:"
  head -40 "$WORK/diff"
fi
finish
