# SPDX-License-Identifier: MIT
# Shared helpers for the end-to-end tests: $1 = build dir, $2 = source dir.
set -uo pipefail
BUILD=$1
SRC=$2
TRAIN="$BUILD/fsdp-train"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1
cd "$SRC"
FAILS=0
PASSES=0

ok() { PASSES=$((PASSES + 1)); echo "ok: $*"; }
bad() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }

# expect_fail NAME EXIT_CODE PATTERN CMD...: the command exits with EXIT_CODE within 60 s and
# its stderr has PATTERN on exactly one line.
expect_fail() {
  local name=$1 want=$2 pattern=$3
  shift 3
  timeout 60 "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  local lines
  lines=$(grep -c -E -- "$pattern" "$WORK/err")
  if [ "$rc" -eq "$want" ] && [ "$lines" -ge 1 ]; then
    ok "$name (exit $rc): $(grep -m1 -E -- "$pattern" "$WORK/err")"
  else
    bad "$name: exit $rc (wanted $want), stderr:"
    sed 's/^/    /' "$WORK/err" | head -20
  fi
}

# eval_loss NP WEIGHTS [ARGS...]: fsdp's eval loss of --init-from WEIGHTS on $WORK/val.txt under the empty deck
# $WORK/empty.toml (12 sequences
# of the file's own block size), as the metrics file holds it (the HF tests' reference runs).
eval_loss() {
  mpirun -np "$1" "$TRAIN" --config "$WORK/empty.toml" --init-from "$2" --set train.steps=0 \
    --set "data.train=$WORK/val.txt" --set "data.val=$WORK/val.txt" --set eval.sequences=12 \
    --set train.batch_size="$1" --set train.micro_batch_size=1 --metrics "$WORK/ev.jsonl" "${@:3}" \
    >"$WORK/out" 2>&1 || { echo "failed: $(tail -2 "$WORK/out")"; return; }
  grep -o '"eval_loss":[^,}]*' "$WORK/ev.jsonl" | cut -d: -f2
}

finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# The hostile-run checks (hostile_*.sh). A tiny deck; NP=3 needs batch 12 = 3 x 4.
CKPT="$BUILD/fsdp-ckpt"
SMALL=(--config inputs/default.toml --set model.n_layer=2 --set model.n_embd=32
       --set train.batch_size=12 --set train.micro_batch_size=2 --set eval.every=0
       --set eval.sequences=0 --set train.peak_tflops=1)

# expect_end NAME EXIT PATTERN CMD...: CMD ends with EXIT within 30 s, its output has PATTERN
# on a line, and no process of this test ($WORK in its arguments: every rank) is left.
expect_end() {
  local name=$1 want=$2 pattern=$3
  shift 3
  local start rc took left
  start=$(date +%s%N)
  timeout -k 5 30 "$@" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  took=$((($(date +%s%N) - start) / 1000000))
  took=$((took / 1000)).$((took % 1000 / 100))
  sleep 0.5
  left=$(for p in $(pgrep -f -- "$WORK"); do  # LEFT_IGNORE: a pattern of processes meant to stay
           [ -n "${LEFT_IGNORE:-}" ] && grep -aq -- "$LEFT_IGNORE" /proc/$p/cmdline 2>/dev/null || echo $p
         done | grep -v "^$$\$" | tr '\n' ' ')
  if [ "$rc" -eq "$want" ] && grep -q -E -- "$pattern" "$WORK/err" "$WORK/out" && [ -z "$left" ]; then
    ok "$name (exit $rc in $took s): $(grep -h -m1 -E -- "$pattern" "$WORK/err" "$WORK/out" | head -1 | cut -c1-220)"
  else
    bad "$name: exit $rc (wanted $want) after $took s, processes left: '${left}', output:"
    sed 's/^/    /' "$WORK/err" | grep -v '^    *$' | head -12
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
  fi
}

# still_resumes NAME DIR STEP: DIR's step_STEP checkpoint verifies and --resume auto (2 ranks)
# continues from it.
still_resumes() {
  local name=$1 dir=$2 step=$3 f
  f="$dir/$(printf 'step_%06d.h5' "$step")"
  if "$CKPT" verify "$f" >"$WORK/verify" 2>&1 &&
     timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set checkpoint.dir="$dir" \
       --set train.steps=$((step + 1)) --resume auto >"$WORK/resume" 2>&1 &&
     grep -q "resumed from $f at step $step" "$WORK/resume"; then
    ok "$name: $f verifies and --resume auto continues from it"
  else
    bad "$name: after it, $f: $(tail -1 "$WORK/verify"); resume: $(grep -v '^step' "$WORK/resume" | head -3)"
  fi
}

skip() { echo "SKIPPED: $*"; exit 0; }

# ref_python MODULE...: sets REFPY to the pinned reference environment's python
# (scripts/pyenv.sh: $FSDP_PYTHON, else the installed environment when current) and checks that
# it imports each MODULE; else the test ends as SKIPPED with the reason.
ref_python() {
  REFPY=${FSDP_PYTHON:-$("$SRC/scripts/pyenv.sh" --check 2>/dev/null)} ||
    skip "no reference Python environment: run scripts/pyenv.sh (scripts/fsdp.sh test does)"
  [ -x "$REFPY" ] || skip "FSDP_PYTHON=$REFPY is not an executable"
  local m
  for m in "$@"; do
    "$REFPY" -c "import $m" 2>/dev/null || skip "the reference environment $REFPY cannot import $m"
  done
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
}

# The real tokenizer files (../shared/data/tokenizers, README there): LLAMA3, QWEN3 (directories
# with tokenizer.json and tokenizer_config.json) and TIKTOKEN (tiktoken's ranks); $FSDP_TOKENIZER_DATA
# chooses another copy. Without them the test ends as SKIPPED naming the path.
tokenizer_data() {
  local d=${FSDP_TOKENIZER_DATA:-$SRC/../shared/data/tokenizers}
  [ -f "$d/llama3/tokenizer.json" ] && [ -f "$d/qwen3/tokenizer.json" ] && [ -f "$d/tiktoken/gpt2.json" ] ||
    skip "no real tokenizer files at $d (set FSDP_TOKENIZER_DATA)"
  TOKDATA=$(cd "$d" && pwd)
  LLAMA3="$TOKDATA/llama3"
  QWEN3="$TOKDATA/qwen3"
  TIKTOKEN="$TOKDATA/tiktoken"
}
