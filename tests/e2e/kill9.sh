#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Kill -9 trials: a 2-rank run checkpointing every step is SIGKILLed at a random moment (one
# rank, both ranks, or mpirun and both ranks), then rerun with --resume auto. Each trial checks
#   - the newest complete checkpoint left behind, and the one `latest` names, pass
#     `fsdp-ckpt verify` (a kill never leaves a broken step_*.h5, at most a *.tmp),
#   - the rerun resumes from exactly the one `latest` names, else the newest (or starts fresh
#     when there was none) and finishes every step,
#   - its losses from the resumed step on equal an uninterrupted run's, and its final checkpoint
#     is identical to that run's (fsdp-ckpt diff).
# KILL9_TRIALS (default 3), KILL9_SEED (default: the time; printed, to replay a failure).
source "$(dirname "$0")/lib.sh"
CKPT="$BUILD/fsdp-ckpt"
TRIALS=${KILL9_TRIALS:-3}
SEED=${KILL9_SEED:-$(date +%s)}
RANDOM=$SEED
STEPS=12
DECK=(--config inputs/default.toml --set model.n_layer=2 --set model.n_embd=32
      --set train.batch_size=4 --set train.micro_batch_size=2 --set eval.every=0
      --set eval.sequences=0 --set train.peak_tflops=1 --set train.steps=$STEPS
      --set checkpoint.every=1 --set checkpoint.keep=2)
echo "kill9: $TRIALS trials, KILL9_SEED=$SEED"

now_ms() { date +%s%3N; }
# same_losses A.jsonl B.jsonl: every step in B has A's loss (relative 1e-9); prints the range.
same_losses() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
def load(p): return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r}
a, b = load(sys.argv[1]), load(sys.argv[2])
bad = [s for s in b if s not in a or abs(b[s] - a[s]) > 1e-9 * abs(a[s])]
print(f"steps {min(b)}..{max(b)}" if b else "no steps", f"({len(bad)} differ)" if bad else "match")
sys.exit(0 if b and not bad else 1)
PY
}

# The uninterrupted reference, timed so the kills land anywhere in a run.
REF="$WORK/ref"
t0=$(now_ms)
timeout 300 mpirun -np 2 "$TRAIN" "${DECK[@]}" --set checkpoint.dir="$REF" --metrics "$WORK/ref.jsonl" \
  >"$WORK/ref.log" 2>&1 || { bad "reference run failed: $(tail -3 "$WORK/ref.log")"; finish; exit 1; }
ref_ms=$(($(now_ms) - t0))
ok "reference run: $STEPS steps in ${ref_ms} ms"
FINAL=$(printf 'step_%06d.h5' "$STEPS")

modes=("one rank" "both ranks" "mpirun and both ranks")
for trial in $(seq 1 "$TRIALS"); do
  D="$WORK/t$trial"
  mode=${modes[$(((trial - 1) % 3))]}
  delay=$((RANDOM * 32768 + RANDOM))
  delay=$((delay % (ref_ms * 9 / 10) + 100))  # ms after the launch
  mpirun -np 2 "$TRAIN" "${DECK[@]}" --set checkpoint.dir="$D" >"$WORK/t$trial.kill.log" 2>&1 &
  job=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  for _ in $(seq 100); do  # the ranks exist (a kill before they start would test nothing)
    ranks=$(pgrep -P "$job" | tr '\n' ' ')
    [ -n "${ranks// /}" ] && break
    sleep 0.1
  done
  case "$mode" in
    "one rank") victims=$(echo $ranks | tr ' ' '\n' | sed -n "$((RANDOM % 2 + 1))p") ;;
    "both ranks") victims=$ranks ;;
    *) victims="$job $ranks" ;;
  esac
  [ -n "${victims// /}" ] && kill -KILL $victims 2>/dev/null
  for _ in $(seq 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$job" $ranks 2>/dev/null  # if mpirun outlived 60 s, end it
  wait "$job" 2>/dev/null
  where="trial $trial (kill -9 of $mode at ${delay} ms)"

  # The checkpoint --resume auto should take, in ckpt::list_complete's order: the one `latest`
  # names, else the newest complete one. A kill between a save's rename and its update of
  # `latest` leaves a complete file newer than the one `latest` names; resume still trusts
  # `latest` (what keeps a run from taking another run's higher steps), and redoes that step.
  # Both must verify.
  newest=$(ls "$D"/step_*.h5 2>/dev/null | sort | tail -1)
  pick=$newest
  if [ -n "$newest" ] && [ -f "$D/latest" ] && [ -f "$D/$(cat "$D/latest")" ]; then
    pick="$D/$(cat "$D/latest")"
  fi
  if [ -n "$newest" ]; then
    from=$((10#$(basename "$pick" .h5 | sed 's/^step_//')))
    for f in $(printf '%s\n' "$newest" "$pick" | sort -u); do
      "$CKPT" verify "$f" >"$WORK/verify.log" 2>&1 \
        && ok "$where: $(basename "$f") verifies$(ls "$D" | grep -q '\.tmp$' && echo ', a .tmp was left')" \
        || bad "$where: $(basename "$f") fails verify: $(tail -2 "$WORK/verify.log")"
    done
    want="resumed from $pick at step $from "
  else
    from=0
    want="no complete checkpoint in $D, starting fresh"
  fi
  if [ "$from" -ge "$STEPS" ]; then
    ok "$where: the run had finished before the kill (nothing to resume)"
    continue
  fi

  timeout 300 mpirun -np 2 "$TRAIN" "${DECK[@]}" --set checkpoint.dir="$D" --resume auto \
    --metrics "$WORK/t$trial.jsonl" >"$WORK/t$trial.resume.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$where: the resumed run exited $rc: $(tail -3 "$WORK/t$trial.resume.log")"
    continue
  fi
  grep -qF "$want" "$WORK/t$trial.resume.log" && ok "$where: ${want% }" \
    || bad "$where: expected '$want', got: $(grep -m1 -E 'resumed|fresh' "$WORK/t$trial.resume.log")"
  last=$(tail -1 "$WORK/t$trial.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
  cmp=$(same_losses "$WORK/ref.jsonl" "$WORK/t$trial.jsonl")
  [ $? -eq 0 ] && [ "$last" = "$STEPS" ] && ok "$where: finished at step $last; losses of $cmp the uninterrupted run's" \
    || bad "$where: last step $last, losses: $cmp"
  "$CKPT" diff "$REF/$FINAL" "$D/$FINAL" >"$WORK/diff.log" 2>&1 \
    && ok "$where: final $FINAL identical to the uninterrupted run's" \
    || bad "$where: final checkpoint differs: $(tail -1 "$WORK/diff.log")"
done
finish
