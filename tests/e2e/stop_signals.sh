#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Stop signals under mpirun, without Slurm (2 ranks): SIGUSR1 to mpirun (forwarded to every
# rank) and SIGTERM to each rank both end the run after a whole step with a checkpoint and exit
# code 75; the run resumed from that checkpoint gives the uninterrupted run's losses exactly;
# the same while a background (checkpoint.async) write is in flight.
# SIGTERM to mpirun itself is reported, not asserted: OpenMPI kills its ranks on it, which is
# why the job scripts forward USR1.
source "$(dirname "$0")/lib.sh"
ARGS=(--config inputs/default.toml --set train.steps=10 --set eval.every=0 --set train.peak_tflops=1)

# wait_step FILE STEP SECONDS
wait_step() {
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do grep -q "\"step\":$2," "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
losses() { /usr/bin/python3 -c '
import json, sys
d = {}
for p in sys.argv[1:]:
    for l in open(p):
        r = json.loads(l)
        if "loss" in r: d[r["step"]] = r["loss"]
print(" ".join(f"{s}:{d[s]!r}" for s in sorted(d)))' "$@"; }

mpirun -np 2 "$TRAIN" "${ARGS[@]}" --set checkpoint.dir="$WORK/ref" --metrics "$WORK/ref.jsonl" \
  >"$WORK/ref.log" 2>&1 || bad "uninterrupted run failed: $(tail -3 "$WORK/ref.log")"

# stop_run NAME HOW: starts a 2-rank run, signals it after step 3 (HOW: usr1-mpirun,
# term-ranks, term-mpirun) and leaves its exit code in $rc, its output in $WORK/NAME.log.
stop_run() {
  local name=$1 how=$2
  shift 2
  mpirun -np 2 "$TRAIN" "${ARGS[@]}" --set checkpoint.dir="$WORK/$name" \
    --metrics "$WORK/$name.jsonl" "$@" >"$WORK/$name.log" 2>&1 &
  local p=$!
  wait_step "$WORK/$name.jsonl" 3 60 || bad "$name: no step 3"
  case $how in
    usr1-mpirun) kill -USR1 $p ;;
    term-mpirun) kill -TERM $p ;;
    term-ranks) kill -TERM $(ps -o pid= --ppid $p) ;;  # as Slurm does: every process of the job
  esac
  timeout 60 tail --pid=$p -f /dev/null
  wait $p
  rc=$?
}

stop_run usr1 usr1-mpirun
ckpt=$(sed -n 's/.*checkpoint written: \([^ ;]*\).*/\1/p' "$WORK/usr1.log" | head -1)
if [ $rc -eq 75 ] && grep -q "stop requested (SIGUSR1)" "$WORK/usr1.log" && [ -e "$ckpt" ]; then
  ok "USR1 to mpirun: exit 75, $(grep -m1 'stop requested' "$WORK/usr1.log")"
else
  bad "USR1 to mpirun: exit $rc, checkpoint '$ckpt'"; tail -5 "$WORK/usr1.log"
fi
mpirun -np 2 "$TRAIN" "${ARGS[@]}" --set checkpoint.dir="$WORK/usr1" --metrics "$WORK/usr1.resumed.jsonl" \
  --resume auto >"$WORK/resume.log" 2>&1 || bad "resume failed: $(tail -3 "$WORK/resume.log")"
[ "$(losses "$WORK/usr1.jsonl" "$WORK/usr1.resumed.jsonl")" = "$(losses "$WORK/ref.jsonl")" ] &&
  ok "stopped at step $(losses "$WORK/usr1.jsonl" | awk '{print $NF}' | cut -d: -f1), resumed: losses equal the uninterrupted run's" ||
  bad "resumed losses differ: $(losses "$WORK/usr1.jsonl" "$WORK/usr1.resumed.jsonl") vs $(losses "$WORK/ref.jsonl")"

stop_run term term-ranks
ckpt=$(sed -n 's/.*checkpoint written: \([^ ;]*\).*/\1/p' "$WORK/term.log" | head -1)
[ $rc -eq 75 ] && grep -q "stop requested (SIGTERM)" "$WORK/term.log" && [ -e "$ckpt" ] &&
  ok "SIGTERM to every rank: exit 75, checkpoint $ckpt" || { bad "SIGTERM to the ranks: exit $rc"; tail -5 "$WORK/term.log"; }

# A signal while a background write is in flight (checkpoint.async, every 2 steps, each write
# held 2 s inside the file): the stop waits for that write, then saves the stopped step, exits
# 75; both files verify and the resumed run gives the uninterrupted losses.
for how in usr1-mpirun term-ranks; do
  FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE=2 stop_run "bg_$how" $how --set checkpoint.every=2
  ckpt=$(sed -n 's/.*checkpoint written: \([^ ;]*\).*/\1/p' "$WORK/bg_$how.log" | head -1)
  verified=$(for f in "$WORK/bg_$how"/step_*.h5; do "$BUILD/fsdp-ckpt" verify "$f" >/dev/null && echo "$(basename "$f")"; done | tr '\n' ' ')
  if [ $rc -eq 75 ] && grep -q "writing in the background" "$WORK/bg_$how.log" && [ -e "$ckpt" ] &&
     [ "$(ls "$WORK/bg_$how"/step_*.h5 | wc -l)" -ge 2 ] && [ "$(echo $verified | wc -w)" -ge 2 ] &&
     ! compgen -G "$WORK/bg_$how/*.tmp" >/dev/null; then
    ok "$how during a background write: exit 75, $(basename "$ckpt"); verified: $verified"
  else
    bad "$how during a background write: exit $rc, checkpoint '$ckpt', verified: $verified"
    tail -5 "$WORK/bg_$how.log"
  fi
  mpirun -np 2 "$TRAIN" "${ARGS[@]}" --set checkpoint.dir="$WORK/bg_$how" --set checkpoint.every=2 \
    --metrics "$WORK/bg_$how.resumed.jsonl" --resume auto >"$WORK/bg_$how.resume.log" 2>&1 ||
    bad "resume after $how failed: $(tail -3 "$WORK/bg_$how.resume.log")"
  [ "$(losses "$WORK/bg_$how.jsonl" "$WORK/bg_$how.resumed.jsonl")" = "$(losses "$WORK/ref.jsonl")" ] &&
    ok "resumed after $how during a background write: losses equal the uninterrupted run's" ||
    bad "resumed losses after $how differ"
done

stop_run term_mpirun term-mpirun
echo "info: SIGTERM to mpirun itself: exit $rc, checkpoint line: $(grep -c 'checkpoint written' "$WORK/term_mpirun.log")"
finish
