#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp-data prepare at np 2 against np 1 on the same input: a generated text (words drawn by
# Zipf's law from a 60,000-word Latin/CJK/Cyrillic/Arabic/emoji lexicon, as the tokenizer
# benchmark uses; tests/reference/hf_tokenizer.py bench-text) cut into JSONL documents of about
# 4 KB, Llama 3's tokenizer. The two alternate, ROUNDS times; each is a whole mpirun (start-up
# and every rank's ~1 s tokenizer load included), and a run on a one-line input measures that
# fixed part. Prints every round and the median and range of the speed-up np1/np2, whole and
# with the fixed part taken off both; np 2's output must equal np 1's byte for byte.
#   jobscripts/data_prepare_np.sh [MB] [ROUNDS]          (default 16, 5)
# Environment: FSDP_BUILD; FSDP_TOKENIZER_DATA (default ../shared/data/tokenizers, holding
# llama3/tokenizer.json).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
MB=${1:-16}
ROUNDS=${2:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1
LLAMA3=${FSDP_TOKENIZER_DATA:-$ROOT/../shared/data/tokenizers}/llama3
[ -f "$LLAMA3/tokenizer.json" ] || { echo "no $LLAMA3/tokenizer.json: set FSDP_TOKENIZER_DATA" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The generator needs only Python's standard library.
/usr/bin/python3 "$ROOT/tests/reference/hf_tokenizer.py" bench-text $((MB * 1000000)) "$WORK/text.txt"
/usr/bin/python3 - "$WORK/text.txt" "$WORK/in.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1], encoding='utf-8').read()
with open(sys.argv[2], 'w', encoding='utf-8') as f:
    for i in range(0, len(text), 4000):
        f.write(json.dumps({'text': text[i:i + 4000]}, ensure_ascii=False) + '\n')
PY
echo '{"text": "x"}' >"$WORK/one.jsonl"
secs() {  # NP INPUT OUT: wall seconds of one whole run
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -np "$1" "$BUILD/fsdp-data" prepare --tokenizer "$LLAMA3" --out "$3" "$2" >"$WORK/log" 2>&1 ||
    { cat "$WORK/log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
  "load average $(cut -d' ' -f1 /proc/loadavg); $(wc -c <"$WORK/in.jsonl") bytes," \
  "$(wc -l <"$WORK/in.jsonl") documents"
printf '%6s %9s %9s %9s %9s %9s %9s\n' round "np1 s" "np2 s" "fixed1 s" "fixed2 s" speedup "less fixed"
for r in $(seq "$ROUNDS"); do
  a=$(secs 1 "$WORK/in.jsonl" "$WORK/np1.bin")
  fa=$(secs 1 "$WORK/one.jsonl" "$WORK/one1.bin")
  b=$(secs 2 "$WORK/in.jsonl" "$WORK/np2.bin")
  fb=$(secs 2 "$WORK/one.jsonl" "$WORK/one2.bin")
  cmp -s "$WORK/np1.bin" "$WORK/np2.bin" && cmp -s "$WORK/np1.bin.trained" "$WORK/np2.bin.trained" ||
    { echo "# round $r: np 2's output differs from np 1's" >&2; exit 1; }
  printf '%6d %9s %9s %9s %9s %9.2f %9.2f\n' "$r" "$a" "$b" "$fa" "$fb" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" \
    "$(awk -v a="$a" -v b="$b" -v x="$fa" -v y="$fb" 'BEGIN { print (a - x) / (b - y) }')"
  echo "$a $b $fa $fb" >>"$WORK/times"
done
tail -1 "$WORK/log" | sed 's/^/# np 2: /'
/usr/bin/python3 - "$WORK/times" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for name, xs in (("np1/np2 whole", [a / b for a, b, _, _ in rows]),
                 ("np1/np2 less fixed", [(a - x) / (b - y) for a, b, x, y in rows])):
    print(f"# {name:19s} median {statistics.median(xs):5.2f}  range {min(xs):.2f} .. {max(xs):.2f}")
PY
