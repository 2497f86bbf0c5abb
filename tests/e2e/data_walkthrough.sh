#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# docs/data.md's walk-through, run as written (the block between its walkthrough markers, with
# MODEL, DATA, NP, DECK and EOS set here): a tiny random Qwen3ForCausalLM (numpy-written) carrying
# the real Qwen3 tokenizer (../shared/data/tokenizers, tokenizer_data in lib.sh; SKIPPED without
# it), text, prompt/completion and chat data, two ranks. Then the exported directory's eval loss
# in the float64 PyTorch Qwen3 (packed documents, the mask fsdp-data wrote) against the eval loss
# fsdp-train logged for the same weights.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
tokenizer_data

# The model: Qwen3's 151,936-row vocabulary on one tiny layer, and its tokenizer files.
$PY "$SRC/tests/reference/llama_check.py" random-model "$WORK/rnd" --qwen3 1 --layers 1 --embd 32 \
  --heads 2 --kv 1 --headdim 16 --ffn 48 --vocab 151936 --scaling none --theta 1000000 --tied 1 \
  >/dev/null || bad "random-model"
export MODEL="$WORK/rnd/hf" DATA="$WORK/data" NP=2 DECK="$WORK/tiny.toml" EOS='<|endoftext|>'
cp "$QWEN3/tokenizer.json" "$QWEN3/tokenizer_config.json" "$MODEL/"
mkdir -p "$DATA/train" "$DATA/val"
$PY - "$DATA" <<'PY'
import json, random, sys
d = sys.argv[1]
random.seed(5)
words = ["data", "Grüße", "数据", "данные", "🙂", "naïve", "it's", "2026", "model", "فرح"]
say = lambda n: " ".join(random.choice(words) for _ in range(n))
for part, n in (("train", 30), ("val", 12)):
    open(f"{d}/{part}/notes.txt", "w").write(say(80) + "\n")
    with open(f"{d}/{part}/mixed.jsonl", "w") as f:
        for i in range(n):
            kind = i % 3
            if kind == 0:
                row = {"text": say(20)}
            elif kind == 1:
                row = {"prompt": say(8) + "?", "completion": " " + say(10)}
            else:
                row = {"messages": [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": say(6)},
                                    {"role": "assistant", "content": say(9)},
                                    {"role": "user", "content": say(4)},
                                    {"role": "assistant", "content": say(7)}]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
PY
cat >"$DECK" <<'TOML'
[train]
steps = 4
batch_size = 4
micro_batch_size = 1
lr = 1e-3
warmup_steps = 1
peak_tflops = 1
[model]
block_size = 32
[data]
format = "llmc"
packing = "documents"
[eval]
every = 0
sequences = 4
[checkpoint]
every = 4
TOML

# The block as the documentation has it, minus the lines that set the four names.
sed -n '/<!-- walkthrough:begin -->/,/<!-- walkthrough:end -->/p' "$SRC/docs/data.md" |
  grep -v -e '^<!--' -e '^```' -e '^MODEL=' -e '^DATA=' -e '^NP=' -e '^DECK=' -e '^EOS=' \
    -e '^  *# (Qwen3' >"$WORK/walk.sh"
[ "$(grep -c 'fsdp-' "$WORK/walk.sh")" -ge 6 ] || bad "the walk-through block was not found in docs/data.md"
mkdir -p "$WORK/run"
(cd "$WORK/run" && PATH="$BUILD:$PATH" bash -e "$WORK/walk.sh") >"$WORK/walk.log" 2>&1 ||
  bad "the walk-through failed: $(tail -5 "$WORK/walk.log")"
R="$WORK/run"
if [ -f "$R/finetuned/model.safetensors" ] && grep -q '"documents"' <(PATH="$BUILD:$PATH" fsdp-data info "$R/train.bin" --json); then
  ok "walk-through: $(PATH="$BUILD:$PATH" fsdp-data info "$R/train.bin" --json)"
else
  bad "walk-through outputs: $(ls "$R" "$R/finetuned" 2>&1 | tr '\n' ' ')"
fi
grep -q -v '^$' <(tail -1 "$WORK/walk.log") && ok "fsdp-sample --chat answered: $(tail -1 "$WORK/walk.log" | cut -c1-60)"
# Generation stops at the model's end tokens: name the first token greedy decoding picks as
# generation_config.json's eos_token_id, and the answer is that one token.
S=(--tokenizer "$R/finetuned" --prompt "data" --temperature 0 --ids)
first=$("$BUILD/fsdp-sample" "$R/finetuned" "${S[@]}" --tokens 6 2>/dev/null | tail -1)
prompt_len=$("$BUILD/fsdp-sample" "$R/finetuned" "${S[@]}" --tokens 0 2>/dev/null | tail -1 | wc -w)
stop=$(echo "$first" | cut -d' ' -f$((prompt_len + 1)))
echo "{\"eos_token_id\": [1, $stop]}" >"$R/finetuned/generation_config.json"
stopped=$("$BUILD/fsdp-sample" "$R/finetuned" "${S[@]}" --tokens 6 2>/dev/null | tail -1)
if [ "$(echo "$first" | wc -w)" -eq $((prompt_len + 6)) ] && [ "$stopped" = "$(echo "$first" | cut -d' ' -f1-$((prompt_len + 1)))" ]; then
  ok "fsdp-sample --tokenizer stops at generation_config.json's eos_token_id ($stop): $stopped"
else
  bad "fsdp-sample stop tokens: without '$first', with $stop '$stopped'"
fi
st=$(grep -o '"eval_loss":[^,}]*' "$R/finetune.jsonl" | tail -1 | cut -d: -f2)
ref=$(ref_python torch transformers safetensors && "$REFPY" "$SRC/tests/reference/hf_transformers.py" eval-loss "$R/finetuned" "$R/val.bin" 32 4 mask)
if $PY -c "import sys; a, b = float('$st'), float('$ref'); sys.exit(abs(a - b) > 1e-5 * abs(b))" 2>/dev/null; then
  ok "the exported fine-tuned model: fsdp's eval loss $st, transformers' float64 Qwen3 on the same packed, masked windows $ref"
else
  bad "the exported fine-tuned model: fsdp's eval loss $st, transformers' float64 Qwen3 $ref"
fi
finish
