#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Recursion, allocation and waits without a bound (issue 63, sections 2 and 3), through the
# programs: JSON nested 20,000 deep (a chat line, tokenizer.json's Sequence parts) and a chat
# template nested past the limit end in one line naming the file and "nested too deep (limit
# 256)", exit 3 (data/nesting.hpp); templates that loop for hours or grow a string without end
# spend the render's budget (data/chat/chat_budget.hpp), exit 3 within seconds, under a 4 GiB
# address-space limit; a JSONL number past double's range is the line's error; a vocabulary id
# of 2^31-1 is refused before anything is allocated for it, model.n_experts = 65536 by the
# deck's range (exit 2); an input truncated while prepare has it mapped is reported
# (FSDP_TEST_TRUNCATE_MAPPED), not a SIGBUS; a rank of fsdp-data that stops
# (FSDP_TEST_STOP_RANK) ends the job through the watchdog, which names it (exit 6).
# The templates' own cases, many more, are tests/unit/test_input_limits.cpp.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
DATA="$BUILD/fsdp-data"
SAMPLE="$BUILD/fsdp-sample"

# A byte-level tokenizer of 257 ids; `tokenizer DIR [PYTHON]`: PYTHON edits its dict t first.
tokenizer() {
  mkdir -p "$1"
  $PY - "$1" "${2:-pass}" <<'PYEOF'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256)); cs = bs[:]; n = 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): b for b, c in zip(bs, cs)}
bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
t = {"added_tokens": [{"id": 256, "content": "<|end|>", "special": True, "normalized": False,
     "single_word": False, "lstrip": False, "rstrip": False}], "normalizer": None,
     "pre_tokenizer": bl, "post_processor": None, "decoder": bl,
     "model": {"type": "BPE", "vocab": vocab, "merges": []}}
deep = None  # a part too deep for json.dump (it recurses): spliced into the text instead
exec(sys.argv[2])
text = json.dumps(t)
if deep: text = text.replace('"DEEP"', deep)
open(sys.argv[1] + "/tokenizer.json", "w").write(text)
json.dump({"eos_token": "<|end|>"}, open(sys.argv[1] + "/tokenizer_config.json", "w"))
PYEOF
}
tokenizer "$WORK/tok"
echo '{"text": "hello world"}' >"$WORK/ok.jsonl"
echo '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}' >"$WORK/chat.jsonl"
timeout 30 mpirun -np 1 "$DATA" prepare --tokenizer "$WORK/tok" --out "$WORK/ok.bin" "$WORK/ok.jsonl" \
  >"$WORK/prep" 2>&1 || bad "the tiny tokenizer's prepare: $(tail -2 "$WORK/prep")"

# 1. JSON nested 20,000 deep.
$PY -c "import sys; print('{\"text\": \"a\"}'); print('{\"messages\": [{\"role\": \"user\", \"content\": \"x\", \"k\": ' + '['*20000 + ']'*20000 + '}]}')" >"$WORK/deep.jsonl"
expect_end "a chat line nested 20,000 deep" 3 "deep.jsonl:2: JSON nested too deep \(limit 256\) at byte" \
  mpirun -np 2 "$DATA" prepare --tokenizer "$WORK/tok" --out "$WORK/o.bin" "$WORK/deep.jsonl"
printf '{"text": "a"}\n{"text": "a", "meta": 1e999999}\n' >"$WORK/huge.jsonl"
expect_end "a JSONL number past double's range" 3 "huge.jsonl:2: not usable JSON .*out_of_range.406" \
  mpirun -np 1 "$DATA" prepare --tokenizer "$WORK/tok" --out "$WORK/o.bin" "$WORK/huge.jsonl"
tokenizer "$WORK/deep_tok" "
t['normalizer'] = 'DEEP'; deep = '{\"type\": \"Sequence\", \"normalizers\": [' * 20000 + '{\"type\": \"NFC\"}' + ']}' * 20000"
# (Pre-tokenizers and post-processors nested so: test_input_limits.cpp, the same reader.)
DT="tokenizer.json: nested too deep \(limit 256\) at byte [0-9]+$"
expect_end "Sequence normalizers nested 20,000 deep: prepare" 3 "$DT" \
  mpirun -np 1 "$DATA" prepare --tokenizer "$WORK/deep_tok" --out "$WORK/o.bin" "$WORK/ok.jsonl"
expect_end "... info --tokenizer" 3 "$DT" mpirun -np 1 "$DATA" info "$WORK/ok.bin" --tokenizer "$WORK/deep_tok"
expect_end "... decode --tokenizer" 3 "$DT" mpirun -np 1 "$DATA" decode "$WORK/ok.bin" --tokenizer "$WORK/deep_tok"
for np in 1 2; do
  expect_end "... fsdp-sample --tokenizer at np $np" 3 "$DT" \
    mpirun -np $np "$SAMPLE" "$WORK/no_model" --tokenizer "$WORK/deep_tok" --prompt hi --tokens 1
done

# 2. Chat templates: nested past the limit; a loop of 10^15 steps; a string doubled 100 times.
template() {  # NAME SOURCE: a tokenizer directory whose chat_template.jinja is SOURCE
  rm -rf "$WORK/$1"; cp -r "$WORK/tok" "$WORK/$1"; printf '%s' "$2" >"$WORK/$1/chat_template.jinja"
}
template parens "{{ $($PY -c "print('('*6000 + '1' + ')'*6000)") }}"
expect_end "a template of 6,000 nested parentheses" 3 "parens/chat_template.jinja: chat_template: nested too deep \(limit 256\) at line 1" \
  mpirun -np 1 "$DATA" prepare --tokenizer "$WORK/parens" --out "$WORK/o.bin" "$WORK/chat.jsonl"
template loops "{% for i in range(99999) %}{% for j in range(99999) %}{% for k in range(99999) %}{% endfor %}{% endfor %}{% endfor %}"
expect_end "three nested range(99999) loops" 3 "loops/chat_template.jinja: chat_template: line 1: the template's work budget is spent" \
  mpirun -np 1 "$DATA" prepare --tokenizer "$WORK/loops" --out "$WORK/o.bin" "$WORK/chat.jsonl"
template doubling "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}"
expect_end "a string doubled 100 times (ulimit -v 4 GiB)" 3 "chat_template: line 1: a string past the template's size budget \(64 MiB\)" \
  bash -c "ulimit -v 4194304; exec mpirun -np 1 '$DATA' prepare --tokenizer '$WORK/doubling' --out '$WORK/o.bin' '$WORK/chat.jsonl'"
expect_end "fsdp-sample --chat with the deep template" 3 "parens/chat_template.jinja: chat_template: nested too deep \(limit 256\) at line 1" \
  mpirun -np 1 "$SAMPLE" "$WORK/no_model" --tokenizer "$WORK/parens" --chat --prompt hi --tokens 1

# 3. A vocabulary id of 2^31-1 (it cost gigabytes per rank before the error).
tokenizer "$WORK/big_id" "t['model']['vocab']['Ġhuge'] = 2**31 - 1"
expect_end "a vocabulary id of 2^31-1 (ulimit -v 4 GiB)" 3 "big_id/tokenizer.json: model.vocab.Ġhuge: id 2147483647 is out of range for 257 entries" \
  bash -c "ulimit -v 4194304; exec mpirun -np 1 '$DATA' prepare --tokenizer '$WORK/big_id' --out '$WORK/o.bin' '$WORK/ok.jsonl'"

# model.n_experts = 65536 ended in bad_alloc after 95 s: the deck's range is 0-1024 (the largest
# published mixture has 384 experts).
expect_end "model.n_experts = 65536" 2 "model.n_experts: expected an integer in \[0, 1024\], got 65536" \
  mpirun -np 1 "$TRAIN" --config inputs/mixtral_tiny.toml --set model.n_experts=65536

# 4. An input truncated while it is mapped (by "another process": the test hook).
$PY -c "
for i in range(3000): print('{\"text\": \"line %d of a file someone truncates while it is read\"}' % i)" >"$WORK/big.jsonl"
# To 0 bytes every page is gone (SIGBUS on each, answered with zeros); to 100 the first page
# stays, its tail zeros (no signal): both are reported from the file's size.
for cut in 0 100; do
  cp "$WORK/big.jsonl" "$WORK/cut.jsonl"
  FSDP_TEST_TRUNCATE_MAPPED=$cut expect_end "an input truncated to $cut bytes while mapped" 3 "cut.jsonl: changed size while being read" \
    mpirun -np $((cut ? 2 : 1)) "$DATA" prepare --tokenizer "$WORK/tok" --out "$WORK/o.bin" "$WORK/cut.jsonl"
done

# 5. A rank that stops: the other ends the job within the watchdog's time, naming it.
FSDP_TEST_STOP_RANK=1 expect_end "fsdp-data prepare with rank 1 stopped (--timeout 3)" 6 \
  "watchdog on rank 0 .*fsdp-data: waiting for another rank has not completed .*rank 1 \(silent [0-9.]+ s\) shows no sign of life" \
  mpirun -np 2 "$DATA" --timeout 3 prepare --tokenizer "$WORK/tok" --out "$WORK/o.bin" "$WORK/big.jsonl"
finish
