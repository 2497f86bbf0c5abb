#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Qwen3 (model.arch = "qwen3": Llama's layers with q/k RMSNorms per head and a head size of its
# own) against independent references, transformers' Qwen3ForCausalLM (float64,
# tests/reference/hf_transformers.py) as the model: the eval loss of Qwen3ForCausalLM
# directories written by a numpy writer (head_dim 24 with 64 channels and 4 heads; F32, BF16,
# sharded with an index, tied), of a random tied Qwen3 of transformers' own save_pretrained, of
# packed documents with a trained-token mask, and of fsdp's export, which it loads with no
# missing or unexpected key; a trained Qwen3 exported
# and read back at another rank count bit for bit as its HDF5 checkpoint; config.json fields this
# model does not compute refused with one line naming the field, exit 5; the published
# Qwen3-0.6B deck's parameter count. The kernels and the loss against finite differences are in
# the unit tests ([gradcheck]); every strategy at np 1-4 in test_llama.
source "$(dirname "$0")/lib.sh"
ref_python torch transformers safetensors
PY=/usr/bin/python3
HFT=("$REFPY" "$SRC/tests/reference/hf_transformers.py")
REF="$SRC/tests/reference/llama_check.py"
CKPT="$BUILD/fsdp-ckpt"
: >"$WORK/empty.toml"
within() { $PY -c "import sys; a, b = float('$1'), float('$2'); sys.exit(abs(a - b) > $3 * abs(b))" 2>/dev/null; }

# 1. The files: numpy-written Qwen3 directories, a tied Qwen3 of transformers' own, and packed
# documents (data.packing = documents, positions restarting after each newline, no attention
# across one) with a trained-token mask beside the file.
Q=(--qwen3 1 --headdim 24 --embd 64 --heads 4 --kv 2 --scaling none --theta 1000000)
$PY "$REF" random-model "$WORK/rnd" "${Q[@]}" || bad "random-model"
$PY "$REF" random-model "$WORK/rnd_tied" "${Q[@]}" --tied 1 --seed 2 || bad "random-model tied"
$PY -c "import random; random.seed(1); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64 * 65)))" >"$WORK/val.txt"
$PY - "$WORK/docs.txt" <<'PYEOF'
import random, sys
random.seed(3)
text = bytearray(random.choice(b"abcdefgh ijklmnop") for _ in range(64 * 65))
for i in random.sample(range(len(text)), 150):
    text[i] = 10  # the documents' ends
open(sys.argv[1], "wb").write(text)
bits = [random.random() < 0.7 for _ in range(len(text))]  # src/data/trained_mask.hpp's format
body = bytearray((len(bits) + 7) // 8)
for i, b in enumerate(bits):
    body[i // 8] |= b << (i % 8)
head = bytearray(1024)
for off, v, n in ((0, 20261204, 4), (4, 1, 4), (8, len(bits), 8), (16, sum(bits), 8), (24, 10, 4)):
    head[off:off + n] = v.to_bytes(n, "little")
open(sys.argv[1] + ".trained", "wb").write(head + body)
PYEOF

# 2. Train at np 3 (zero3), export at np 3, check against the HDF5 file.
TINY=(--config inputs/qwen3_tiny.toml --set model.n_layer=2 --set train.steps=20 --set eval.every=0
      --set train.batch_size=12 --set train.micro_batch_size=2 --set train.peak_tflops=1)
mpirun -np 3 "$TRAIN" "${TINY[@]}" --set checkpoint.every=20 --set "checkpoint.dir=$WORK/ck" \
  >"$WORK/train.log" 2>&1 || bad "training qwen3_tiny at np 3: $(tail -3 "$WORK/train.log")"
C20="$WORK/ck/step_000020.h5"
mpirun -np 3 "$CKPT" export "$C20" --hf "$WORK/hf_fp32" --dtype fp32 >"$WORK/out" 2>&1 ||
  bad "export at np 3: $(tail -3 "$WORK/out")"

# 3. transformers (float64) in one process, every directory loaded with no missing, unexpected
# or mismatched key and no warning: its loss on fsdp's evaluation windows against fsdp's, within
# 1e-5 (the packed documents: the mean over the scored targets, each document on its own).
EV=("$WORK/val.txt" 64 12)
"${HFT[@]}" eval-loss "$WORK/rnd/hf" "${EV[@]}" :: eval-loss "$WORK/rnd/hf_bf16" "${EV[@]}" \
  :: eval-loss "$WORK/rnd/hf_sharded" "${EV[@]}" :: eval-loss "$WORK/rnd_tied/hf" "${EV[@]}" \
  :: save qwen3 "$WORK/tf" --seed 5 num_hidden_layers=1 hidden_size=32 num_attention_heads=2 num_key_value_heads=1 \
  head_dim=24 intermediate_size=48 vocab_size=256 max_position_embeddings=64 tie_word_embeddings=true \
  :: eval-loss "$WORK/tf" "${EV[@]}" :: eval-loss "$WORK/hf_fp32" "${EV[@]}" \
  :: eval-loss "$WORK/rnd/hf" "$WORK/docs.txt" 64 12 10 >"$WORK/tf.out" 2>"$WORK/tf.err" ||
  bad "transformers: $(tail -3 "$WORK/tf.out" "$WORK/tf.err")"
mapfile -t TF <"$WORK/tf.out"
n=0
for spec in "1 rnd/hf" "3 rnd/hf_bf16" "2 rnd/hf_sharded" "4 rnd_tied/hf" "2 tf" "1 $C20"; do
  set -- $spec
  from=$2
  [ "${from#/}" = "$from" ] && from="$WORK/$from"
  st=$(eval_loss "$1" "$from")
  what="Qwen3 $2"
  [ "$from" = "$C20" ] && what="the trained Qwen3 (transformers: its export)"
  [ "$2" = tf ] && what="transformers' save_pretrained Qwen3 (tied)"
  if within "$st" "${TF[$n]}" 1e-5; then ok "$what at np $1: eval loss $st, transformers (float64) ${TF[$n]}"
  else bad "$what at np $1: eval loss $st, transformers (float64) ${TF[$n]}"; fi
  n=$((n + 1))
done
ref=${TF[6]:-}
for np in 1 3; do
  mpirun -np $np "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/rnd/hf" --set train.steps=0 \
    --set "data.train=$WORK/docs.txt" --set "data.val=$WORK/docs.txt" --set eval.sequences=12 \
    --set data.packing=documents --set train.batch_size=$np --set train.micro_batch_size=1 \
    --set model.attention=$([ $np = 1 ] && echo fused || echo materialized) \
    --metrics "$WORK/pk.jsonl" >"$WORK/out" 2>&1 || bad "packed eval at np $np: $(tail -2 "$WORK/out")"
  st=$(grep -o '"eval_loss":[^,}]*' "$WORK/pk.jsonl" | cut -d: -f2)
  if within "$st" "$ref" 1e-5; then ok "packed documents with a mask at np $np: eval loss $st, transformers (float64) $ref"
  else bad "packed documents with a mask at np $np: eval loss $st, transformers (float64) $ref"; fi
done

# 4. The export against the HDF5 file, read back at np 2.
if "$CKPT" info "$C20" 2>&1 | grep -q "head_dim 48"; then ok "fsdp-ckpt info: $("$CKPT" info "$C20" | grep -m1 -o 'n_kv_head.*')"
else bad "fsdp-ckpt info lacks head_dim 48: $("$CKPT" info "$C20" 2>&1 | head -4)"; fi
if $PY "$REF" export-matches "$WORK/hf_fp32" "$C20" --dtype fp32 head_dim=48 rms_norm_eps=1e-06 \
    rope_theta=1000000.0 num_key_value_heads=2 tie_word_embeddings=true use_sliding_window=false \
    >"$WORK/cmp" 2>&1; then
  ok "export at np 3: Qwen3ForCausalLM matching the checkpoint: $(tail -1 "$WORK/cmp")"
else
  bad "export at np 3: $(cat "$WORK/cmp" | tail -5)"
fi
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

# 5. config.json fields and tensors this model does not compute: one line naming them, exit 5.
$PY - "$WORK/rnd/hf" "$WORK/bad" <<'PYEOF'
import json, os, shutil, sys
src, out = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(src, "config.json")))
def case(name, **changes):
    d = os.path.join(out, name)
    shutil.copytree(src, d)
    json.dump(dict(cfg, **changes), open(os.path.join(d, "config.json"), "w"), indent=1)
    return d
case("head_dim_odd", head_dim=23)
case("rope_yarn", rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32})
case("sliding_window", use_sliding_window=True, sliding_window=32)
# q_norm stored as [12, 2]: the same bytes, so only the [head_dim] check can catch it.
d = case("q_norm_shape")
path = os.path.join(d, "model.safetensors")
blob = open(path, "rb").read()
n = int.from_bytes(blob[:8], "little")
header = json.loads(blob[8:8 + n])
header["model.layers.0.self_attn.q_norm.weight"]["shape"] = [12, 2]
text = json.dumps(header).encode()
open(path, "wb").write(len(text).to_bytes(8, "little") + text + blob[8 + n:])
PYEOF
init=(mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --set train.steps=0
  --set "data.train=$WORK/val.txt" --set "data.val=$WORK/val.txt" --set train.batch_size=2
  --set train.micro_batch_size=1 --init-from)
B="$WORK/bad"
expect_fail "odd head_dim" 5 "head_dim_odd/config.json: head_dim: the head size 23 is odd" "${init[@]}" "$B/head_dim_odd"
expect_fail "rope scaling it does not compute" 5 "rope_yarn/config.json: rope_scaling: rope_type yarn is not one this model computes" "${init[@]}" "$B/rope_yarn"
expect_fail "sliding window" 5 "sliding_window/config.json: use_sliding_window: true, but this model computes full causal attention" "${init[@]}" "$B/sliding_window"
expect_fail "q_norm of the wrong shape" 5 "q_norm_shape/model.safetensors: model.layers.0.self_attn.q_norm.weight: shape not \[24\]" "${init[@]}" "$B/q_norm_shape"
expect_fail "deck rule: odd head_dim" 2 "model.head_dim: expected an even head size" \
  "$TRAIN" --config inputs/qwen3_tiny.toml --set model.head_dim=47

# 6. The published Qwen3-0.6B: the deck's count is Qwen/Qwen3-0.6B's.
if "$BUILD/fsdp-plan" --config inputs/qwen3_0p6b.toml 2>&1 | head -1 | grep -q "596,049,920 parameters"; then
  ok "inputs/qwen3_0p6b.toml: $("$BUILD/fsdp-plan" --config inputs/qwen3_0p6b.toml 2>&1 | head -1)"
else
  bad "qwen3_0p6b count: $("$BUILD/fsdp-plan" --config inputs/qwen3_0p6b.toml 2>&1 | head -1)"
fi
finish
