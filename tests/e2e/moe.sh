#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Mixtures of experts (model.arch = qwen3_moe, mixtral) against independent references,
# transformers' Qwen3MoeForCausalLM and MixtralForCausalLM (float64, its eager experts;
# tests/reference/hf_transformers.py) as the model: the eval loss at expert parallelism 1, 2
# and 4 of numpy-written directories (Qwen3-MoE with layer 0 dense, weights not renormalised;
# Mixtral; one tensor per expert), of random models of transformers' own save_pretrained (its
# default per-expert layout and its fused one, mlp.experts.gate_up_proj / down_proj) and of
# fsdp's sharded export, which it loads with no missing or unexpected key; one AdamW step on one
# window moving every tensor by -lr g / (|g| + eps), so each update is the gradient of the loss
# plus the load-balancing loss, against transformers', and the balance loss's value against its
# aux_loss; a trained model exported and read back; deterministic mode's bits at
# np 1 and 4 with expert parallelism and across a resume at another rank count and P; divided
# experts' checkpoints resumed at another P; config.json router settings this version does not
# compute, and expert parallelism it cannot run, refused naming the key; the published decks'
# parameter counts.
source "$(dirname "$0")/lib.sh"
ref_python torch transformers safetensors
PY=/usr/bin/python3
HFT=("$REFPY" "$SRC/tests/reference/hf_transformers.py")
REF="$SRC/tests/reference/llama_check.py"
CKPT="$BUILD/fsdp-ckpt"
: >"$WORK/empty.toml"
within() { $PY -c "import sys; a, b = float('$1'), float('$2'); sys.exit(abs(a - b) > $3 * abs(b))" 2>/dev/null; }

# 1. numpy-written directories (their eval loss against transformers' below, with section 3's).
$PY "$REF" random-model "$WORK/q" --moe qwen3_moe --headdim 24 --scaling none --theta 1000000 \
  --dense 0 --renorm 0 || bad "random-model qwen3_moe"
$PY "$REF" random-model "$WORK/m" --moe mixtral --ffn 48 --seed 2 --coef 0.02 || bad "random-model mixtral"
$PY -c "import random; random.seed(1); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64 * 65)))" >"$WORK/val.txt"

# 2. One AdamW step at np 2 (zero3) on one window (each tensor's update against transformers'
# gradient in section 3b).
$PY -c "import random; random.seed(3); print(''.join(random.choice('abcdefgh ijklmnop') for _ in range(64)))" >"$WORK/one.txt"
for fam in q m; do
  mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/$fam/hf" --set "data.train=$WORK/one.txt" \
    --set "data.val=$WORK/one.txt" --set eval.sequences=0 --set train.steps=1 --set train.batch_size=4 \
    --set train.micro_batch_size=1 --set train.lr=100 --set train.min_lr=100 --set train.eps=100 \
    --set train.warmup_steps=0 --set train.grad_clip=0 --set train.weight_decay=0 --set checkpoint.every=1 \
    --set "checkpoint.dir=$WORK/step_$fam" --metrics "$WORK/step_$fam.jsonl" >"$WORK/out" 2>&1 ||
    { bad "one step of $fam: $(tail -3 "$WORK/out")"; continue; }
  mpirun -np 1 "$CKPT" export "$WORK/step_$fam/step_000001.h5" --hf "$WORK/step_$fam/hf" >"$WORK/out" 2>&1 ||
    bad "export: $(tail -2 "$WORK/out")"
done

# 3. Train the tiny Qwen3-MoE at np 3, export at np 3, read back at np 2 as the HDF5 resume.
TINY=(--config inputs/qwen3_moe_tiny.toml --set model.n_layer=2 --set model.mlp_only_layers=0
      --set train.steps=6 --set eval.every=0 --set train.batch_size=6 --set train.micro_batch_size=1
      --set train.peak_tflops=1)
mpirun -np 3 "$TRAIN" "${TINY[@]}" --set checkpoint.every=6 --set "checkpoint.dir=$WORK/ck" \
  >"$WORK/train.log" 2>&1 || bad "training qwen3_moe_tiny at np 3: $(tail -3 "$WORK/train.log")"
C6="$WORK/ck/step_000006.h5"
if "$CKPT" info "$C6" 2>&1 | grep -q "n_experts 8, experts_per_token 2, moe_ffn_hidden 96"; then
  ok "fsdp-ckpt info: $("$CKPT" info "$C6" | grep -m1 -o 'n_experts.*')"
else
  bad "fsdp-ckpt info lacks the experts: $("$CKPT" info "$C6" 2>&1 | head -6)"
fi
if grep -q "aux [0-9.]* | load [0-9.]* max/mean" "$WORK/train.log"; then
  ok "step log: $(grep -m1 -o 'loss [0-9.]* | aux [0-9.]* | load [0-9.]* max/mean' "$WORK/train.log")"
else
  bad "step log lacks the balance loss and load: $(grep -m1 '^step' "$WORK/train.log")"
fi
# Exported in files of at most 400 kB with an index, as save_pretrained shards a large model.
mpirun -np 3 "$CKPT" export "$C6" --hf "$WORK/hf6" --max-shard-bytes 400000 >"$WORK/out" 2>&1 ||
  bad "export at np 3: $(tail -2 "$WORK/out")"
shards=$(ls "$WORK/hf6" | grep -c '^model-0000[0-9]-of-0000[0-9].safetensors$')
if [ "$shards" -ge 2 ] && [ -f "$WORK/hf6/model.safetensors.index.json" ] && [ ! -f "$WORK/hf6/model.safetensors" ]; then
  ok "export --max-shard-bytes 400000: $shards files and model.safetensors.index.json ($(tail -1 "$WORK/out"))"
else
  bad "sharded export: $(ls "$WORK/hf6" | tr '\n' ' ')"
fi
for from in "$WORK/hf6" "$C6"; do
  name=$(basename "$from")
  mpirun -np 2 "$TRAIN" "${TINY[@]}" --init-from "$from" --set train.steps=1 --set checkpoint.every=1 \
    --set "checkpoint.dir=$WORK/rt_$name" --metrics "$WORK/rt_$name.jsonl" >"$WORK/out" 2>&1 ||
    bad "--init-from $from at np 2: $(tail -3 "$WORK/out")"
done
l1=$(grep -m1 -o '"loss":[^,]*' "$WORK/rt_hf6.jsonl")
l2=$(grep -m1 -o '"loss":[^,]*' "$WORK/rt_step_000006.h5.jsonl")
if [ -n "$l1" ] && [ "$l1" = "$l2" ] &&
  "$CKPT" diff "$WORK/rt_hf6/step_000001.h5" "$WORK/rt_step_000006.h5/step_000001.h5" >"$WORK/diff" 2>&1; then
  ok "trained at np 3, exported (Qwen3MoeForCausalLM, one tensor per expert, sharded), --init-from at np 2: $l1, every tensor bitwise the HDF5 resume's"
else
  bad "round trip: $l1 vs $l2; $(tail -1 "$WORK/diff")"
fi

# 3a. transformers (float64, one process), every directory loaded with no missing, unexpected or
# mismatched key and no warning: the eval loss of the numpy-written directories, of random
# models of its own save_pretrained (Qwen3-MoE per expert, as transformers 5 writes by default,
# with its num_local_experts; Qwen3-MoE and Mixtral fused, save_original_format=False; Mixtral
# per expert) and of the sharded export, against fsdp's at expert parallelism P = 1, 2 and 4
# (the experts split over the ranks, the tokens exchanged).
EV=("$WORK/val.txt" 64 12)
TQ=(num_hidden_layers=2 hidden_size=32 num_attention_heads=2 num_key_value_heads=1 head_dim=16
    intermediate_size=48 moe_intermediate_size=24 num_experts=4 num_experts_per_tok=2 vocab_size=256
    max_position_embeddings=64 mlp_only_layers=[1])
TM=(num_hidden_layers=1 hidden_size=32 num_attention_heads=2 num_key_value_heads=1 intermediate_size=24
    num_local_experts=4 num_experts_per_tok=2 vocab_size=256 max_position_embeddings=64)
"${HFT[@]}" eval-loss "$WORK/q/hf" "${EV[@]}" :: eval-loss "$WORK/q/hf_bf16" "${EV[@]}" \
  :: eval-loss "$WORK/m/hf" "${EV[@]}" :: eval-loss "$WORK/m/hf_sharded" "${EV[@]}" \
  :: save qwen3_moe "$WORK/tq" --seed 6 "${TQ[@]}" :: eval-loss "$WORK/tq" "${EV[@]}" \
  :: save qwen3_moe "$WORK/tqf" --seed 7 --fused 1 "${TQ[@]}" :: eval-loss "$WORK/tqf" "${EV[@]}" \
  :: save mixtral "$WORK/tmf" --seed 8 --fused 1 "${TM[@]}" :: eval-loss "$WORK/tmf" "${EV[@]}" \
  :: save mixtral "$WORK/tm" --seed 9 "${TM[@]}" :: eval-loss "$WORK/tm" "${EV[@]}" \
  :: eval-loss "$WORK/hf6" "${EV[@]}" \
  :: moe-step "$WORK/q/hf" "$WORK/step_q/hf" "$WORK/one.txt" 100 100 \
  :: moe-step "$WORK/m/hf" "$WORK/step_m/hf" "$WORK/one.txt" 100 100 >"$WORK/tf.out" 2>"$WORK/tf.err" ||
  bad "transformers: $(tail -3 "$WORK/tf.out" "$WORK/tf.err")"
mapfile -t TF < <(grep -v -E '^(loss|router|expert|other) ' "$WORK/tf.out")
grep -q 'mlp.experts.gate_up_proj' "$WORK/tmf/model.safetensors" && ! grep -q 'experts.0' "$WORK/tmf/model.safetensors" ||
  bad "save_original_format=False did not fuse Mixtral's experts"
grep -q '"num_local_experts"' "$WORK/tq/config.json" || bad "transformers' Qwen3-MoE config has no num_local_experts"
n=0
for spec in "1 q/hf 1" "2 q/hf_bf16 2" "4 m/hf 4" "1 m/hf_sharded 1" "2 tq 2" "1 tqf 1" "2 tmf 2" "1 tm 1" "1 $C6 1"; do
  set -- $spec
  from=$2
  [ "${from#/}" = "$from" ] && from="$WORK/$from"
  st=$(eval_loss "$1" "$from" --set fsdp.expert_parallel="$3")
  what=$2
  [ "$from" = "$C6" ] && what="the trained Qwen3-MoE (transformers: its sharded export)"
  if within "$st" "${TF[$n]}" 1e-5; then ok "$what at np $1, expert_parallel $3: eval loss $st, transformers (float64) ${TF[$n]}"
  else bad "$what at np $1, expert_parallel $3: eval loss $st, transformers (float64) ${TF[$n]}"; fi
  n=$((n + 1))
done

# 3b. Section 2's step: each tensor's update (each expert's on its own) against transformers'
# gradient of its loss plus router_aux_loss_coef x its aux_loss, and fsdp's balance loss against
# that aux_loss.
for fam in q m; do
  awk -v f=$fam '/^loss/ {k++} k == (f == "q" ? 1 : 2) && /^(loss|router|expert|other) /' "$WORK/tf.out" >"$WORK/cmp"
  aux=$(grep -o '"aux_loss":[^,}]*' "$WORK/step_$fam.jsonl" | cut -d: -f2)
  want=$(awk '/^loss/ {print $4}' "$WORK/cmp")
  worst=$(awk '/^(router|expert|other) / {if ($2 > w) w = $2} END {print w + 0}' "$WORK/cmp")
  if [ -n "$want" ] && within "$aux" "$want" 1e-6 && $PY -c "import sys; sys.exit(not $worst < 1e-4)"; then
    ok "$fam: one step's updates against transformers' float64 gradients: $(tr '\n' ';' <"$WORK/cmp"); balance loss $aux"
  else
    bad "$fam: one step against transformers' float64 gradients (balance loss $aux): $(tr '\n' ';' <"$WORK/cmp")"
  fi
done

# 4. Deterministic mode: Mixtral at np 1 and 4 with expert parallelism gives the same bits, and a
# checkpoint of np 4 resumed at np 2 gives the straight run's: with Hugging Face's balance loss
# (np 4 P 4, resumed at np 2 P 1), and with the bias balance (its biases in the checkpoint) and a
# capacity that drops choices (np 4 hybrid 2 x 2 P 2, resumed at np 2 P 2).
MIX=(--config inputs/mixtral_tiny.toml --set train.steps=4 --set eval.every=0 --set train.batch_size=4
     --set train.micro_batch_size=1 --set train.deterministic=true --set train.peak_tflops=1)
for variant in aux bias; do
  extra=()
  # np 2 P 2 and zero1/zero2/hybrid at every np are test_moe's; here the CLI and its files.
  specs=("1 zero3 0 1" "4 zero3 0 4")
  resume_p=1
  if [ $variant = bias ]; then
    extra=(--set moe.balance=bias --set moe.bias_rate=0.01 --set moe.capacity_factor=1.0)
    specs=("1 zero3 0 1" "4 hybrid 2 2")
    resume_p=2
  fi
  for spec in "${specs[@]}"; do
    set -- $spec
    mpirun -np "$1" --oversubscribe "$TRAIN" "${MIX[@]}" "${extra[@]}" --set fsdp.strategy="$2" \
      --set fsdp.shard_group_size="$3" --set fsdp.expert_parallel="$4" --set checkpoint.every=2 \
      --set "checkpoint.dir=$WORK/$variant$1" --metrics "$WORK/$variant$1.jsonl" >"$WORK/out" 2>&1 ||
      bad "deterministic mixtral ($variant) at np $1 P $4: $(tail -3 "$WORK/out")"
  done
  mpirun -np 2 "$TRAIN" "${MIX[@]}" "${extra[@]}" --resume "$WORK/${variant}4/step_000002.h5" --set checkpoint.every=2 \
    --set fsdp.expert_parallel=$resume_p --set "checkpoint.dir=$WORK/${variant}res" >"$WORK/out" 2>&1 ||
    bad "resume at np 2 P $resume_p: $(tail -3 "$WORK/out")"
  same=0
  for other in "$WORK/${variant}4/step_000004.h5" "$WORK/${variant}res/step_000004.h5"; do
    "$CKPT" diff "$WORK/${variant}1/step_000004.h5" "$other" >"$WORK/diff" 2>&1 && same=$((same + 1)) ||
      echo "    $(tail -1 "$WORK/diff")"
  done
  detail=""
  if [ $variant = bias ]; then
    # The biases themselves: the same attribute in every file (h5dump prints its values).
    bias() { h5dump -a /moe_router_bias "$1" 2>/dev/null | sed -n '/DATA {/,/}/p'; }
    b1=$(bias "$WORK/bias1/step_000004.h5")
    b2=$(bias "$WORK/biasres/step_000004.h5")
    if [ -n "$b1" ] && [ "$b1" = "$b2" ] && [ "$b1" != "$(bias "$WORK/bias1/step_000002.h5")" ]; then
      detail="; the router biases (moved since step 2) equal"
    else
      same=0
      detail="; the router biases differ or never moved"
    fi
    detail+="; $(grep -m1 -o '"dropped_choices":[0-9]*' "$WORK/bias1.jsonl") at step 1"
  fi
  if [ "$same" = 2 ]; then ok "deterministic Mixtral ($variant): np 1, ${specs[1]} (np, strategy, shard group, expert parallel) and np 4 -> np 2 P $resume_p resumed write the same bits$detail"
  else bad "deterministic Mixtral ($variant): $same of 2 checkpoints equal np 1's$detail"; fi
done

# 4a. Experts divided over the ranks (zero3, P > 1, outside deterministic mode: each rank stores,
# gathers and reduces only its slice of the experts): a checkpoint of np 4 P 4 resumed at np 2
# P 2 (other slices) and at np 4 P 1 (stored whole) continues the straight run's curve.
DIV=(--config inputs/mixtral_tiny.toml --set eval.every=0 --set train.batch_size=8 --set train.micro_batch_size=2
     --set train.peak_tflops=1)
mpirun -np 4 --oversubscribe "$TRAIN" "${DIV[@]}" --set train.steps=4 --set fsdp.expert_parallel=4 --set checkpoint.every=2 \
  --set "checkpoint.dir=$WORK/div" --metrics "$WORK/div.jsonl" >"$WORK/div.log" 2>&1 || bad "divided experts at np 4 P 4: $(tail -3 "$WORK/div.log")"
grep -q "'experts' parts: 4 slices (expert parallel)" "$WORK/div.log" || bad "np 4 P 4 did not divide the experts: $(grep -m1 mesh "$WORK/div.log")"
for spec in "2 2" "4 1"; do
  set -- $spec
  mpirun -np "$1" --oversubscribe "$TRAIN" "${DIV[@]}" --set train.steps=4 --set fsdp.expert_parallel="$2" \
    --resume "$WORK/div/step_000002.h5" --metrics "$WORK/div_$1_$2.jsonl" >"$WORK/out" 2>&1 ||
    bad "resume of np 4 P 4 at np $1 P $2: $(tail -3 "$WORK/out")"
done
worst=$($PY - "$WORK/div.jsonl" "$WORK/div_2_2.jsonl" "$WORK/div_4_1.jsonl" <<'PYEOF'
import json, sys
def losses(f): return {r["step"]: r["loss"] for r in map(json.loads, open(f)) if "loss" in r and "step" in r}
a = losses(sys.argv[1])
print(max(abs(b[s] - a[s]) / abs(a[s]) for f in sys.argv[2:] for b in [losses(f)] for s in (3, 4)))
PYEOF
)
if [ -n "$worst" ] && $PY -c "import sys; sys.exit(not $worst < 1e-5)"; then
  ok "experts divided 4 ways (np 4 P 4) checkpointed, resumed at np 2 P 2 and np 4 P 1: steps 3-4 within $worst of the straight run"
else
  bad "divided experts' checkpoint: steps 3-4 differ by $worst"
fi

# 4b. The bias balance evens the experts' load: 80 steps of the tiny Qwen3-MoE without any
# balancing and with the bias, the busiest expert's share over the mean in the last 20.
for b in none bias; do
  mpirun -np 2 "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set train.steps=80 --set eval.every=0 \
    --set moe.balance=$b --set moe.bias_rate=0.01 --metrics "$WORK/bal_$b.jsonl" >"$WORK/out" 2>&1 ||
    bad "balance $b: $(tail -3 "$WORK/out")"
done
loads=$($PY - "$WORK/bal_none.jsonl" "$WORK/bal_bias.jsonl" <<'PYEOF'
import json, sys
def load(f):
    rs = [json.loads(l) for l in open(f) if '"expert_load"' in l]
    return sum(max(r["expert_load"]) for r in rs[-20:]) / 20
print(f"{load(sys.argv[1]):.2f} {load(sys.argv[2]):.2f}")
PYEOF
)
set -- $loads
if [ -n "$2" ] && $PY -c "import sys; sys.exit(not ($2 < 0.6 * $1))"; then
  ok "moe.balance = bias: the busiest expert's load over the mean, last 20 of 80 steps: $1 without balancing, $2 with the bias"
else
  bad "moe.balance = bias does not even the load: $loads"
fi

# 5. Router settings this version does not compute, and decks it cannot run: one line, an exit code.
$PY - "$WORK/q/hf" "$WORK/bad" <<'PYEOF'
import json, os, shutil, sys
src, out = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(src, "config.json")))
def case(name, **changes):
    d = os.path.join(out, name)
    shutil.copytree(src, d)
    json.dump(dict(cfg, **changes), open(os.path.join(d, "config.json"), "w"), indent=1)
case("shared_experts", shared_expert_intermediate_size=64)
case("sigmoid", scoring_func="sigmoid")
case("topk_above", num_experts_per_tok=5)
case("experts_disagree", num_experts=6)
PYEOF
# The first at np 2 (every rank stops on the one line), the others on one rank.
init=("$TRAIN" --config "$WORK/empty.toml" --set train.steps=0 --set "data.train=$WORK/val.txt"
  --set "data.val=$WORK/val.txt" --set train.batch_size=2 --set train.micro_batch_size=1 --init-from)
B="$WORK/bad"
expect_fail "shared experts" 5 "shared_experts/config.json: shared_expert_intermediate_size: shared experts are not computed" mpirun -np 2 "${init[@]}" "$B/shared_experts"
expect_fail "sigmoid scores" 5 "sigmoid/config.json: scoring_func: this version computes a softmax router only" "${init[@]}" "$B/sigmoid"
expect_fail "top-k above the experts" 5 "topk_above/config.json: num_experts_per_tok: 5 is above num_experts 4" "${init[@]}" "$B/topk_above"
expect_fail "experts the tensors contradict" 5 "model.layers.1.mlp.gate.weight: \[4, 64\], but num_experts 6" "${init[@]}" "$B/experts_disagree"
expect_fail "deck: top-k above the experts" 2 "model.experts_per_token: each token's experts must be at most model.n_experts = 8, got 9" \
  "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set model.experts_per_token=9
expect_fail "deck: experts on GPT-2" 2 "model.n_experts: GPT-2 has a dense MLP" \
  "$TRAIN" --config "$WORK/empty.toml" --set model.n_experts=4
expect_fail "deck: moe.* on a dense model" 2 "moe.capacity_factor: the model has no experts" \
  "$TRAIN" --config inputs/llama_tiny.toml --set moe.capacity_factor=1.5
expect_fail "deck: experts not divisible by P" 2 "fsdp.expert_parallel = 3 does not divide model.n_experts = 8" \
  "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set fsdp.expert_parallel=3
expect_fail "deck: P not dividing the shard group" 2 "fsdp.expert_parallel = 2 does not divide the shard group of 1 rank" \
  "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set fsdp.expert_parallel=2
expect_fail "deck: expert parallelism on a dense model" 2 "fsdp.expert_parallel: the model has no experts" \
  "$TRAIN" --config inputs/llama_tiny.toml --set fsdp.expert_parallel=2
expect_fail "deck: a layer list that is not one" 2 "model.mlp_only_layers: expected comma-separated layer indices" \
  "$TRAIN" --config inputs/qwen3_moe_tiny.toml --set model.mlp_only_layers=0,x

# 6. The published decks' counts.
for spec in "qwen3_30b_a3b 30,532,122,624 3,353,032,704" "mixtral_8x7b 46,702,792,704 12,879,925,248"; do
  set -- $spec
  line=$("$BUILD/fsdp-plan" --config "inputs/$1.toml" --ranks 8 2>&1 | head -1)
  if echo "$line" | grep -q "$2 parameters ($3 active)"; then ok "inputs/$1.toml: $line"
  else bad "inputs/$1.toml: $line"; fi
done
finish
