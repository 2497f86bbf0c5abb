#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# train.optimizer = muon against float64 PyTorch (tests/reference/muon_check.py): a numpy-written
# Llama trained at np 3 (zero3) on one training window, every hidden matrix moved by
# -lr 0.2 sqrt(max(out, in)) NS5(g) of the float64 gradient on the first step and by the
# reference's own momentum recurrence over three, the other tensors by AdamW, each update within
# 1e-3; the same three steps at np 1 and np 4 (hybrid 2 x 2) in deterministic mode give np 3's
# bits; fsdp-ckpt reads the Muon checkpoint's datasets back.
source "$(dirname "$0")/lib.sh"
ref_python torch transformers
PY=/usr/bin/python3
: >"$WORK/empty.toml"
$PY "$SRC/tests/reference/llama_check.py" random-model "$WORK/rnd" || bad "random-model"
# One window of T + 1 = 65 bytes: every sampled sequence is this one.
$PY -c "import random; random.seed(3); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64)))" >"$WORK/one.txt"
run() {  # run NP STEPS DIR [--set ...]: train from the numpy model, checkpoint at the last step
  local np=$1 steps=$2 dir=$3
  shift 3
  mpirun -np "$np" "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" \
    --set "data.train=$WORK/one.txt" --set "data.val=$WORK/one.txt" --set eval.sequences=0 \
    --set train.optimizer=muon --set train.steps="$steps" --set train.batch_size=12 \
    --set train.micro_batch_size=1 --set train.lr=0.01 --set train.min_lr=0.01 \
    --set train.warmup_steps=0 --set train.grad_clip=0 --set train.weight_decay=0.1 \
    --set train.peak_tflops=1 --set checkpoint.every="$steps" --set "checkpoint.dir=$dir" "$@" \
    >"$WORK/train.log" 2>&1 || { bad "training at np $np: $(tail -3 "$WORK/train.log")"; return 1; }
}
for K in 1 3; do
  run 3 $K "$WORK/ck$K" || continue
  f="$WORK/ck$K/step_00000$K.h5"
  mpirun -np 1 "$BUILD/fsdp-ckpt" export "$f" --hf "$WORK/hf$K" >"$WORK/out" 2>&1 ||
    { bad "export: $(tail -2 "$WORK/out")"; continue; }
  if "$REFPY" "$SRC/tests/reference/muon_check.py" compare "$WORK/rnd/hf" "$WORK/hf$K" "$WORK/one.txt" \
      $K 0.01 0.1 0.95 >"$WORK/cmp" 2>&1; then
    ok "$K Muon step(s) at np 3 against float64 PyTorch: $(tr '\n' ';' <"$WORK/cmp")"
  else
    bad "$K Muon step(s) at np 3 against float64 PyTorch: $(tr '\n' ';' <"$WORK/cmp")"
  fi
done
# The checkpoint holds the matrices' momentum under its own name and AdamW's moments for the rest.
if mpirun -np 1 "$BUILD/fsdp-ckpt" info "$WORK/ck3/step_000003.h5" >"$WORK/info" 2>&1 &&
   grep -q "^optimizer *muon" "$WORK/info" && grep -q "^/optim/momentum *14 datasets" "$WORK/info" &&
   mpirun -np 2 "$BUILD/fsdp-ckpt" verify "$WORK/ck3/step_000003.h5" >"$WORK/out" 2>&1; then
  ok "fsdp-ckpt info and verify: $(grep -E '^(optimizer|/optim)' "$WORK/info" | tr -s ' ' | tr '\n' ';')"
else
  bad "fsdp-ckpt info/verify of a Muon checkpoint: $(cat "$WORK/info" "$WORK/out" | tail -8)"
fi
# AdamW may not continue Muon's state (exit 5, naming both); its weights alone start a run.
expect_fail "AdamW resuming a Muon checkpoint" 5 "holds train.optimizer = muon state, but this run's is adamw" \
  mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" \
  --resume "$WORK/ck3/step_000003.h5" --set "data.train=$WORK/one.txt" \
  --set "data.val=$WORK/one.txt" --set eval.sequences=0 --set train.steps=4 --set train.batch_size=2 \
  --set train.micro_batch_size=1
# Deterministic mode: np 1 and np 4 (hybrid, 2 x 2) train np 3's bits.
for spec in "3 zero3 0" "1 zero3 0" "4 hybrid 2"; do
  set -- $spec
  run "$1" 3 "$WORK/det$1" --set train.deterministic=true --set fsdp.strategy="$2" \
    --set fsdp.shard_group_size="$3" || continue
done
if [ -f "$WORK/det1/step_000003.h5" ] && [ -f "$WORK/det4/step_000003.h5" ] &&
   mpirun -np 1 "$BUILD/fsdp-ckpt" diff "$WORK/det3/step_000003.h5" "$WORK/det1/step_000003.h5" >"$WORK/d1" 2>&1 &&
   mpirun -np 1 "$BUILD/fsdp-ckpt" diff "$WORK/det3/step_000003.h5" "$WORK/det4/step_000003.h5" >"$WORK/d4" 2>&1; then
  ok "deterministic Muon: np 3 zero3, np 1 and np 4 hybrid 2 x 2 write the same parameters and state: $(tail -1 "$WORK/d4")"
else
  bad "deterministic Muon across np 1/3/4: $(cat "$WORK/d1" "$WORK/d4" 2>/dev/null | tail -6)"
fi
finish
