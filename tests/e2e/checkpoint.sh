#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checkpoints between jobs: save on 4 ranks and resume on 1, 2, 3 and with another strategy;
# straight and resumed runs end in identical files (fsdp-ckpt diff); a rank killed mid-write
# leaves only a .tmp that --resume auto never takes; damaged files give one line naming the
# file and dataset and exit 5, and --resume auto falls back past them; h5dump reads the files.
source "$(dirname "$0")/lib.sh"
CKPT="$BUILD/fsdp-ckpt"
TAMPER=${CKPT_TAMPER:-$BUILD/tests/ckpt_tamper}
TINY=(--config inputs/default.toml --set model.n_layer=2 --set model.n_embd=32
      --set train.batch_size=12 --set train.micro_batch_size=1 --set eval.every=0
      --set eval.sequences=0 --set train.peak_tflops=1 --set train.steps=10)
run() {  # run NP LOG ARGS...: fsdp-train on NP ranks with the tiny deck; output to LOG
  local np=$1 log=$2
  shift 2
  timeout 120 mpirun -np "$np" "$TRAIN" "${TINY[@]}" "$@" >"$log" 2>&1
}
# same_losses NAME A.jsonl B.jsonl TOL: every step of B has A's loss within TOL (relative).
same_losses() {
  /usr/bin/python3 - "$2" "$3" "$4" <<'PY' && ok "$1" || bad "$1"
import json, sys
def load(p): return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r}
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
worst = max(abs(b[s] - a[s]) / abs(a[s]) for s in b) if b else 1.0
print(f"  steps {min(b)}..{max(b)}, worst relative difference {worst:.3g}" if b else "  no steps")
sys.exit(0 if b and worst <= tol else 1)
PY
}

# 1. Save on 4 ranks; the file is ordinary HDF5 with natural shapes and verifies.
S4="$WORK/s4"
run 4 "$WORK/s4.log" --set checkpoint.every=5 --set checkpoint.dir="$S4" --metrics "$WORK/s4.jsonl" \
  || bad "4-rank run with checkpoints failed: $(tail -3 "$WORK/s4.log")"
[ -f "$S4/step_000005.h5" ] && [ -f "$S4/step_000010.h5" ] && [ "$(cat "$S4/latest")" = step_000010.h5 ] \
  && ok "step_000005.h5, step_000010.h5 and latest written" || bad "checkpoint files: $(ls "$S4")"
h5dump -H "$S4/step_000010.h5" >"$WORK/dump" 2>&1
grep -A3 'DATASET "h.1.attn.c_attn.weight"' "$WORK/dump" | grep -q 'SIMPLE { ( 32, 96 ) / ( 32, 96 ) }' \
  && grep -q 'GROUP "exp_avg_sq"' "$WORK/dump" \
  && ok "h5dump -H reads it: /model/h.1.attn.c_attn.weight is (32, 96)" || bad "h5dump -H: $(head -5 "$WORK/dump")"
"$CKPT" info "$S4/step_000010.h5" >"$WORK/info" && grep -q "saved by  *4 ranks, strategy zero3" "$WORK/info" \
  && ok "fsdp-ckpt info" || bad "fsdp-ckpt info: $(cat "$WORK/info")"
mpirun -np 3 "$CKPT" verify "$S4/step_000010.h5" >"$WORK/verify" 2>&1 && ok "fsdp-ckpt verify on 3 ranks: $(tail -1 "$WORK/verify")" \
  || bad "verify of a good file: $(tail -3 "$WORK/verify")"

# 2. Resume the 4-rank step 5 on 1, 2, 3 ranks and with another strategy.
for spec in "1 zero3" "2 zero3" "3 zero3" "2 ddp" "3 zero2"; do
  set -- $spec
  run "$1" "$WORK/r.log" --set fsdp.strategy="$2" --resume "$S4/step_000005.h5" --metrics "$WORK/r$1$2.jsonl" \
    || bad "resume on $1 ranks ($2) failed: $(tail -3 "$WORK/r.log")"
  grep -q "resumed from $S4/step_000005.h5 at step 5 (saved by 4 ranks, zero3)" "$WORK/r.log" \
    || bad "no resume line on $1 ranks ($2)"
  same_losses "saved on 4 ranks, resumed on $1 ($2): losses of steps 6-10 match" "$WORK/s4.jsonl" "$WORK/r$1$2.jsonl" 1e-5
done

# 3. Straight vs checkpoint + resume at the same N: identical final checkpoints.
for strategy in zero3 ddp; do
  for np in 1 2 3; do
    A="$WORK/a_${strategy}_$np" B="$WORK/b_${strategy}_$np"
    run "$np" "$WORK/a.log" --set fsdp.strategy=$strategy --set checkpoint.every=5 --set checkpoint.dir="$A" \
      && run "$np" "$WORK/b.log" --set fsdp.strategy=$strategy --set checkpoint.every=5 --set checkpoint.dir="$B" \
           --resume "$A/step_000005.h5" || bad "$strategy np $np runs failed: $(tail -3 "$WORK/b.log")"
    "$CKPT" diff "$A/step_000010.h5" "$B/step_000010.h5" >"$WORK/diff" 2>&1 \
      && grep -q "^max abs diff 0, max rel diff 0: identical" "$WORK/diff" \
      && ok "$strategy on $np: straight and resumed step 10 identical ($(tail -1 "$WORK/diff"))" \
      || bad "$strategy on $np: $(tail -2 "$WORK/diff")"
  done
done
# The same under bf16: the checkpoint holds the fp32 masters; gathered and full parameters are
# rebuilt from them as bf16 casts, so the resumed run is still bit for bit the straight one.
BF16=(--set fsdp.mixed_precision=bf16 --set fsdp.reduce_dtype=bf16)
for strategy in zero3 zero2; do
  for np in 2 3; do
    A="$WORK/abf_${strategy}_$np" B="$WORK/bbf_${strategy}_$np"
    run "$np" "$WORK/a.log" "${BF16[@]}" --set fsdp.strategy=$strategy --set checkpoint.every=5 \
      --set checkpoint.dir="$A" \
      && run "$np" "$WORK/b.log" "${BF16[@]}" --set fsdp.strategy=$strategy --set checkpoint.every=5 \
           --set checkpoint.dir="$B" --resume "$A/step_000005.h5" \
      || bad "bf16 $strategy np $np runs failed: $(tail -3 "$WORK/b.log")"
    "$CKPT" diff "$A/step_000010.h5" "$B/step_000010.h5" >"$WORK/diff" 2>&1 \
      && grep -q "^max abs diff 0, max rel diff 0: identical" "$WORK/diff" \
      && ok "bf16 $strategy on $np: straight and resumed step 10 identical" \
      || bad "bf16 $strategy on $np: $(tail -2 "$WORK/diff")"
  done
done
"$CKPT" diff "$S4/step_000005.h5" "$S4/step_000010.h5" >"$WORK/diff" 2>&1
[ $? -eq 1 ] && grep -q "different" "$WORK/diff" && ok "diff of different steps exits 1: $(tail -1 "$WORK/diff")" \
  || bad "diff of different files: $(tail -2 "$WORK/diff")"

# 4. A rank killed (SIGKILL) inside the write of step 15: the job ends, only a .tmp is left,
#    and --resume auto continues from step 10.
K="$WORK/k"
run 2 "$WORK/k1.log" --set checkpoint.every=5 --set checkpoint.dir="$K" || bad "run before the kill failed"
FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE=60 timeout 120 mpirun -np 2 "$TRAIN" "${TINY[@]}" --set train.steps=20 \
  --set checkpoint.every=5 --set checkpoint.dir="$K" --resume auto >"$WORK/k2.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "pausing" "$WORK/k2.log" && break; sleep 0.1; done
# $job is timeout; its child is mpirun; mpirun's children are the ranks.
launcher=$(pgrep -P "$job" | head -1)
victim=$(pgrep -P "$launcher" | tail -1)  # a rank (its name may be "exe": it re-execs itself)
partial() { compgen -G "$K/step_000015.h5.*.tmp" >/dev/null; }  # step_000015.h5.<run id>.tmp
if [ -n "$victim" ] && partial; then
  kill -KILL "$victim"
  start=$(date +%s)
  wait "$job"
  rc=$?
  took=$(($(date +%s) - start))
  [ "$rc" -ne 0 ] && [ "$took" -lt 30 ] && ! kill -0 "$launcher" 2>/dev/null \
    && ok "killed rank pid $victim (SIGKILL) mid-write: the job ended in ${took}s (exit $rc)" \
    || bad "after the kill: exit $rc after ${took}s"
else
  bad "never reached the paused write (victim '$victim'): $(tail -3 "$WORK/k2.log")"
  kill "$job" 2>/dev/null
  wait "$job"
fi
partial && [ ! -f "$K/step_000015.h5" ] && [ "$(cat "$K/latest")" = step_000010.h5 ] \
  && ok "only step_000015.h5.<run>.tmp is left; latest still names step_000010.h5" || bad "after the kill: $(ls "$K")"
run 2 "$WORK/k3.log" --set train.steps=15 --set checkpoint.every=5 --set checkpoint.dir="$K" --resume auto
grep -q "resumed from $K/step_000010.h5 at step 10" "$WORK/k3.log" && [ -f "$K/step_000015.h5" ] && ! partial \
  && ok "--resume auto continued from step 10 and replaced the partial file" || bad "resume after the kill: $(tail -3 "$WORK/k3.log")"

# 5. Damaged files: one line naming the file and the dataset, exit 5, on 2 ranks.
D="$WORK/damaged"
mkdir -p "$D"
for f in flip trunc shape; do cp "$S4/step_000010.h5" "$D/$f.h5"; done
"$TAMPER" flip "$D/flip.h5" /optim/exp_avg_sq/h.1.mlp.c_fc.weight 777
truncate -s 200000 "$D/trunc.h5"
"$TAMPER" reshape "$D/shape.h5" /model/wpe.weight
printf 'this is not an HDF5 file\n' >"$D/text.h5"
expect_fail "flipped byte" 5 "flip.h5: /optim/exp_avg_sq/h.1.mlp.c_fc.weight: checksum mismatch in block 0" \
  mpirun -np 2 "$TRAIN" "${TINY[@]}" --resume "$D/flip.h5"
expect_fail "truncated file" 5 "trunc.h5: .*truncated file: eof = 200000" mpirun -np 2 "$TRAIN" "${TINY[@]}" --resume "$D/trunc.h5"
expect_fail "wrong-shaped dataset" 5 "shape.h5: /model/wpe.weight: shape \[2049\], but this model's is \[64, 32\]" \
  mpirun -np 2 "$TRAIN" "${TINY[@]}" --resume "$D/shape.h5"
expect_fail "different model config" 5 "step_000010.h5: root attributes: written for a different model: n_embd 32 \(this run: 48\)" \
  mpirun -np 2 "$TRAIN" "${TINY[@]}" --set model.n_embd=48 --resume "$S4/step_000010.h5"
expect_fail "not HDF5" 5 "text.h5: not an HDF5 file" mpirun -np 2 "$TRAIN" "${TINY[@]}" --resume "$D/text.h5"
expect_fail "missing file" 5 "nope.h5: no such file" mpirun -np 2 "$TRAIN" "${TINY[@]}" --resume "$D/nope.h5"
expect_fail "fsdp-ckpt verify of a flipped byte" 1 "flip.h5: /optim/exp_avg_sq/h.1.mlp.c_fc.weight: checksum mismatch" \
  mpirun -np 2 "$CKPT" verify "$D/flip.h5"
expect_fail "fsdp-ckpt verify of a wrong shape" 1 "shape.h5: /model/wpe.weight: shape \[2049\]" "$CKPT" verify "$D/shape.h5"

# --resume auto skips a damaged newest checkpoint (warning) and takes the previous good one.
F="$WORK/fallback"
mkdir -p "$F"
cp "$S4/step_000005.h5" "$S4/step_000010.h5" "$F/"
"$TAMPER" flip "$F/step_000010.h5" /model/wte.weight 5
printf 'partial' >"$F/step_000015.h5.tmp"
run 3 "$WORK/f.log" --set checkpoint.dir="$F" --resume auto
grep -q "warning: $F/step_000010.h5: /model/wte.weight: checksum mismatch.*skipping it" "$WORK/f.log" \
  && grep -q "resumed from $F/step_000005.h5 at step 5" "$WORK/f.log" \
  && ok "--resume auto skipped the damaged step 10 (and the .tmp) and resumed at step 5" \
  || bad "auto fallback: $(head -5 "$WORK/f.log")"
run 2 "$WORK/e.log" --set checkpoint.dir="$WORK/empty" --resume auto
grep -q "no complete checkpoint in $WORK/empty, starting fresh" "$WORK/e.log" && ok "--resume auto with none starts fresh" \
  || bad "auto without checkpoints: $(head -3 "$WORK/e.log")"
finish
