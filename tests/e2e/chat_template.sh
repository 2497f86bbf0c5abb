#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp::ChatTemplate against transformers' own apply_chat_template (tokenize=False, the pinned
# reference environment, offline; tests/reference/chat_render.py) on the real Llama 3 and Qwen3
# templates and tokenizers: system, user and assistant turns, CJK, Arabic, emoji ZWJ sequences,
# NFD accents, content needing trim, Qwen3's <think> in content, reasoning_content and its
# aliases (thinking, reasoning), tool calls (arguments as a dict in non-sorted key order, and as
# a string) and tool turns, null values, a chat's own "tools" list, with and without the
# generation prompt. Also Llama's tool template that puts the tools in the first user message
# (Llama 4's, which transformers itself ships in models/llama4/processing_llama4.py: taken from
# the installed package as chat_template.jinja beside Llama 3's config, which it must win over),
# and named templates ("tool_use" for chats with tools, "default" for the others). The text
# must be byte-identical (a chat transformers refuses, fsdp refuses), and the trained segments
# exactly those the rule of docs/data.md predicts, found there independently.
source "$(dirname "$0")/lib.sh"
R=${CHAT_RENDER:-$BUILD/tests/chat_render}
REF="$SRC/tests/reference/chat_render.py"

ref_python transformers jinja2
tokenizer_data

# Llama's tools-in-the-first-user-message template, and named templates on Qwen3's tokenizer:
# "default" writes a first line of its own, so which one rendered shows in the text.
mkdir -p "$WORK/llama_tools" "$WORK/named"
cp "$LLAMA3"/tokenizer.json "$LLAMA3"/tokenizer_config.json "$WORK/llama_tools/"
cp "$QWEN3"/tokenizer.json "$WORK/named/"
"$REFPY" - "$WORK" "$QWEN3" <<'EOF' || bad "writing the templates failed"
import json, sys
from transformers.models.llama4 import processing_llama4
work, qwen3 = sys.argv[1:]
open(work + "/llama_tools/chat_template.jinja", "w").write(processing_llama4.chat_template)
config = json.load(open(qwen3 + "/tokenizer_config.json"))
config["chat_template"] = [{"name": "default", "template": "{{- 'default\\n' }}" + config["chat_template"]},
                           {"name": "tool_use", "template": config["chat_template"]}]
json.dump(config, open(work + "/named/tokenizer_config.json", "w"))
EOF

# Every case rendered by fsdp's chat_render; the cases without the generation prompt also as
# chat lines (with their own "tools" where they have them) through fsdp-data prepare and decode.
# Then all compared in one Python process: the text of each decoded document must be
# apply_chat_template(messages, tools=...)'s (as the tokenizer's normalizer leaves it: Qwen3's
# is NFC), then the document end.
DATA=${FSDP_DATA:-$BUILD/fsdp-data}
CHECKS=()
render() {  # render LABEL DIR END_OF_TURN
  local name=$1 dir=$2 eot=$3
  "$REFPY" "$REF" cases "$dir" "$WORK/$name.cases.json" || { bad "$name: writing the cases failed"; return; }
  "$R" "$dir" "$WORK/$name.cases.json" "$WORK/$name.ours.json" 2>"$WORK/err" ||
    { bad "$name: chat_render failed: $(tail -2 "$WORK/err")"; return; }
  CHECKS+=(render "$name" "$dir" "$WORK/$name.cases.json" "$WORK/$name.ours.json" "$eot")
}
prepared() {  # prepared LABEL (rendered above) DIR EOS
  local name=$1 dir=$2 eos=$3
  "$REFPY" "$REF" jsonl "$WORK/$name.cases.json" "$WORK/$name.jsonl" || { bad "$name: writing the chat lines failed"; return; }
  "$DATA" prepare --tokenizer "$dir" --eos "$eos" --out "$WORK/$name.bin" "$WORK/$name.jsonl" \
    >"$WORK/out" 2>&1 || { bad "$name prepare: $(tail -2 "$WORK/out")"; return; }
  "$DATA" decode "$WORK/$name.bin" --tokenizer "$dir" --tokens 0: >"$WORK/$name.got" 2>"$WORK/err" ||
    { bad "$name decode: $(tail -2 "$WORK/err")"; return; }
  CHECKS+=(decoded "$name prepare" "$dir" "$WORK/$name.cases.json" "$WORK/$name.got" "$eos")
}
render llama3 "$LLAMA3" '<|eot_id|>'
render qwen3 "$QWEN3" $'<|im_end|>\n'
render llama_tools "$WORK/llama_tools" '<|eot|>'
render named "$WORK/named" $'<|im_end|>\n'
prepared qwen3 "$QWEN3" '<|endoftext|>'
prepared llama_tools "$WORK/llama_tools" '<|end_of_text|>'
"$REFPY" "$REF" check "${CHECKS[@]}" >"$WORK/cmp" 2>&1
for (( k = 1; k < ${#CHECKS[@]}; k += 6 )); do
  name=${CHECKS[k]}
  last=$(grep "^$name: " "$WORK/cmp" | tail -1)
  if [ "${last#"$name: ok: "}" != "$last" ]; then ok "$name: ${last#"$name: ok: "}"; else
    bad "$name: ${last:-no result: $(tail -3 "$WORK/cmp")}"
    grep "^$name: FAIL" "$WORK/cmp" | head -10 | sed 's/^/    /'
  fi
done

# A malformed "tools" is one line naming file:line, exit 3.
{ echo '{"messages": [{"role": "user", "content": "hi"}], "tools": []}'
  echo '{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"description": "no name"}}]}'
} >"$WORK/badtools.jsonl"
expect_fail "tools without a name" 3 \
  "^fsdp-data: .*badtools.jsonl:2: \"tools\"\[0\].function: \"name\" is missing$" \
  "$DATA" prepare --tokenizer "$QWEN3" --out "$WORK/bad.bin" "$WORK/badtools.jsonl"

# A config without a template is one line naming the file.
mkdir -p "$WORK/none"
echo '{"eos_token": "</s>"}' >"$WORK/none/tokenizer_config.json"
echo '[]' >"$WORK/empty.json"
expect_fail "no template" 1 "none/tokenizer_config.json: chat_template: missing \(this model has no chat template\)" \
  "$R" "$WORK/none" "$WORK/empty.json" "$WORK/out.json"
finish
