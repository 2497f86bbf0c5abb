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

# PEFT adapters read back (--adapter): fsdp's own export continues where it was (the eval loss
# of step 2's adapters, fsdp's above), and an adapter PEFT itself wrote (save_pretrained, with
# lora_dropout 0.05, which fsdp says it does not apply) gives PEFT's eval loss; fsdp-sample
# samples the adapted model.
adapted_loss() {  # adapted_loss NP ADAPTER: fsdp's eval loss of the base with ADAPTER
  mpirun -np "$1" "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" --adapter "$2" \
    --set train.steps=0 --set "data.train=$WORK/val.txt" --set "data.val=$WORK/val.txt" \
    --set eval.sequences=12 --set train.batch_size="$1" --set train.micro_batch_size=1 \
    --metrics "$WORK/ad.jsonl" >"$WORK/ad.log" 2>&1 || { echo "failed: $(tail -2 "$WORK/ad.log")"; return; }
  grep -o '"eval_loss":[^,}]*' "$WORK/ad.jsonl" | cut -d: -f2
}
back=$(adapted_loss 2 "$WORK/p2")
within "$back" "$fsdp" 1e-6 && ok "--adapter of fsdp's export at np 2: eval loss $back = the run's $fsdp" ||
  bad "--adapter of fsdp's export: $back, the run's $fsdp"
if "${REF[@]}" make-adapter "$WORK/rnd/hf" "$WORK/peft_own" 8 16 q_proj,v_proj,down_proj :: \
    eval-loss "$WORK/rnd/hf" "$WORK/peft_own" "$WORK/val.txt" 64 12 >"$WORK/own" 2>"$WORK/own.err"; then
  theirs=$(sed -n 3p "$WORK/own") ours=$(adapted_loss 3 "$WORK/peft_own")
  within "$ours" "$theirs" 1e-5 && ok "an adapter PEFT wrote ($(sed -n 1p "$WORK/own")): fsdp's eval loss $ours at np 3, PEFT's $theirs" ||
    bad "an adapter PEFT wrote: fsdp $ours, PEFT $theirs"
  grep -q "lora_dropout 0.05.* is not applied" "$WORK/ad.log" && ok "the adapter's lora_dropout is said not to be applied" ||
    bad "no word about lora_dropout: $(grep -m1 adapter "$WORK/ad.log")"
else
  bad "make-adapter: $(tr '\n' ';' <"$WORK/own") $(tail -3 "$WORK/own.err")"
fi
if "$BUILD/fsdp-sample" "$WORK/rnd/hf" --adapter "$WORK/p2" --tokens 8 --ids --prompt "abc" >"$WORK/sample" 2>&1 &&
    [ "$(wc -w <"$WORK/sample")" -ge 8 ]; then
  ok "fsdp-sample --adapter: $(head -c 80 "$WORK/sample")"
else
  bad "fsdp-sample --adapter: $(tail -2 "$WORK/sample")"
fi
# Hostile adapter directories: one line naming the file and the key or tensor, exit 5; a deck
# that disagrees with the adapter, exit 5 naming both.
bad_adapter() {  # bad_adapter NAME PATTERN EDIT: a copy of p2 changed by the python EDIT
  rm -rf "$WORK/bad" && cp -r "$WORK/p2" "$WORK/bad"
  $PY - "$WORK/bad" <<PYEOF2
import json, os, sys
d = sys.argv[1]
c = json.load(open(os.path.join(d, "adapter_config.json")))
$3
json.dump(c, open(os.path.join(d, "adapter_config.json"), "w"))
PYEOF2
  expect_fail "$1" 5 "$2" mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" \
    --adapter "$WORK/bad" --set train.steps=0 --set "data.train=$WORK/val.txt" --set "data.val=$WORK/val.txt" \
    --set train.batch_size=2 --set train.micro_batch_size=1
}
bad_adapter "a prefix-tuning adapter" "adapter_config.json: peft_type = .PREFIX_TUNING.: only LORA" 'c["peft_type"] = "PREFIX_TUNING"'
bad_adapter "a DoRA adapter" "adapter_config.json: use_dora = true: DoRA" 'c["use_dora"] = True'
bad_adapter "modules_to_save" "adapter_config.json: modules_to_save = .*fsdp trains the adapters alone" 'c["modules_to_save"] = ["lm_head"]'
bad_adapter "no r" "adapter_config.json: r: missing" 'del c["r"]'
bad_adapter "r against the tensors" "lora_A.weight: shape \[4, 64\], but this run's adapter is \[8, 64\]" 'c["r"] = 8'
bad_adapter "a module the config leaves out" "holds 28 tensors, but this run's adapters are 24" 'c["target_modules"] = [t for t in c["target_modules"] if t != "o_proj"]'
bad_adapter "truncated tensors" "adapter_model.safetensors" 'open(os.path.join(d, "adapter_model.safetensors"), "r+b").truncate(1000)'
expect_fail "a deck that disagrees" 5 "lora.rank: adapter_config.json has 4, but --set lora.rank=2 sets 2" \
  "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" --adapter "$WORK/p2" --set lora.rank=2
expect_fail "--adapter without --init-from" 2 "--adapter .*needs --init-from" "$TRAIN" --config "$WORK/empty.toml" --adapter "$WORK/p2"

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
