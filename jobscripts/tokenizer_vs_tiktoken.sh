#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp's tokenizer beside its peers on one core and the same text: Hugging Face's `tokenizers`
# (Rust, one thread: RAYON_NUM_THREADS=1, encode_batch_fast of the text's paragraphs) on Llama 3's
# tokenizer.json, and tiktoken's native core (encode_ordinary) built from the same vocabulary and
# split pattern, both from the pinned reference environment (scripts/pyenv.sh). The text is
# generated: words drawn by Zipf's law from a 60,000-word lexicon (Latin, CJK, Cyrillic, Arabic,
# emoji; tests/reference/hf_tokenizer.py bench-text). Each round runs the three, in an order
# that alternates from round to round, each pinned to the same core (taskset) in its own process;
# each times a second encode after a warm-up one (every word cache emptied before each), load
# time excluded. Prints every round, then the median and range of each side's MB/s and of the
# ratios fsdp/peer taken round by round, with the load average before and after.
#   jobscripts/tokenizer_vs_tiktoken.sh [MB] [ROUNDS] [CPU]      (default 4, 5, 0)
# Environment: FSDP_BUILD; FSDP_PYTHON (default: scripts/pyenv.sh's python); FSDP_TOKENIZER_DATA
# (default ../shared/data/tokenizers, holding llama3/tokenizer.json).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
MB=${1:-4}
ROUNDS=${2:-5}
CPU=${3:-0}
PY=${FSDP_PYTHON:-$("$ROOT/scripts/pyenv.sh" --check)} ||
  { echo "no reference Python environment: run scripts/pyenv.sh or set FSDP_PYTHON" >&2; exit 2; }
LLAMA3=${FSDP_TOKENIZER_DATA:-$ROOT/../shared/data/tokenizers}/llama3
[ -f "$LLAMA3/tokenizer.json" ] || { echo "no $LLAMA3/tokenizer.json: set FSDP_TOKENIZER_DATA" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
REF="$ROOT/tests/reference/hf_tokenizer.py"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" "$REF" bench-text $((MB * 1000000)) "$WORK/text.txt"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), pinned to cpu $CPU;" \
  "$("$PY" -c 'import tokenizers, tiktoken; print("tokenizers", tokenizers.__version__, "tiktoken", tiktoken.__version__)');" \
  "$(wc -c <"$WORK/text.txt") bytes; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Each prints "MB/s tokens" of its second run.
fsdp() {
  taskset -c "$CPU" "$BUILD/fsdp-bench" tokenizer --tokenizer "$LLAMA3" --text "$WORK/text.txt" \
    --runs 2 | awk '$1 == 2 { print $5, $3 }'
}
peer() {
  taskset -c "$CPU" "$PY" "$REF" bench "$1" "$LLAMA3" "$WORK/text.txt" 2 | awk 'NR == 2 { print $(NF - 1), $4 }'
}
printf '%6s %10s %16s %14s %13s %13s %10s\n' round "fsdp MB/s" "tokenizers MB/s" "tiktoken MB/s" \
  "/tokenizers" "/tiktoken" tokens
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then a=$(fsdp); b=$(peer tokenizers); c=$(peer tiktoken)
  else c=$(peer tiktoken); b=$(peer tokenizers); a=$(fsdp); fi
  set -- $a $b $c
  [ "$2" = "$4" ] && [ "$2" = "$6" ] || echo "# round $r: token counts differ: fsdp $2, tokenizers $4, tiktoken $6"
  printf '%6d %10s %16s %14s %13.2f %13.2f %10s\n' "$r" "$1" "$3" "$5" \
    "$(awk -v a="$1" -v b="$3" 'BEGIN { print a / b }')" "$(awk -v a="$1" -v b="$5" 'BEGIN { print a / b }')" "$2"
  echo "$1 $3 $5" >>"$WORK/rates"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$WORK/rates" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for name, xs in (("fsdp MB/s", [a for a, _, _ in rows]), ("tokenizers MB/s", [b for _, b, _ in rows]),
                 ("tiktoken MB/s", [c for _, _, c in rows]),
                 ("fsdp/tokenizers", [a / b for a, b, _ in rows]), ("fsdp/tiktoken", [a / c for a, _, c in rows])):
    print(f"# {name:16s} median {statistics.median(xs):7.2f}  range {min(xs):.2f} .. {max(xs):.2f}")
PY
