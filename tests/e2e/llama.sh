#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Llama architecture against independent references: its kernels against float64 PyTorch
# (tests/reference/llama_kernels_check.py); transformers' LlamaForCausalLM (float64,
# tests/reference/hf_transformers.py) as the model: the eval loss of Llama directories written
# by a numpy writer (grouped-query heads, untied, llama3 rope scaling; F32, the newer
# rope_parameters; tests/reference/llama_check.py), of a random Llama of its own save_pretrained
# (sharded with an index) and of fsdp's fp32 and bf16 exports, which it loads with no missing or
# unexpected key; a trained Llama exported and read back at another rank count bit for bit as
# its HDF5 checkpoint; bad files and contradicting decks refused with one line, exit 5; greedy
# sampling equal to transformers'.
source "$(dirname "$0")/lib.sh"
ref_python torch transformers safetensors
PY=/usr/bin/python3
HFT=("$REFPY" "$SRC/tests/reference/hf_transformers.py")
REF="$SRC/tests/reference/llama_check.py"
CKPT="$BUILD/fsdp-ckpt"
SAMPLE="$BUILD/fsdp-sample"
: >"$WORK/empty.toml"
within() { $PY -c "import sys; a, b = float('$1'), float('$2'); sys.exit(abs(a - b) > $3 * abs(b))" 2>/dev/null; }

# 1. The kernels against float64 PyTorch.
mkdir -p "$WORK/kernels"
if FSDP_REFERENCE_DIR="$WORK/kernels" "$BUILD/tests/fsdp_unit_tests" "[.llama_reference]" >"$WORK/out" 2>&1 &&
  "$REFPY" "$SRC/tests/reference/llama_kernels_check.py" "$WORK/kernels" >"$WORK/cmp" 2>&1; then
  ok "RMSNorm, rotary (plain, llama3), SwiGLU, both attention kernels at KV = H, H/2, 1: forward and gradients within 2e-6 of float64 PyTorch"
  sed 's/^/    /' "$WORK/cmp"
else
  bad "kernels against float64 PyTorch: $(cat "$WORK/out" "$WORK/cmp" | tail -8)"
fi

$PY "$REF" random-model "$WORK/rnd" || bad "random-model"
$PY -c "import random; random.seed(1); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64 * 65)))" >"$WORK/val.txt"

# 3. Train at np 3 (zero3), export at np 3 (fp32) and np 1 (bf16), check against the HDF5 file.
TINY=(--config inputs/llama_tiny.toml --set model.n_layer=2 --set train.steps=20 --set eval.every=0
      --set train.batch_size=12 --set train.micro_batch_size=2 --set train.peak_tflops=1)
mpirun -np 3 "$TRAIN" "${TINY[@]}" --set checkpoint.every=20 --set "checkpoint.dir=$WORK/ck" \
  >"$WORK/train.log" 2>&1 || bad "training llama_tiny at np 3: $(tail -3 "$WORK/train.log")"
C20="$WORK/ck/step_000020.h5"
grep -q "grouped-query heads (4 query, 2 key/value)" "$WORK/train.log" &&
  ok "start-up log: $(grep -m1 'attention:' "$WORK/train.log")" || bad "no attention line for grouped-query heads"
for spec in "3 fp32" "1 bf16"; do
  set -- $spec
  if mpirun -np "$1" "$CKPT" export "$C20" --hf "$WORK/hf_$2" --dtype "$2" >"$WORK/out" 2>&1 &&
    $PY "$REF" export-matches "$WORK/hf_$2" "$C20" --dtype "$2" rms_norm_eps=1e-05 rope_theta=500000.0 \
      num_key_value_heads=2 intermediate_size=344 tie_word_embeddings=false \
      'rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}' \
      >"$WORK/cmp" 2>&1; then
    ok "export $2 at np $1: LlamaForCausalLM matching the checkpoint: $(tail -1 "$WORK/cmp")"
  else
    bad "export $2 at np $1: $(cat "$WORK/out" "$WORK/cmp" | tail -5)"
  fi
done

# 2. transformers (float64) in one process: its loss on fsdp's evaluation windows for the
# numpy-written directories (the Llama 3.1 frequency blend; the newer config layout), for a
# random Llama of its own (grouped-query heads, llama3 rope_parameters, untied, written by
# save_pretrained in files of at most 100 kB with an index) and for fsdp's fp32 and bf16
# exports; each loaded with no missing, unexpected or mismatched key and no warning. Then its
# greedy continuation of the fp32 export (section 6).
EV=("$WORK/val.txt" 64 12)
"${HFT[@]}" eval-loss "$WORK/rnd/hf" "${EV[@]}" :: eval-loss "$WORK/rnd/hf_ropeparams" "${EV[@]}" \
  :: save llama "$WORK/tf" --seed 4 --shard 100KB num_hidden_layers=2 hidden_size=64 num_attention_heads=4 \
  num_key_value_heads=1 intermediate_size=96 vocab_size=256 max_position_embeddings=64 rms_norm_eps=1e-5 \
  'rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 4.0, "low_freq_factor": 0.5, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}' \
  :: eval-loss "$WORK/tf" "${EV[@]}" :: eval-loss "$WORK/hf_fp32" "${EV[@]}" :: eval-loss "$WORK/hf_bf16" "${EV[@]}" \
  :: greedy "$WORK/hf_fp32" 64 70 "The " >"$WORK/tf.out" 2>"$WORK/tf.err" || bad "transformers: $(tail -3 "$WORK/tf.out" "$WORK/tf.err")"
mapfile -t TF <"$WORK/tf.out"
[ "$(ls "$WORK/tf" | grep -c '^model-.*-of-.*safetensors$')" -ge 2 ] || bad "save_pretrained wrote one file: $(ls "$WORK/tf" | tr '\n' ' ')"
n=0
for spec in "3 rnd/hf" "1 rnd/hf_ropeparams" "2 tf" "1 $C20" "2 hf_bf16"; do
  set -- $spec
  from=$2
  [ "${from#/}" = "$from" ] && from="$WORK/$from"
  st=$(eval_loss "$1" "$from")
  what=$2
  [ "$from" = "$C20" ] && what="the trained checkpoint (transformers: its fp32 export)"
  if within "$st" "${TF[$n]}" 1e-5; then ok "$what at np $1: eval loss $st, transformers (float64) ${TF[$n]}"
  else bad "$what at np $1: eval loss $st, transformers (float64) ${TF[$n]}"; fi
  n=$((n + 1))
done

# 4. --init-from the export at np 2 = --init-from the HDF5 file at np 2, bit for bit.
for from in "$WORK/hf_fp32" "$C20"; do
  name=$(basename "$from")
  mpirun -np 2 "$TRAIN" "${TINY[@]}" --init-from "$from" --set train.steps=1 --set checkpoint.every=1 \
    --set "checkpoint.dir=$WORK/rt_$name" --metrics "$WORK/rt_$name.jsonl" >"$WORK/out" 2>&1 ||
    bad "--init-from $from at np 2: $(tail -3 "$WORK/out")"
done
l1=$(grep -m1 '"loss"' "$WORK/rt_hf_fp32.jsonl" | grep -o '"loss":[^,]*')
l2=$(grep -m1 '"loss"' "$WORK/rt_step_000020.h5.jsonl" | grep -o '"loss":[^,]*')
if [ -n "$l1" ] && [ "$l1" = "$l2" ] &&
  "$CKPT" diff "$WORK/rt_hf_fp32/step_000001.h5" "$WORK/rt_step_000020.h5/step_000001.h5" >"$WORK/diff" 2>&1; then
  ok "trained at np 3, exported, --init-from at np 2: first-step $l1 and every tensor after it bitwise the HDF5 resume's"
else
  bad "round trip: $l1 vs $l2; $(tail -1 "$WORK/diff")"
fi

# 5. Bad files and decks: one line naming the file and the key or tensor, exit 5.
$PY "$REF" bad-files "$WORK/rnd" "$WORK/bad" || bad "bad-files"
init=(mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --set train.steps=0
  --set "data.train=$WORK/val.txt" --set "data.val=$WORK/val.txt" --set train.batch_size=2
  --set train.micro_batch_size=1 --init-from)
B="$WORK/bad"
expect_fail "config.json without a field" 5 "config_missing_field/config.json: num_attention_heads: missing" "${init[@]}" "$B/config_missing_field"
expect_fail "config.json against the tensors" 5 "config_contradicts/config.json: hidden_size: 128, but the tensors in .* say 64" "${init[@]}" "$B/config_contradicts"
expect_fail "key/value heads that do not divide" 5 "kv_heads_not_divisor/config.json: num_key_value_heads: 3 does not divide num_attention_heads 4" "${init[@]}" "$B/kv_heads_not_divisor"
expect_fail "tensor of the wrong shape" 5 "tensor_shape/model.safetensors: model.layers.0.self_attn.k_proj.weight: " "${init[@]}" "$B/tensor_shape"
expect_fail "index naming a missing shard" 5 "index_missing_shard/model.safetensors.index.json: weight_map: model.norm.weight -> model-00003-of-00003.safetensors: no such file" "${init[@]}" "$B/index_missing_shard"
expect_fail "index without a tensor" 5 "index_missing_tensor/model.safetensors.index.json: model.layers.1.mlp.up_proj.weight: missing" "${init[@]}" "$B/index_missing_tensor"
expect_fail "deck that disagrees with config.json" 5 "model.n_kv_head: the file has 2, but --set model.n_kv_head=4 sets 4" "${init[@]}" "$WORK/rnd/hf" --set model.n_kv_head=4
expect_fail "deck rule: key/value heads" 2 "model.n_kv_head: expected a divisor of model.n_head = 4" \
  "$TRAIN" --config inputs/llama_tiny.toml --set model.n_kv_head=3
expect_fail "deck rule: Llama without an MLP width" 2 "model.ffn_hidden: expected the MLP's hidden width" \
  "$TRAIN" --config inputs/llama_tiny.toml --set model.ffn_hidden=0
expect_fail "deck rule: GPT-2 with grouped-query heads" 2 "model.n_kv_head: GPT-2 has no grouped-query attention" \
  "$TRAIN" --config inputs/default.toml --set model.n_kv_head=2

# 6. fsdp-sample on a Llama checkpoint: greedy equals transformers' (float64) on the export.
got=$(mpirun -np 2 "$SAMPLE" "$C20" --prompt "The " --tokens 70 --temperature 0 --ids 2>&1)
want=${TF[5]:-}
if [ -n "$want" ] && [ "$got" = "$want" ]; then ok "Llama greedy sample equals transformers' float64 one (74 ids)"
else bad "Llama greedy sample: got '$got', reference '$want'"; fi
finish
