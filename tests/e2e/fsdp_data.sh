#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp-data prepare/info/decode end to end with the real Llama 3.1 tokenizer. .txt files and
# JSONL files of each shape (Unicode, blank lines, shapes mixed in a file, chats) give the same
# bytes at np 1, 2 and 3; the .bin and .trained files equal, byte for byte, what
# tests/e2e/fsdp_data_check.py writes with transformers' own tokenizer (AutoTokenizer from the
# directory, offline, the pinned reference environment) from documents Python reads from the
# inputs on its own (chats rendered by apply_chat_template and split at the assistant turns by
# tests/reference/chat_render.py); info's counts agree; decode gives the text back; the file
# trains; GPT-2's vocabulary (a tokenizer.json built from tiktoken's ranks by
# tests/reference/hf_tokenizer.py) gives uint16 files; Qwen3's template, which ends turns with its
# eos_token, gets one warning. Every malformed input is refused with exit 3 and one line naming
# file and line, leaving no file behind and an older OUT.bin as it was. Without the reference
# environment or the real tokenizer files (tests/e2e/lib.sh) the test prints SKIPPED.
source "$(dirname "$0")/lib.sh"
DATA="$BUILD/fsdp-data"
REF="$SRC/tests/reference/hf_tokenizer.py"
CHECK="$SRC/tests/e2e/fsdp_data_check.py"
ref_python transformers tokenizers jinja2
tokenizer_data
L31="$WORK/llama31"  # Llama 3.1's post-processor: the BOS comes from the tokenizer
"$REFPY" "$REF" template "$LLAMA3" "$L31" || { bad "llama31 files"; finish; exit 1; }
# np 1 without mpirun: a singleton starts faster.
run() { if [ "$1" -eq 1 ]; then "${@:2}"; else mpirun -np "$1" "${@:2}"; fi; }

# The inputs: Unicode in every file, a JSONL file of each shape, one mixing them, blank lines,
# a last line without its newline, and enough lines that np 3 cuts inside files.
IN="$WORK/in"
mkdir -p "$IN"
printf 'Grüße aus Köln — naïve café, 東京タワー, Привет, مرحبا 👩‍👩‍👧 🇯🇵\n\tTabs  and  spaces.\r\n' >"$IN/a.txt"
printf 'A second file: 1234567 digits, ﬁ ligature, e\xcc\x81 (NFD).' >"$IN/b.txt"
python3 - "$IN" <<'PY'
import json, sys
d = sys.argv[1]
words = ['hello', 'wörld', '数据', 'данные', '🙂', 'naïve', "it's", '2026', 'Ωμέγα', 'بيانات']
def text(i, n):
    return ' '.join(words[(i * 7 + k * 3) % len(words)] for k in range(n))
with open(d + '/text.jsonl', 'w') as f:
    for i in range(120):
        f.write(json.dumps({'text': text(i, 5 + i % 9)}, ensure_ascii=i % 2 == 0) + '\n')
        if i % 17 == 0: f.write('\n')
with open(d + '/pc.jsonl', 'w') as f:
    for i in range(80):
        f.write(json.dumps({'prompt': 'Q%d: %s?' % (i, text(i, 3)), 'completion': ' ' + text(i + 1, 4)}) + '\n')
def chat(i):
    m = [{'role': 'system', 'content': 'Answer in ' + words[i % len(words)]}] if i % 2 else []
    for k in range(1 + i % 3):
        m += [{'role': 'user', 'content': text(i + k, 4) + '?'},
              {'role': 'assistant', 'content': ' ' + text(i + k + 1, 3 + k) + '\n'}]
    return {'messages': m}
with open(d + '/chat.jsonl', 'w') as f:
    for i in range(40):
        f.write(json.dumps(chat(i), ensure_ascii=i % 3 == 0) + '\n')
with open(d + '/mixed.jsonl', 'w') as f:
    for i in range(60):
        o = {'text': text(i, 6), 'id': i} if i % 3 else {'prompt': text(i, 2), 'completion': text(i, 3)}
        if i % 10 == 5: o = chat(i)
        f.write(json.dumps(o, ensure_ascii=False) + ('\n' if i < 59 else ''))
with open(d + '/nochat.jsonl', 'w') as f:
    for i in range(30):
        f.write(json.dumps({'prompt': text(i, 2), 'completion': text(i, 3)}) + '\n')
PY
INPUTS=("$IN/a.txt" "$IN/text.jsonl" "$IN/chat.jsonl" "$IN/pc.jsonl" "$IN/b.txt" "$IN/mixed.jsonl")
GPT2_INPUTS=("$IN/a.txt" "$IN/text.jsonl" "$IN/pc.jsonl" "$IN/b.txt" "$IN/nochat.jsonl")  # no template
"$REFPY" "$REF" gpt2 "$TIKTOKEN" "$WORK/gpt2" || bad "writing GPT-2's tokenizer.json"

# What transformers writes for each run checked below, in one process (its import takes seconds),
# beside fsdp-data's runs.
"$REFPY" "$CHECK" expect "$L31" 128001 "$WORK/want.bin" "${INPUTS[@]}" \
  -- "$QWEN3" 151643 "$WORK/qwant.bin" "$IN/chat.jsonl" "$IN/pc.jsonl" \
  -- "$WORK/gpt2" 50256 "$WORK/gwant.bin" "${GPT2_INPUTS[@]}" >"$WORK/expect.log" 2>&1 &
EXPECT=$!

for np in 1 2 3; do
  run $np "$DATA" prepare --tokenizer "$L31" --out "$WORK/np$np.bin" "${INPUTS[@]}" >"$WORK/out.$np" 2>&1 ||
    bad "prepare at np $np: $(tail -2 "$WORK/out.$np")"
done
if cmp "$WORK/np1.bin" "$WORK/np2.bin" && cmp "$WORK/np1.bin" "$WORK/np3.bin" &&
   cmp "$WORK/np1.bin.trained" "$WORK/np2.bin.trained" && cmp "$WORK/np1.bin.trained" "$WORK/np3.bin.trained"; then
  ok "np 1, 2, 3: identical .bin and .trained ($(tail -1 "$WORK/out.3"))"
else bad "the outputs at np 1, 2, 3 differ"; fi

"$DATA" info "$WORK/np1.bin" --vocab 128256 --json >"$WORK/info.json" || bad "info: $(cat "$WORK/info.json")"
wait $EXPECT || bad "transformers' files: $(tail -3 "$WORK/expect.log")"
"$REFPY" "$CHECK" check "$WORK/want.bin" "$WORK/np1.bin" "$WORK/info.json" >"$WORK/cmp" 2>&1
if grep -q '^ok:' "$WORK/cmp"; then ok "llama3.1: $(sed 's/^ok: //' "$WORK/cmp")"
else bad "llama3.1 against transformers: $(tail -3 "$WORK/cmp")"; fi
grep -q '"fits_vocab":true' "$WORK/info.json" && grep -q '"vocab_size":128256' "$WORK/info.json" &&
  ok "info: the ids fit the vocabulary of 128256" || bad "info: $(cat "$WORK/info.json")"

# decode: the first document is a.txt between BOS and EOS; --tokens gives a slice.
{ printf '<|begin_of_text|>'; cat "$IN/a.txt"; printf '<|end_of_text|>'; } >"$WORK/doc0.want"
"$DATA" decode "$WORK/np1.bin" --tokenizer "$L31" >"$WORK/doc0.got" &&
  cmp -s "$WORK/doc0.want" "$WORK/doc0.got" && ok "decode: document 0 is a.txt between BOS and EOS" ||
  bad "decode of document 0: $(head -c 200 "$WORK/doc0.got")"

grep -q warning "$WORK/out.1" && bad "a warning for Llama 3.1's chats: $(grep warning "$WORK/out.1")"

# Qwen3's eos_token <|im_end|> ends every turn: one warning line, suggesting <|endoftext|>.
run 1 "$DATA" prepare --tokenizer "$QWEN3" --out "$WORK/q.bin" "$IN/chat.jsonl" >"$WORK/qout" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c 'warning' "$WORK/qout")" -eq 1 ] &&
   grep -q "split at every turn.*--eos '<|endoftext|>'" "$WORK/qout"; then ok "qwen3: $(grep warning "$WORK/qout")"
else bad "qwen3's warning: $(cat "$WORK/qout")"; fi

# Qwen3's template with the document end named: ids, mask and info against transformers'.
run 2 "$DATA" prepare --tokenizer "$QWEN3" --eos '<|endoftext|>' \
  --out "$WORK/q2.bin" "$IN/chat.jsonl" "$IN/pc.jsonl" >"$WORK/qout2" 2>&1 || bad "qwen3 prepare: $(tail -2 "$WORK/qout2")"
"$DATA" info "$WORK/q2.bin" --json >"$WORK/qinfo.json"
"$REFPY" "$CHECK" check "$WORK/qwant.bin" "$WORK/q2.bin" "$WORK/qinfo.json" >"$WORK/qcmp" 2>&1
if grep -q '^ok:' "$WORK/qcmp"; then ok "qwen3: $(sed 's/^ok: //' "$WORK/qcmp")"
else bad "qwen3 against transformers: $(tail -3 "$WORK/qcmp")"; fi

# The file is training data: a one-step run reads it as llm.c tokens of Llama 3's vocabulary.
if "$TRAIN" --config inputs/default.toml --set model.n_layer=1 --set model.n_embd=16 \
    --set model.n_head=2 --set model.block_size=16 --set model.vocab_size=128256 \
    --set train.steps=1 --set train.batch_size=1 --set train.micro_batch_size=1 --set eval.every=0 \
    --set eval.sequences=0 --set data.format=llmc --set "data.train=$WORK/np1.bin" \
    --set "data.val=$WORK/np1.bin" >"$WORK/train.log" 2>&1; then ok "fsdp-train takes it as data.train (1 step)"
else bad "fsdp-train on it: $(tail -3 "$WORK/train.log")"; fi

# GPT-2 (vocabulary 50,257, no eos_token of its own here): uint16 tokens, written by 2 ranks,
# and --eos by the token's text.
run 2 "$DATA" prepare --tokenizer "$WORK/gpt2" --eos '<|endoftext|>' --out "$WORK/g2.bin" \
  "${GPT2_INPUTS[@]}" >"$WORK/gout" 2>&1 || bad "gpt2 prepare at np 2: $(tail -2 "$WORK/gout")"
"$DATA" info "$WORK/g2.bin" --vocab 50257 --json >"$WORK/ginfo.json"
"$REFPY" "$CHECK" check "$WORK/gwant.bin" "$WORK/g2.bin" "$WORK/ginfo.json" >"$WORK/cmp" 2>&1
if grep -q '^ok:' "$WORK/cmp"; then ok "gpt2 at np 2: $(sed 's/^ok: //' "$WORK/cmp")"
else bad "gpt2 against transformers: $(tail -3 "$WORK/cmp")"; fi

# Refusals, on a byte-level tokenizer that loads at once. Each: exit 3, one line
# "fsdp-data: FILE:LINE: ...", no OUT.bin, mask or temporary left, and an older OUT.bin intact.
TINY="$WORK/tiny"
mkdir -p "$TINY" "$WORK/bad" && python3 "$CHECK" tiny "$TINY"
GOOD="$WORK/bad/good.jsonl"
printf '{"text": "fine"}\n' >"$GOOD"
refused() {  # NAME NP PATTERN FILE...
  local name=$1 np=$2 pattern=$3
  shift 3
  rm -rf "$WORK/o" && mkdir -p "$WORK/o"
  timeout 60 bash -c 'if [ "$0" -eq 1 ]; then exec "${@:1}"; else exec mpirun -np "$0" "${@:1}"; fi' "$np" "$DATA" prepare --tokenizer "$TINY" --out "$WORK/o/new.bin" "$@" \
    >"$WORK/out" 2>"$WORK/err"
  local rc=$? lines left
  lines=$(grep -c '^fsdp-data: ' "$WORK/err")
  left=$(ls -A "$WORK/o")
  if [ $rc -eq 3 ] && [ "$lines" -eq 1 ] && grep -q -E -- "^fsdp-data: $pattern" "$WORK/err" && [ -z "$left" ]; then
    ok "refused at np $np: $name: $(grep '^fsdp-data: ' "$WORK/err")"
  else bad "$name at np $np: exit $rc, files left '$left', stderr: $(head -3 "$WORK/err")"; fi
}
B="$WORK/bad"
printf '{"text": "a"}\n{"text": "b"\n' >"$B/syntax.jsonl"
printf '{"text": "a"}\n\n{"text": 5}\n' >"$B/type.jsonl"
printf '{"prompt": "a"}\n' >"$B/missing.jsonl"
printf '{"message": []}\n' >"$B/shape.jsonl"
printf '{"text": "ok"}\n{"text": "caf\xe9"}\n' >"$B/utf8.jsonl"
printf 'fine\nfine\nbad \xc3\x28 here\n' >"$B/utf8.txt"
printf 'a,b\n' >"$B/table.csv"
mkdir -p "$B/dir.txt"
refused "not JSON" 1 "$B/syntax.jsonl:2: not JSON" "$GOOD" "$B/syntax.jsonl"
refused "a field of the wrong type" 1 "$B/type.jsonl:3: \"text\" is a number, not a string" "$B/type.jsonl"
refused "a missing field" 1 "$B/missing.jsonl:1: \"completion\" is missing" "$B/missing.jsonl"
refused "no known shape" 1 "$B/shape.jsonl:1: an object with none of" "$B/shape.jsonl"
refused "invalid UTF-8 in JSONL" 1 "$B/utf8.jsonl:2: invalid UTF-8 at byte 14" "$GOOD" "$GOOD" "$B/utf8.jsonl"
refused "invalid UTF-8 in .txt" 1 "$B/utf8.txt:3: invalid UTF-8 at byte 15" "$B/utf8.txt"
refused "another extension" 1 "$B/table.csv: not a .txt or .jsonl file" "$GOOD" "$B/table.csv"
refused "a missing file" 1 "$B/nope.txt: " "$B/nope.txt"
refused "a directory" 1 "$B/dir.txt: " "$B/dir.txt"
# The first error in input order wins whichever rank finds it: 300 lines, bad at 40 and 280;
# at np 3, ranks 0 and 2 each find one.
python3 -c "
import json
for i in range(300): print('{\"txt\": 1}' if i in (39, 279) else json.dumps({'text': 'line %d' % i}))" >"$B/two.jsonl"
refused "the first of two errors" 3 "$B/two.jsonl:40: an object with none of" "$B/two.jsonl"

# A failed run leaves an older OUT.bin and its mask as they were.
run 1 "$DATA" prepare --tokenizer "$TINY" --out "$WORK/keep.bin" "$GOOD" >/dev/null 2>&1
cp "$WORK/keep.bin" "$WORK/keep.copy" && cp "$WORK/keep.bin.trained" "$WORK/keep.trained.copy"
run 1 "$DATA" prepare --tokenizer "$TINY" --out "$WORK/keep.bin" "$GOOD" "$B/type.jsonl" >/dev/null 2>&1
rc=$?
if [ $rc -eq 3 ] && cmp -s "$WORK/keep.bin" "$WORK/keep.copy" && cmp -s "$WORK/keep.bin.trained" "$WORK/keep.trained.copy" &&
   [ "$(ls "$WORK" | grep -c '^keep.bin')" -eq 2 ]; then ok "a failed run leaves the old OUT.bin and OUT.bin.trained as they were"
else bad "after a failed run (exit $rc) the old files changed or temporaries are left: $(ls "$WORK" | grep keep)"; fi
[ "$("$DATA" decode "$WORK/keep.bin" --tokenizer "$TINY" --tokens 1:3)" = "in" ] &&
  ok "decode --tokens 1:3 of {\"text\": \"fine\"} is \"in\"" || bad "decode --tokens 1:3"
expect_fail "an output in a missing directory" 2 "^fsdp-data: --out $WORK/none/x.bin: the directory $WORK/none does not exist" \
  "$DATA" prepare --tokenizer "$TINY" --out "$WORK/none/x.bin" "$GOOD"
expect_fail "--eos naming no token" 2 "^fsdp-data: --eos: '<\|nope\|>' is not a token" \
  "$DATA" prepare --tokenizer "$TINY" --eos '<|nope|>' --out "$WORK/x.bin" "$GOOD"
finish
