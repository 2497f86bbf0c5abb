#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LoRA (lora.enabled, docs/lora.md) on a frozen base, through fsdp-train: the adapters train
# under zero3, hybrid and ddp at np 1-3 (the losses of one run at another N within the spread
# non-deterministic sums give: fp32 sums in another order), the base's tensors come out of a
# run bit for bit as they went in (a checkpoint at step 0 and at step 6, compared tensor by
# tensor), the frozen base has no gradient or optimizer state (the tracker's bytes against the
# full fine-tuning run's, and the checkpoint's datasets), a checkpoint resumes at another N, and
# deterministic mode gives the same bits at np 1-4 and across a resume at another N, and bad
# adapter settings are one line naming the key, exit 2. The adapters' gradients against
# finite differences are in the unit tests ([gradcheck]).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
CK="$BUILD/fsdp-ckpt"
within() { $PY -c "import sys; a, b = float('$1'), float('$2'); sys.exit(abs(a - b) > $3 * abs(b))" 2>/dev/null; }
T=(--config inputs/llama_tiny.toml --set model.n_layer=2 --set train.steps=6 --set eval.every=0
   --set eval.sequences=0 --set train.batch_size=12 --set train.micro_batch_size=2
   --set train.peak_tflops=1 --set train.warmup_steps=0 --set lora.enabled=true --set lora.rank=4
   --set lora.alpha=8)
loss_at() { grep -o '"loss":[^,}]*' "$1" | sed -n "${2}p" | cut -d: -f2; }

# 1. zero3 at np 1, 2 and 3; hybrid (2 shard groups of one rank: the replicas' all-reduce) and ddp
# at np 2: every run trains (the loss falls) and agrees with np 1 within 1e-4 relative.
for run in "1 zero3" "2 zero3" "3 zero3" "2 hybrid" "2 ddp"; do
  set -- $run
  mpirun -np "$1" "$TRAIN" "${T[@]}" --set fsdp.strategy="$2" --set fsdp.shard_group_size=1 --metrics "$WORK/m_$1_$2.jsonl" \
    >"$WORK/log_$1_$2" 2>&1 || { bad "lora $2 at np $1: $(tail -3 "$WORK/log_$1_$2")"; continue; }
  first=$(loss_at "$WORK/m_$1_$2.jsonl" 1) last=$(loss_at "$WORK/m_$1_$2.jsonl" 6)
  if $PY -c "import sys; sys.exit(not float('$last') < float('$first') - 0.05)"; then
    ok "lora $2 at np $1 trains: loss $first -> $last"
  else
    bad "lora $2 at np $1: loss $first -> $last"
  fi
  if [ -f "$WORK/m_1_zero3.jsonl" ] && [ "$run" != "1 zero3" ]; then
    ref=$(loss_at "$WORK/m_1_zero3.jsonl" 6)
    within "$last" "$ref" 1e-4 && ok "np $1 $2 step 6 loss $last = np 1's $ref within 1e-4" ||
      bad "np $1 $2 step 6 loss $last, np 1 $ref"
  fi
done
grep -m1 "lora" "$WORK/log_2_zero3" | sed 's/^/    /'

# 2. The base is frozen: checkpoints at steps 3 and 6 hold the same base tensors bit for bit and
# different adapters; they hold no optimizer state for the base.
mpirun -np 2 "$TRAIN" "${T[@]}" --set checkpoint.every=3 --set "checkpoint.dir=$WORK/ck" \
  >"$WORK/ck.log" 2>&1 || bad "lora with checkpoints: $(tail -3 "$WORK/ck.log")"
A="$WORK/ck/step_000003.h5" B="$WORK/ck/step_000006.h5"
datasets() { h5ls -r "$1" | awk '$2 == "Dataset" {print $1}'; }
base=$(datasets "$A" | grep '^/model/' | grep -v lora_) adapters=$(datasets "$A" | grep '^/model/.*lora_B')
moments=$(datasets "$B" | grep '^/optim/')
changed=0 same=0
for d in $base; do h5diff -q "$A" "$B" "$d" "$d" >/dev/null 2>&1 || changed=$((changed + 1)); done
for d in $adapters; do h5diff -q "$A" "$B" "$d" "$d" >/dev/null 2>&1 && same=$((same + 1)); done
nb=$(echo "$base" | grep -c .) na=$(echo "$adapters" | grep -c .)
nm=$(echo "$moments" | grep -c .) nbm=$(echo "$moments" | grep -vc lora_)
if [ "$nb" -gt 0 ] && [ "$na" -gt 0 ] && [ $changed -eq 0 ] && [ $same -eq 0 ] && [ "$nbm" -eq 0 ] && [ "$nm" -gt 0 ]; then
  ok "base frozen ($nb tensors bit for bit from step 3 to 6), $na lora_B trained, $nm moment datasets, none for the base"
else
  bad "checkpoints: $nb base tensors ($changed changed), $na lora_B ($same unchanged), $nm moments ($nbm of the base)"
fi

# 3. Resume at another N: step 3's checkpoint at np 3 continues to step 6 within 1e-4 of np 2's.
mpirun -np 3 "$TRAIN" "${T[@]}" --resume "$WORK/ck/step_000003.h5" --metrics "$WORK/res.jsonl" \
  >"$WORK/res.log" 2>&1 || bad "lora resume at np 3: $(tail -3 "$WORK/res.log")"
r6=$(grep -o '"loss":[^,}]*' "$WORK/res.jsonl" | tail -1 | cut -d: -f2)
within "$r6" "$(loss_at "$WORK/m_2_zero3.jsonl" 6)" 1e-4 && ok "resumed at np 3: step 6 loss $r6" ||
  bad "resumed at np 3: step 6 loss $r6, uninterrupted np 2 $(loss_at "$WORK/m_2_zero3.jsonl" 6)"

# 4. --init-from a Hugging Face base (fsdp's own export of a trained model): the adapters start
# at B = 0, so the LoRA run's first loss is the full run's from the same weights, bit for bit.
mpirun -np 2 "$TRAIN" "${T[@]}" --set lora.enabled=false --set train.steps=2 --set checkpoint.every=2 \
  --set "checkpoint.dir=$WORK/full" >"$WORK/full.log" 2>&1 || bad "full run: $(tail -3 "$WORK/full.log")"
"$CK" export "$WORK/full/step_000002.h5" --hf "$WORK/hf" >"$WORK/out" 2>&1 || bad "export: $(tail -2 "$WORK/out")"
for mode in false true; do
  mpirun -np 2 "$TRAIN" "${T[@]}" --init-from "$WORK/hf" --set train.steps=1 --set lora.enabled=$mode \
    --metrics "$WORK/init_$mode.jsonl" >"$WORK/init_$mode.log" 2>&1 ||
    bad "--init-from with lora.enabled=$mode: $(tail -3 "$WORK/init_$mode.log")"
done
f1=$(loss_at "$WORK/init_false.jsonl" 1) l1=$(loss_at "$WORK/init_true.jsonl" 1)
[ -n "$l1" ] && [ "$l1" = "$f1" ] && ok "--init-from a Hugging Face base: first loss $l1 = the full run's" ||
  bad "--init-from: LoRA's first loss '$l1', the full run's '$f1'"

# 5. Deterministic mode: the same bits at np 1, 2, 3 and 4 (zero3; hybrid 2 x 2 at np 4), and
# across a resume at another N (np 2's step-2 checkpoint continued at np 3).
D=("${T[@]}" --set train.deterministic=true --set train.steps=3 --set train.micro_batch_size=1)
for run in "1 zero3" "2 zero3" "3 zero3" "4 hybrid"; do
  set -- $run
  mpirun -np "$1" "$TRAIN" "${D[@]}" --set fsdp.strategy="$2" --set fsdp.shard_group_size=2 \
    --set checkpoint.every=1 --set "checkpoint.dir=$WORK/det$1" >"$WORK/det$1.log" 2>&1 ||
    bad "deterministic lora $2 at np $1: $(tail -3 "$WORK/det$1.log")"
done
mpirun -np 3 "$TRAIN" "${D[@]}" --resume "$WORK/det2/step_000002.h5" --set checkpoint.every=1 \
  --set "checkpoint.dir=$WORK/det_res" >"$WORK/det_res.log" 2>&1 || bad "deterministic resume: $(tail -3 "$WORK/det_res.log")"
for other in det2 det3 det4 det_res; do
  if "$CK" diff "$WORK/det1/step_000003.h5" "$WORK/$other/step_000003.h5" >"$WORK/diff" 2>&1 &&
      grep -q "identical" "$WORK/diff"; then
    ok "deterministic lora: $other's step 3 is np 1's bit for bit ($(grep -o '([0-9]* of [0-9]* tensors differ)' "$WORK/diff"))"
  else
    bad "deterministic lora: $other's step 3 differs from np 1's: $(tail -2 "$WORK/diff")"
  fi
done

# 6. Bad adapter settings: one line naming the key, exit 2.
expect_fail "lora.rank = 0" 2 "lora.rank = 0" "$TRAIN" "${T[@]}" --set lora.rank=0
expect_fail "unknown target" 2 "lora.targets: 'x_proj' names no projection.*q_proj" "$TRAIN" "${T[@]}" --set lora.targets=x_proj
expect_fail "rank above min(in, out)" 2 "lora.rank = 200 exceeds min\(in, out\) = 128 of model.layers.0" "$TRAIN" "${T[@]}" --set lora.rank=200
expect_fail "lora on zero2" 2 "lora.enabled with fsdp.strategy = zero2" "$TRAIN" "${T[@]}" --set fsdp.strategy=zero2
expect_fail "lora on experts" 2 "mixture of experts.*takes no adapters" "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set train.steps=1 --set lora.enabled=true
finish
