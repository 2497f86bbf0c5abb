#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LoRA against Hugging Face's own libraries (tests/reference/peft_check.py: PEFT and
# transformers from PyPI, float64): adapters trained at np 2 (zero3) on a numpy-written Llama
# (--init-from its Hugging Face directory) and written by fsdp-ckpt export --peft load with
# PeftModel.from_pretrained with no missing or unexpected key, and give fsdp's own eval loss
# within 1e-5; one step later (AdamW with beta1 = 0, no decay or clipping: every element moves
# against its gradient) the sign of every adapter update is the sign of PEFT's autograd
# gradient; fsdp-ckpt export --hf --merge equals PEFT's merge_and_unload to float32 rounding and
# loads in transformers; the export is the same bytes at np 1 and np 2; a checkpoint without
# adapters is refused by --peft and --merge, exit 2.
source "$(dirname "$0")/lib.sh"
ref_python torch transformers peft safetensors
PY=/usr/bin/python3
REF=("$REFPY" "$SRC/tests/reference/peft_check.py")
within() { $PY -c "import sys; a, b = float('$1'), float('$2'); sys.exit(abs(a - b) > $3 * abs(b))" 2>/dev/null; }
: >"$WORK/empty.toml"
$PY "$SRC/tests/reference/llama_check.py" random-model "$WORK/rnd" || bad "random-model"
# One window of T + 1 = 65 bytes to train on (every sampled sequence is this one), 12 to evaluate.
$PY -c "import random; random.seed(3); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64)))" >"$WORK/one.txt"
$PY -c "import random; random.seed(1); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64 * 65)))" >"$WORK/val.txt"
mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" \
  --set "data.train=$WORK/one.txt" --set "data.val=$WORK/val.txt" --set eval.sequences=12 \
  --set eval.every=0 --set train.steps=2 --set train.batch_size=4 --set train.micro_batch_size=1 \
  --set train.lr=0.01 --set train.min_lr=0.01 --set train.warmup_steps=0 --set train.grad_clip=0 \
  --set train.weight_decay=0 --set train.beta1=0 --set train.peak_tflops=1 \
  --set lora.enabled=true --set lora.rank=4 --set lora.alpha=8 --set checkpoint.every=1 \
  --set "checkpoint.dir=$WORK/ck" --metrics "$WORK/m.jsonl" >"$WORK/train.log" 2>&1 ||
  bad "LoRA training at np 2: $(tail -3 "$WORK/train.log")"
for k in 1 2; do
  mpirun -np 2 "$BUILD/fsdp-ckpt" export "$WORK/ck/step_00000$k.h5" --peft "$WORK/p$k" --base "$WORK/rnd/hf" \
    >"$WORK/out" 2>&1 || bad "export --peft at np 2: $(tail -2 "$WORK/out")"
done
mpirun -np 1 "$BUILD/fsdp-ckpt" export "$WORK/ck/step_000002.h5" --peft "$WORK/p2_np1" >"$WORK/out" 2>&1 ||
  bad "export --peft at np 1: $(tail -2 "$WORK/out")"
cmp -s "$WORK/p2/adapter_model.safetensors" "$WORK/p2_np1/adapter_model.safetensors" &&
  ok "adapter_model.safetensors: the same bytes exported at np 1 and np 2" || bad "the np 1 and np 2 exports differ"

mpirun -np 2 "$BUILD/fsdp-ckpt" export "$WORK/ck/step_000002.h5" --hf "$WORK/merged" --merge >"$WORK/out" 2>&1 ||
  bad "export --hf --merge: $(tail -2 "$WORK/out")"
fsdp=$(grep -o '"eval_loss":[^,}]*' "$WORK/m.jsonl" | tail -1 | cut -d: -f2)
if "${REF[@]}" eval-loss "$WORK/rnd/hf" "$WORK/p2" "$WORK/val.txt" 64 12 :: \
    grad-signs "$WORK/rnd/hf" "$WORK/p1" "$WORK/p2" "$WORK/one.txt" :: \
    merged "$WORK/rnd/hf" "$WORK/p2" "$WORK/merged" >"$WORK/ref" 2>"$WORK/ref.err"; then
  peft_loss=$(sed -n 2p "$WORK/ref")
  within "$fsdp" "$peft_loss" 1e-5 && ok "PEFT loads the export ($(sed -n 1p "$WORK/ref")); eval loss $peft_loss, fsdp's $fsdp" ||
    bad "eval loss: PEFT $peft_loss, fsdp $fsdp"
  ok "one step: $(sed -n 3p "$WORK/ref")"
  ok "$(sed -n 4p "$WORK/ref")"
else
  bad "peft_check: $(tr '\n' ';' <"$WORK/ref") $(tail -3 "$WORK/ref.err")"
fi
grep -q '"peft_type": "LORA"' "$WORK/p2/adapter_config.json" && grep -q '"r": 4' "$WORK/p2/adapter_config.json" &&
  ok "adapter_config.json: $(tr -d '\n ' <"$WORK/p2/adapter_config.json" | cut -c1-160)..." || bad "adapter_config.json"

# A checkpoint of a full fine-tuning run has no adapters to export.
mpirun -np 1 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" --set "data.train=$WORK/one.txt" \
  --set "data.val=$WORK/one.txt" --set eval.sequences=0 --set train.steps=1 --set train.batch_size=1 \
  --set train.micro_batch_size=1 --set checkpoint.every=1 --set "checkpoint.dir=$WORK/full" >"$WORK/out" 2>&1 ||
  bad "full run: $(tail -2 "$WORK/out")"
expect_fail "export --peft of a checkpoint without adapters" 2 "holds no adapters" \
  "$BUILD/fsdp-ckpt" export "$WORK/full/step_000001.h5" --peft "$WORK/none"
expect_fail "export --merge of a checkpoint without adapters" 2 "holds no adapters to merge" \
  "$BUILD/fsdp-ckpt" export "$WORK/full/step_000001.h5" --hf "$WORK/none" --merge
finish
