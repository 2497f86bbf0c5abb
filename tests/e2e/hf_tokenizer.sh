#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp::Tokenizer on the real Llama 3 and Qwen3 tokenizer.json files against Hugging Face's own
# implementation, the `tokenizers` library (Rust, Tokenizer.from_file), run by
# tests/reference/hf_tokenizer.py from the pinned reference environment: the ids of named hard
# cases (CJK, Arabic, emoji sequences, NFD accents, NBSP, digit runs, contractions in capitals,
# tabs, CRLF, whitespace runs, special tokens, U+180E, U+FEFF and U+017F where regex engines
# differ, the empty text) and of ~440 KB of generated mixed text, with and without special
# tokens; decode(encode(text)) == text (NFC for Qwen3); decode of random id lists, with and
# without skip_special_tokens; Llama 3.1's BOS template; GPT-2 (a tokenizer.json built from
# tiktoken's gpt2 ranks) against tiktoken's own encoding of the builtin corpus and the texts;
# a Unigram model refused. Without the reference environment or the real tokenizer files
# (tests/e2e/lib.sh) the test prints SKIPPED.
source "$(dirname "$0")/lib.sh"
T=${TOKENIZE_JSON:-$BUILD/tests/tokenize_json}
REF="$SRC/tests/reference/hf_tokenizer.py"
ref_python tokenizers tiktoken
tokenizer_data
ref() { "$REFPY" "$REF" "$@"; }

# compare NAME DIR TEXTS IDS: our encode and decode against the reference's, same inputs.
compare() {
  local name=$1 dir=$2 texts=$3 ids=$4
  ref run "$dir" "$texts" "$ids" "$WORK/$name.ref.json" 2>"$WORK/err" ||
    { bad "$name: the reference failed: $(tail -2 "$WORK/err")"; return; }
  "$T" run "$dir" "$texts" "$ids" "$WORK/$name.ours.json" 2>"$WORK/err" ||
    { bad "$name: tokenize_json failed: $(tail -2 "$WORK/err")"; return; }
  ref compare "$dir" "$texts" "$WORK/$name.ours.json" "$WORK/$name.ref.json" >"$WORK/cmp" 2>&1
  local last
  last=$(tail -1 "$WORK/cmp")
  if [ "${last#ok: }" != "$last" ]; then ok "$name: ${last#ok: }"; else
    bad "$name: $last"
    grep '^FAIL' "$WORK/cmp" | head -10 | sed 's/^/    /'
  fi
}

ref texts "$WORK/texts.json" && ref texts "$WORK/cases.json" cases &&
  ref id-lists "$LLAMA3" 400 "$WORK/ids_llama3.json" &&
  ref id-lists "$QWEN3" 400 "$WORK/ids_qwen3.json" || { bad "writing the inputs"; finish; exit 1; }
compare llama3 "$LLAMA3" "$WORK/texts.json" "$WORK/ids_llama3.json"
compare qwen3 "$QWEN3" "$WORK/texts.json" "$WORK/ids_qwen3.json"
# Llama 3.1 and later: the post-processor puts <|begin_of_text|> first.
ref template "$LLAMA3" "$WORK/llama31" && compare llama31_bos "$WORK/llama31" "$WORK/cases.json" -
if "$T" load "$WORK/llama31" | grep -q "bos 128000 eos 128001"; then ok "llama31: bos and eos from tokenizer_config.json"
else bad "llama31: $("$T" load "$WORK/llama31" 2>&1)"; fi

# GPT-2 (ByteLevel with GPT-2's own split): a tokenizer.json made from tiktoken's gpt2 ranks, on
# the builtin corpus and the texts above: the ids tiktoken gives, the ids and decodes Hugging
# Face's library gives on the same file, and Gpt2Vocabulary (encoder.json, what fsdp-sample
# --encoder reads) turns the corpus's back into the corpus.
if ref gpt2 "$TIKTOKEN" "$WORK/gpt2" && "$T" corpus val "$WORK/val.txt" &&
  ref join "$WORK/val.txt" "$WORK/texts.json" "$WORK/val.json" &&
  "$T" run "$WORK/gpt2" "$WORK/val.json" - "$WORK/gpt2.ours.json" &&
  ref gpt2-compare "$TIKTOKEN" "$WORK/val.json" "$WORK/gpt2.ours.json" >"$WORK/cmp" 2>&1 &&
  "$T" gpt2-decode "$WORK/gpt2/encoder.json" "$WORK/gpt2.ours.json" "$WORK/val.decoded" &&
  cmp -s "$WORK/val.txt" "$WORK/val.decoded"; then
  ok "gpt2: $(tail -1 "$WORK/cmp" | cut -d' ' -f2-); Gpt2Vocabulary decodes them to the corpus"
else
  bad "gpt2: $(tail -3 "$WORK/cmp" 2>/dev/null)"
fi
ref id-lists "$WORK/gpt2" 200 "$WORK/ids_gpt2.json" && compare gpt2 "$WORK/gpt2" "$WORK/val.json" "$WORK/ids_gpt2.json"

# A tokenizer of another kind: one line naming the file and the key (tests/unit/test_tokenizer.cpp
# has the other refusals and malformed files, on small files of its own).
ref unigram "$QWEN3" "$WORK/unigram"
expect_fail "Unigram refused" 1 "unigram/tokenizer.json: model.type: \"Unigram\" is not supported" "$T" load "$WORK/unigram"
finish
