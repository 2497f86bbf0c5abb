#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inputs a careless or hostile user names (issue 44): a FIFO, a device or a directory where a
# file is read ends at once, named by its kind, never a wait (each case is bounded well under
# comm.timeout_s); config.json values out of the deck's ranges, 64-bit or fractional are refused
# as the file's keys (exit 5); safetensors offsets that overlap or leave gaps, and a NUL in an
# index's file name, are refused with the whole message; fsdp-sample and fsdp-plan arguments
# that mean nothing are refused (exit 2).
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

# 4. Arguments that mean nothing.
expect_end "fsdp-sample --temperature nan" 2 "--temperature: must be a finite number" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature nan
expect_end "fsdp-sample --temperature inf" 2 "--temperature: (must be a finite number|Value inf not in range)" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature inf
expect_end "fsdp-sample --temperature -1" 2 "--temperature" mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --temperature -1
expect_end "fsdp-sample --prompt with --prompt-ids" 2 "give either --prompt or --prompt-ids, not both" \
  mpirun -np 1 "$SAMPLE" "$WORK/rnd/hf" --prompt ab --prompt-ids 1,2
expect_end "fsdp-plan --budget 12XB" 2 "--budget: expected a byte count.*12XB" "$PLAN" --budget 12XB
expect_end "fsdp-plan --params 0" 2 "--params: expected a parameter count" "$PLAN" --params 0
expect_end "fsdp-plan Llama --head-dim 3" 2 "--head-dim: 3 for model.arch = \"llama\": .* is odd" \
  "$PLAN" --config inputs/llama_tiny.toml --params 1e9 --head-dim 3
finish
