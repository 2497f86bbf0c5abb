#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Outputs written over files fsdp did not make, and results that look fine and are not (issue
# 63, sections 1, 4 and 6): fsdp-data prepare --out refuses a FIFO, a device, a directory, '',
# its own input, the tokenizer's files and any existing file that is not a token file or mask
# (exit 2, untouched); a prepare killed with -9 leaves temporaries the next one removes; a
# mask beside a token file of another prepare is refused (pair ids); empty inputs are refused
# (exit 3), not written as files info refuses; decode's ranges; a TemplateProcessing id past
# the vocabulary; fsdp-ckpt export --hf replaces only its own earlier export's files; a mask
# that trains nothing is refused at start and a batch that scores nothing is reported, with no
# update applied. A byte-level tokenizer and the tiny deck: seconds.
source "$(dirname "$0")/lib.sh"
DATA="$BUILD/fsdp-data"
PY=/usr/bin/python3
T="$WORK/tok"
mkdir -p "$T"
# A byte-level BPE: ids 0-255 the bytes (GPT-2's byte spelling), 256 the document end.
$PY - "$T" <<'PY'
import json, sys
d = sys.argv[1]
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
spell = {b: chr(c) for b, c in zip(bs, cs)}
vocab = {spell[b]: b for b in range(256)}
bl = lambda: {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": 256, "content": "<|end|>", "single_word": False, "lstrip": False,
                         "rstrip": False, "normalized": False, "special": True}],
       "normalizer": None, "pre_tokenizer": bl(), "post_processor": None, "decoder": bl(),
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                 "ignore_merges": False, "vocab": vocab, "merges": []}}
json.dump(tok, open(d + "/tokenizer.json", "w"))
json.dump({"eos_token": "<|end|>"}, open(d + "/tokenizer_config.json", "w"))
# The same with a TemplateProcessing whose BOS id is past the vocabulary (257 ids).
tok["post_processor"] = {"type": "TemplateProcessing",
                         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}}],
                         "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [300], "tokens": ["<s>"]}}}
import os
os.makedirs(d + "/../badbos", exist_ok=True)
json.dump(tok, open(d + "/../badbos/tokenizer.json", "w"))
json.dump({"eos_token": "<|end|>"}, open(d + "/../badbos/tokenizer_config.json", "w"))
PY
printf '{"text":"hello world"}\n{"prompt":"Q?","completion":" A."}\n' >"$WORK/in.jsonl"
P=("$DATA" prepare --tokenizer "$T")
"${P[@]}" --out "$WORK/good.bin" "$WORK/in.jsonl" >"$WORK/out" 2>&1 || bad "a plain prepare: $(tail -2 "$WORK/out")"

# 1. --out never replaces what prepare did not write (exit 2, one line, untouched).
mkfifo "$WORK/fifo"
echo '[train]' >"$WORK/deck.toml"
sums() { sha256sum "$WORK/in.jsonl" "$T/tokenizer.json" "$WORK/deck.toml" | cut -c1-64 | tr '\n' ' '; }
before=$(sums)
expect_end "--out a FIFO" 2 "--out $WORK/fifo: is not a regular file" "${P[@]}" --out "$WORK/fifo" "$WORK/in.jsonl"
expect_end "--out /dev/null" 2 "--out /dev/null: is not a regular file" "${P[@]}" --out /dev/null "$WORK/in.jsonl"
expect_end "--out a directory" 2 "--out $WORK: is a directory" "${P[@]}" --out "$WORK" "$WORK/in.jsonl"
expect_end "--out ''" 2 "--out '': names no file" "${P[@]}" --out '' "$WORK/in.jsonl"
expect_end "--out its own input" 2 "--out $WORK/in.jsonl: is an input of this run" \
  mpirun -np 2 "${P[@]}" --out "$WORK/in.jsonl" "$WORK/in.jsonl"
expect_end "--out the tokenizer's file" 2 "--out $T/tokenizer.json: is the tokenizer's tokenizer.json" \
  "${P[@]}" --out "$T/tokenizer.json" "$WORK/in.jsonl"
expect_end "--out a deck" 2 "--out $WORK/deck.toml: exists and is not an llm.c token file" \
  "${P[@]}" --out "$WORK/deck.toml" "$WORK/in.jsonl"
cp "$WORK/deck.toml" "$WORK/x.bin.trained"; cp "$WORK/good.bin" "$WORK/x.bin"
expect_end "--out whose .trained is not a mask" 2 "--out $WORK/x.bin.trained: exists and is not a trained-token mask" \
  "${P[@]}" --out "$WORK/x.bin" "$WORK/in.jsonl"
[ "$(sums)" = "$before" ] && [ -p "$WORK/fifo" ] && [ -c /dev/null ] && [ ! -e "$WORK/fifo.trained" ] &&
  [ ! -e /dev/null.trained ] && [ ! -e "$WORK/.trained" ] && [ ! -e "$WORK/in.jsonl.trained" ] &&
  ok "the refused outputs are untouched, and no .trained was written beside any" ||
  bad "a refused output changed: $(ls -A "$WORK" | tr '\n' ' ')"
# A token file of ours is replaced (with its mask).
"${P[@]}" --out "$WORK/good.bin" "$WORK/in.jsonl" >"$WORK/out" 2>&1 &&
  ok "an earlier token file of prepare's is replaced" || bad "re-prepare: $(tail -2 "$WORK/out")"

# A kill -9 leaves temporaries (they are named OUT.<pid>.<hex>.tmp): the next prepare of the
# same OUT removes those whose process is gone, and keeps a live process's.
: >"$WORK/good.bin.999999999.0123456789abcdef.tmp"
: >"$WORK/good.bin.trained.999999999.fedcba9876543210.tmp"
: >"$WORK/good.bin.$$.0123456789abcdef.tmp"
"${P[@]}" --out "$WORK/good.bin" "$WORK/in.jsonl" >"$WORK/out" 2>&1
[ ! -e "$WORK/good.bin.999999999.0123456789abcdef.tmp" ] && [ ! -e "$WORK/good.bin.trained.999999999.fedcba9876543210.tmp" ] &&
  [ -e "$WORK/good.bin.$$.0123456789abcdef.tmp" ] &&
  ok "stale temporaries of a killed prepare are removed by the next, a live process's kept" ||
  bad "temporaries after prepare: $(ls -A "$WORK" | grep tmp | tr '\n' ' ')"
# The mask of one prepare beside the token file of another (a crash between the renames, same
# token count): refused by the pair ids, where the counts alone agree.
printf '{"text":"hellO world"}\n{"prompt":"Q?","completion":" A."}\n' >"$WORK/in2.jsonl"
"${P[@]}" --out "$WORK/other.bin" "$WORK/in2.jsonl" >"$WORK/out" 2>&1 || bad "prepare other: $(tail -2 "$WORK/out")"
cp "$WORK/other.bin.trained" "$WORK/good.bin.trained"
expect_end "a mask of another prepare beside the token file" 3 "good.bin.trained: is not the mask of $WORK/good.bin \(their pair ids differ" \
  "$DATA" info "$WORK/good.bin"
expect_end "fsdp-train on the mismatched pair" 3 "good.bin.trained: is not the mask of" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set model.vocab_size=257 --set model.block_size=4 --set data.format=llmc \
  --set train.steps=1 --set data.train="$WORK/good.bin" --set data.val="$WORK/good.bin"

# 4. Empty inputs are refused, not written as files info refuses; decode's ranges.
: >"$WORK/empty.jsonl"; : >"$WORK/empty.txt"
expect_end "prepare of an empty .jsonl" 3 "$WORK/empty.jsonl: no text to tokenize" "${P[@]}" --out "$WORK/e.bin" "$WORK/empty.jsonl"
expect_end "prepare of an empty .txt" 3 "$WORK/empty.txt: no text to tokenize" "${P[@]}" --out "$WORK/e.bin" "$WORK/empty.txt"
[ ! -e "$WORK/e.bin" ] && [ ! -e "$WORK/e.bin.trained" ] && ok "no file written for empty inputs" || bad "e.bin written"
expect_end "a TemplateProcessing BOS id past the vocabulary" 3 "badbos/tokenizer.json: post_processor.*special_tokens.*ids.*300 is past the vocabulary \(257" \
  "$DATA" prepare --tokenizer "$WORK/badbos" --out "$WORK/b.bin" "$WORK/in.jsonl"
"${P[@]}" --out "$WORK/good.bin" "$WORK/in.jsonl" >"$WORK/out" 2>&1
expect_end "decode --documents 5:2" 2 "--documents 5:2: an empty range" "$DATA" decode "$WORK/good.bin" --tokenizer "$T" --documents 5:2
expect_end "decode --documents 7:9 of a 2-document file" 3 "documents 7:9 hold nothing \(the file has 2\)" \
  "$DATA" decode "$WORK/good.bin" --tokenizer "$T" --documents 7:9

# 1. fsdp-ckpt export --hf replaces only its own earlier export's files.
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=1 --set checkpoint.every=1 \
  --set checkpoint.dir="$WORK/ck" >"$WORK/out" 2>&1 || bad "the tiny run: $(tail -2 "$WORK/out")"
C="$WORK/ck/step_000001.h5"
H="$WORK/theirs"
mkdir -p "$H"
for f in model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json config.json; do
  echo "someone else's $f" >"$H/$f"
done
hsum=$(cd "$H" && sha256sum * | sha256sum)
expect_end "export into a directory holding another model" 2 \
  "$H: holds config.json, model-00001-of-00002.safetensors, model-00002-of-00002.safetensors, model.safetensors.index.json, which no earlier fsdp-ckpt export wrote" \
  mpirun -np 2 "$CKPT" export "$C" --hf "$H"
[ "$(cd "$H" && sha256sum * | sha256sum)" = "$hsum" ] && [ "$(ls "$H" | wc -l)" = 4 ] &&
  ok "export: another model's files are untouched" || bad "export changed $H: $(ls "$H" | tr '\n' ' ')"
E="$WORK/ours"
"$CKPT" export "$C" --hf "$E" --max-shard-bytes 20000 >"$WORK/out" 2>&1 &&
  "$CKPT" export "$C" --hf "$E" >>"$WORK/out" 2>&1 && [ -f "$E/model.safetensors" ] &&
  [ -z "$(ls "$E" | grep -e model- -e index)" ] &&
  ok "export over its own sharded export: the shards and index removed, one file left ($(ls "$E" | tr '\n' ' '))" ||
  bad "re-export: $(tail -2 "$WORK/out"); $(ls "$E" | tr '\n' ' ')"
echo ' ' >>"$E/config.json"  # edited by a person since
expect_end "export over a config.json edited since" 2 "$E: holds config.json, which no earlier fsdp-ckpt export wrote" \
  "$CKPT" export "$C" --hf "$E"
expect_end "--max-shard-bytes -1" 2 "--max-shard-bytes.*expected a byte count" "$CKPT" export "$C" --hf "$WORK/x" --max-shard-bytes -1
expect_end "--max-shard-bytes 2^64" 2 "--max-shard-bytes.*expected a byte count" "$CKPT" export "$C" --hf "$WORK/x" --max-shard-bytes 18446744073709551616

# 4. A mask that trains nothing is refused at start; a batch that scores nothing is reported
# and applies no update (the two checkpoints of two such steps are identical).
$PY - "$WORK" <<'PY'
import random, struct, sys
d, n = sys.argv[1], 50000
random.seed(3)
toks = [random.randrange(256) for _ in range(n)]
def write(name, trained):
    h = struct.pack('<3i', 20240520, 1, n) + b'\0' * (1024 - 12)
    open(f'{d}/{name}', 'wb').write(h + struct.pack(f'<{n}H', *toks))
    bits = bytearray((n + 7) // 8)
    for i in trained: bits[i // 8] |= 1 << (i % 8)
    m = struct.pack('<2iqqi', 20261204, 1, n, len(trained), -1)
    open(f'{d}/{name}.trained', 'wb').write(m + b'\0' * (1024 - len(m)) + bytes(bits))
write('none.bin', [])
write('last.bin', [n - 1])  # a target only of the one window that ends the file
PY
M=("${SMALL[@]}" --set data.format=llmc --set train.steps=2 --set checkpoint.every=1 --set checkpoint.keep=2)
expect_end "a mask that trains no token" 3 "none.bin.trained: trains no token" \
  mpirun -np 2 "$TRAIN" "${M[@]}" --set data.train="$WORK/none.bin" --set checkpoint.dir="$WORK/c0"
expect_end "steps and an evaluation that score nothing" 0 "step +2/2 \| no scored token in the batch" \
  mpirun -np 2 "$TRAIN" "${M[@]}" --set data.train="$WORK/last.bin" --set data.val="$WORK/last.bin" \
  --set eval.sequences=4 --set checkpoint.dir="$WORK/c1" --metrics "$WORK/m.jsonl"
grep -q "no scored token in the evaluation windows" "$WORK/out" && ! grep -q "val loss 0" "$WORK/out" &&
  [ "$(grep -c '"loss":null' "$WORK/m.jsonl")" = 2 ] && grep -q '"eval_loss":null' "$WORK/m.jsonl" &&
  ok "nothing scored: no loss 0 in the log or the metrics ($(grep -c '"update":false' "$WORK/m.jsonl") steps without an update)" ||
  bad "nothing scored: $(grep -e step -e eval "$WORK/out" | head -4)"
"$CKPT" diff "$WORK/c1/step_000001.h5" "$WORK/c1/step_000002.h5" >"$WORK/diff" 2>&1 &&
  ok "no update for a batch that scored nothing: the checkpoints of steps 1 and 2 are identical" ||
  bad "a step that scored nothing changed the state: $(head -3 "$WORK/diff")"
finish
