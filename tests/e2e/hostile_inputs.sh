#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inputs a careless or hostile user names (issue 44): a FIFO, a device or a directory where a
# file is read ends at once, named by its kind, never a wait (each case is bounded well under
# comm.timeout_s); config.json values out of the deck's ranges, 64-bit or fractional are refused
# as the file's keys (exit 5); safetensors offsets that overlap or leave gaps, and a NUL in an
# index's file name, are refused with the whole message; fsdp-sample and fsdp-plan arguments
# that mean nothing are refused (exit 2); shards that are links resolve inside the model
# directory or its Hugging Face cache's blobs/ or are refused (exit 5), a FIFO among them named
# as one, a text file never printed as a header length; a tokenizer larger than the model's
# vocabulary and a moe.aux_loss_coef below 0 other than -1 are refused (issue 63).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
SAMPLE="$BUILD/fsdp-sample"
PLAN="$BUILD/fsdp-plan"
mkfifo "$WORK/fifo"
: >"$WORK/empty.toml"  # the model's shape comes from the file
LL=(--config "$WORK/empty.toml" --set train.steps=0 --set eval.every=0 --set comm.timeout_s=5)

# 1. Not a regular file: refused by kind, at once, on every app.
expect_end "--init-from a FIFO" 5 "$WORK/fifo: is a FIFO" mpirun -np 2 "$TRAIN" "${LL[@]}" --init-from "$WORK/fifo"
expect_end "--init-from /dev/zero" 5 "/dev/zero: is a character device" mpirun -np 2 "$TRAIN" "${LL[@]}" --init-from /dev/zero
expect_end "--config a FIFO" 2 "$WORK/fifo: cannot read run deck: is a FIFO" mpirun -np 2 "$TRAIN" --config "$WORK/fifo"
expect_end "--config a directory" 2 "$WORK: cannot read run deck: is a directory" mpirun -np 1 "$TRAIN" --config "$WORK"
expect_end "data.train a FIFO" 3 "$WORK/fifo: cannot read token file: is a FIFO" \
  mpirun -np 1 "$TRAIN" "${LL[@]}" --set data.train="$WORK/fifo"
expect_end "fsdp-sample's model a FIFO" 5 "$WORK/fifo: is a FIFO" mpirun -np 1 "$SAMPLE" "$WORK/fifo"
expect_end "fsdp-plan --config a FIFO" 2 "$WORK/fifo: cannot read run deck: is a FIFO" "$PLAN" --config "$WORK/fifo"
expect_end "fsdp-plan --machine a FIFO" 1 "$WORK/fifo: cannot read machine file: is a FIFO" "$PLAN" --machine "$WORK/fifo"
expect_end "fsdp-plan --machine /dev/zero" 1 "/dev/zero: cannot read machine file: is a character device" "$PLAN" --machine /dev/zero

# 2. config.json values: the file's key, exit 5; HF's default where the key is missing.
$PY "$SRC/tests/reference/llama_check.py" random-model "$WORK/rnd" >/dev/null 2>&1 || bad "random-model"
# with_config NAME PYTHON: a copy of the random Llama whose config.json (c) PYTHON changed.
with_config() {
  rm -rf "$WORK/$1"; cp -r "$WORK/rnd/hf" "$WORK/$1"
  $PY -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); $2; json.dump(c, open(p,'w'))" "$WORK/$1/config.json"
}
cj_fails() {  # NAME PYTHON PATTERN
  with_config "$1" "$2"
  expect_end "config.json: $1" 5 "$WORK/$1/config.json: $3" mpirun -np 1 "$TRAIN" "${LL[@]}" --init-from "$WORK/$1"
}
cj_fails theta_huge "c['rope_theta']=1e308" "rope_theta: 1e\+308 is not in"
cj_fails eps_half "c['rms_norm_eps']=0.5" "rms_norm_eps: 0.5 is not in"
cj_fails factor_huge "c['rope_scaling']['factor']=1e308" "factor: 1e\+308 is not in"
cj_fails positions_zero "c['max_position_embeddings']=0" "max_position_embeddings: 0 is not in"
cj_fails positions_2p40 "c['max_position_embeddings']=2**40" "max_position_embeddings: 1099511627776 is not in"
cj_fails positions_2p32 "c['max_position_embeddings']=2**32+16" "max_position_embeddings: 4294967312 is not in"
cj_fails original_fraction "c['rope_scaling']['original_max_position_embeddings']=64.5" \
  "original_max_position_embeddings: 64.5 is not an integer"
cj_fails rope_type_number "c['rope_scaling']['rope_type']=3" "rope_scaling.rope_type: not a string"
with_config positions_missing "del c['max_position_embeddings']"
if timeout 60 mpirun -np 1 "$TRAIN" "${LL[@]}" --init-from "$WORK/positions_missing" >"$WORK/out" 2>&1; then
  ok "config.json without max_position_embeddings: read with Hugging Face's default (2048)"
else bad "config.json without max_position_embeddings: $(tail -2 "$WORK/out")"; fi

# 3. safetensors offsets that do not tile the data region; a NUL in an index's file name.
st_edit() {  # NAME PYTHON: a copy whose header (h, a dict) PYTHON changed, same data bytes
  rm -rf "$WORK/$1"; cp -r "$WORK/rnd/hf" "$WORK/$1"
  $PY - "$WORK/$1/model.safetensors" "$2" <<'PYEOF'
import json, struct, sys
p, edit = sys.argv[1], sys.argv[2]
b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
names = sorted((k for k in h if k != '__metadata__'), key=lambda k: h[k]['data_offsets'][0])
exec(edit)
t = json.dumps(h).encode(); t += b' ' * (-len(t) % 8)
open(p, 'wb').write(struct.pack('<Q', len(t)) + t + data)
PYEOF
}
# Swap the second tensor's offsets onto the first's bytes (same size needed: use two norms).
st_edit overlap "a=[k for k in names if k.endswith('layernorm.weight')]; h[a[1]]['data_offsets']=h[a[0]]['data_offsets']"
expect_end "safetensors offsets that overlap" 5 "overlap.*model.safetensors: .*data_offsets begin at .*\(they overlap\)" \
  mpirun -np 1 "$TRAIN" "${LL[@]}" --init-from "$WORK/overlap"
st_edit gap "data = data + b'\\0' * 64"
expect_end "safetensors data no tensor covers" 5 "gap/model.safetensors: the tensors cover .* of the .* data bytes" \
  mpirun -np 1 "$TRAIN" "${LL[@]}" --init-from "$WORK/gap"
rm -rf "$WORK/nul"; cp -r "$WORK/rnd/hf_sharded" "$WORK/nul"
$PY -c "import json,sys; p=sys.argv[1]; j=json.load(open(p)); k=next(iter(j['weight_map'])); j['weight_map'][k]='a\u0000b.safetensors'; json.dump(j,open(p,'w'))" \
  "$WORK/nul/model.safetensors.index.json"
expect_end "a NUL in an index's file name" 5 'a\\x00b\.safetensors' mpirun -np 1 "$TRAIN" "${LL[@]}" --init-from "$WORK/nul"

# 5. Shards that are links (issue 63; singletons, no mpirun: its teardown after a failure costs
# 2 s a case): into the directory's own Hugging Face cache's blobs/
# (snapshots/<rev>/<file> -> ../../blobs/<hash>) they are read; elsewhere refused naming where
# they point; a FIFO named as a shard is named as one; a file that is not safetensors is
# refused without its bytes printed as a header length.
S1=model-00001-of-00002.safetensors
HUB="$WORK/hub/models--org--tiny"
mkdir -p "$HUB/blobs" "$HUB/snapshots/rev1"
for f in "$WORK"/rnd/hf_sharded/*; do
  n=$(basename "$f"); cp "$f" "$HUB/blobs/blob-$n"; ln -s "../../blobs/blob-$n" "$HUB/snapshots/rev1/$n"
done
expect_end "a Hugging Face cache snapshot (shards linked into blobs/)" 0 "val loss|parameters|params" \
  "$TRAIN" "${LL[@]}" --init-from "$HUB/snapshots/rev1" --set eval.sequences=2 \
  --set train.batch_size=1 --set train.micro_batch_size=1 --set data.val=builtin:val
rm -rf "$WORK/out_link"; cp -r "$WORK/rnd/hf_sharded" "$WORK/out_link"
mv "$WORK/out_link/$S1" "$WORK/elsewhere.safetensors"; ln -s "$WORK/elsewhere.safetensors" "$WORK/out_link/$S1"
expect_end "a shard linked outside the model directory" 5 "-> $S1: a link to $WORK/elsewhere.safetensors, outside the model directory" \
  "$TRAIN" "${LL[@]}" --init-from "$WORK/out_link"
rm -rf "$WORK/shard_fifo"; cp -r "$WORK/rnd/hf_sharded" "$WORK/shard_fifo"; rm "$WORK/shard_fifo/$S1"; mkfifo "$WORK/shard_fifo/$S1"
expect_end "a FIFO named in weight_map" 5 "-> $S1: a FIFO, not a regular file" \
  "$TRAIN" "${LL[@]}" --init-from "$WORK/shard_fifo"
rm -rf "$WORK/passwd"; cp -r "$WORK/rnd/hf_sharded" "$WORK/passwd"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$WORK/passwd/$S1"
expect_end "a shard that is a text file" 5 "$S1: header: length \(the first 8 bytes, not shown\) points past the end of the file \(32 bytes\): not a safetensors file" \
  "$TRAIN" "${LL[@]}" --init-from "$WORK/passwd"
grep -q -E '[0-9]{12,}' "$WORK/err" && bad "the message prints the file's bytes as a number: $(head -1 "$WORK/err")" ||
  ok "the message prints no number made of the file's bytes"

# 4. Arguments that mean nothing.
expect_end "fsdp-sample --temperature nan" 2 "--temperature: must be a finite number" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature nan
expect_end "fsdp-sample --temperature inf" 2 "--temperature: (must be a finite number|Value inf not in range)" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature inf
expect_end "fsdp-sample --temperature -1" 2 "--temperature" mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature -1
expect_end "fsdp-sample --prompt with --prompt-ids" 2 "give either --prompt or --prompt-ids, not both" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --prompt ab --prompt-ids 1,2
# A tokenizer with more ids than the model's vocabulary (the random model has 256): refused at
# start naming the tokenizer; a --prompt-ids token past the vocabulary blames --prompt-ids.
mkdir -p "$WORK/tok257"
$PY - "$WORK/tok257" <<'PYEOF'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256)); cs = bs[:]; n = 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): b for b, c in zip(bs, cs)}
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
json.dump({"added_tokens": [{"id": 256, "content": "<|end|>", "special": True, "normalized": False,
           "single_word": False, "lstrip": False, "rstrip": False}], "normalizer": None,
           "pre_tokenizer": bl, "post_processor": None, "decoder": bl,
           "model": {"type": "BPE", "vocab": vocab, "merges": []}}, open(sys.argv[1] + "/tokenizer.json", "w"))
json.dump({"eos_token": "<|end|>"}, open(sys.argv[1] + "/tokenizer_config.json", "w"))
PYEOF
expect_end "fsdp-sample --tokenizer larger than the model's vocabulary" 3 "tok257: the tokenizer's vocabulary \(257 ids\) is larger than the model's vocab_size 256" \
  "$SAMPLE" "$WORK/rnd/hf" --tokenizer "$WORK/tok257" --prompt hi --tokens 2
expect_end "fsdp-sample --prompt-ids past the vocabulary" 2 "--prompt-ids: token 300 is not below the model's vocab_size 256" \
  "$SAMPLE" "$WORK/rnd/hf" --prompt-ids 1,300 --tokens 2
expect_end "moe.aux_loss_coef = -0.5" 2 "moe.aux_loss_coef: expected -1 \(model.router_aux_loss_coef\) or a weight from 0 to 1000, got -0.5" \
  "$TRAIN" --config inputs/default.toml --set moe.aux_loss_coef=-0.5
expect_end "fsdp-plan --budget 12XB" 2 "--budget: expected a byte count.*12XB" "$PLAN" --budget 12XB
expect_end "fsdp-plan --params 0" 2 "--params: expected a parameter count" "$PLAN" --params 0
expect_end "fsdp-plan Llama --head-dim 3" 2 "--head-dim: 3 for model.arch = \"llama\": .* is odd" \
  "$PLAN" --config inputs/llama_tiny.toml --params 1e9 --head-dim 3
finish
