#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Deterministic mode end to end on the default deck (two layers, 12 micro-batches per step): at
# N = 1, 2, 3, 4 and 6 ranks, zero3, zero2, ddp and hybrid (shard groups of 2 and 3) write final
# checkpoints that fsdp-ckpt diff finds identical to the one-rank zero3 run's, with per-step
# losses equal as printed in the metrics; bf16 too; and a run checkpointed at N = 4 and resumed
# at N = 3, or at 3 and resumed at 2, ends on the same bits as the run that never stopped.
source "$(dirname "$0")/lib.sh"
CKPT="$BUILD/fsdp-ckpt"
DECK="--config inputs/default.toml --set train.deterministic=true --set model.n_layer=2
  --set train.batch_size=24 --set train.micro_batch_size=2 --set eval.every=0 --set eval.sequences=0"
run() {  # name ranks steps extra...
  local name=$1 n=$2 steps=$3
  shift 3
  local dir="$WORK/$name"
  mpirun -np "$n" "$TRAIN" $DECK --set train.steps="$steps" --set checkpoint.every="$steps" \
    --set checkpoint.dir="$dir" --metrics "$dir.jsonl" "$@" >"$dir.log" 2>&1 ||
    bad "$name on $n ranks failed: $(grep -v '^\s*$' "$dir.log" | tail -2)"
}
same() {  # reference name, candidate name, step, what
  local out
  out=$("$CKPT" diff "$WORK/$1/step_00000$3.h5" "$WORK/$2/step_00000$3.h5" 2>&1)
  if [ $? -eq 0 ] && echo "$out" | grep -q "max abs diff 0\b" &&
    cmp -s <(grep -o '"loss":[^,]*' "$WORK/$1.jsonl" | tail -n +$(($3 - $(grep -c '"loss"' "$WORK/$2.jsonl") + 1))) \
      <(grep -o '"loss":[^,]*' "$WORK/$2.jsonl"); then
    ok "$4: final checkpoint and losses bit-identical ($(echo "$out" | tail -1))"
  else
    bad "$4 differs"
    echo "$out" | tail -4
  fi
}

run ref 1 4 --set fsdp.strategy=zero3
for n in 2 3 4 6; do run "zero3_np$n" $n 4 --set fsdp.strategy=zero3; same ref "zero3_np$n" 4 "zero3 N=$n vs N=1"; done
for s in zero2 ddp; do
  for n in 3 6; do run "${s}_np$n" $n 4 --set fsdp.strategy=$s; same ref "${s}_np$n" 4 "$s N=$n vs zero3 N=1"; done
done
run hybrid2_np4 4 4 --set fsdp.strategy=hybrid --set fsdp.shard_group_size=2
same ref hybrid2_np4 4 "hybrid, shard groups of 2, N=4 vs zero3 N=1"
run hybrid3_np6 6 4 --set fsdp.strategy=hybrid --set fsdp.shard_group_size=3
same ref hybrid3_np6 4 "hybrid, shard groups of 3, N=6 vs zero3 N=1"
BF="--set fsdp.mixed_precision=bf16 --set fsdp.reduce_dtype=bf16"
run bf_ref 1 4 $BF
run bf_np3 3 4 $BF --set fsdp.strategy=hybrid --set fsdp.shard_group_size=3
same bf_ref bf_np3 4 "bf16 hybrid N=3 vs bf16 zero3 N=1"

# Resume at another rank count: 2 steps at N = 4, then steps 3-4 at N = 3 (and 3 -> 2).
for pair in "4 3" "3 2"; do
  set -- $pair
  run "cut_$1" "$1" 2
  mkdir -p "$WORK/resumed_$1_$2" && cp "$WORK/cut_$1"/step_000002.h5 "$WORK/resumed_$1_$2/"
  mpirun -np "$2" "$TRAIN" $DECK --set train.steps=4 --set checkpoint.every=4 \
    --set checkpoint.dir="$WORK/resumed_$1_$2" --metrics "$WORK/resumed_$1_$2.jsonl" --resume auto \
    >"$WORK/resumed.log" 2>&1 || bad "resuming at N=$2 failed: $(tail -2 "$WORK/resumed.log")"
  same ref "resumed_$1_$2" 4 "checkpoint at N=$1, resumed at N=$2, vs N=1 straight"
done
finish
