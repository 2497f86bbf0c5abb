#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Deterministic mode end to end: 5 steps of the default deck (8 micro-batches per step) on 1, 2
# and 4 ranks with zero3, zero2 and ddp write final checkpoints that fsdp-ckpt diff finds
# identical to the last bit, and per-step losses that are equal as printed in the metrics.
source "$(dirname "$0")/lib.sh"
CKPT="$BUILD/fsdp-ckpt"
run() {  # strategy ranks
  local dir="$WORK/$1_np$2"
  mpirun -np "$2" "$TRAIN" --config inputs/default.toml --set train.deterministic=true \
    --set train.steps=5 --set train.batch_size=16 --set train.micro_batch_size=2 \
    --set eval.every=0 --set eval.sequences=0 --set fsdp.strategy="$1" \
    --set checkpoint.every=5 --set checkpoint.dir="$dir" --metrics "$dir.jsonl" \
    >"$dir.log" 2>&1 || { bad "$1 on $2 ranks failed: $(tail -2 "$dir.log")"; return; }
}
for s in zero3 zero2 ddp; do
  for n in 1 2 4; do run "$s" "$n"; done
  for n in 2 4; do
    out=$("$CKPT" diff "$WORK/${s}_np1/step_000005.h5" "$WORK/${s}_np$n/step_000005.h5" 2>&1)
    if [ $? -eq 0 ] && echo "$out" | grep -q "max abs diff 0\b" &&
       cmp -s <(grep -o '"loss":[^,]*' "$WORK/${s}_np1.jsonl") <(grep -o '"loss":[^,]*' "$WORK/${s}_np$n.jsonl"); then
      ok "$s: N=$n final checkpoint and losses bit-identical to N=1 ($(echo "$out" | tail -1))"
    else
      bad "$s: N=$n differs from N=1"; echo "$out" | tail -5
    fi
  done
done
finish
