#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Output paths and checkpoint directories that a careless or hostile run points at: --metrics
# and --trace never replace a file that is not theirs (exit 2, the file untouched); a hostile
# checkpoint directory (links, directories and garbage under checkpoint names, a `latest` naming
# nothing, another run's files) is read without harm; a run resumed into a directory that holds
# another model's higher-numbered checkpoints, stopped by SIGUSR1 and requeued, keeps its
# checkpoint and continues from it; a rolled-back run keeps the file it just wrote; a second
# job on a directory in use is refused (exit 7) while the first finishes.
source "$(dirname "$0")/lib.sh"

D="$WORK/ck"
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=2 \
  --set checkpoint.dir="$D" >"$WORK/first" 2>&1 || bad "the first checkpoint: $(tail -2 "$WORK/first")"
C="$D/step_000002.h5"
sum_before=$(sha256sum "$C" | cut -c1-64)
head -c 4096 /dev/urandom >"$WORK/tokens.bin"
R=("$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.dir="$WORK/other")

# --metrics and --trace: refused by name, at start, on every rank count.
expect_end "--metrics names a checkpoint" 2 "--metrics $C: is an HDF5 file \(a checkpoint\?\): refusing to overwrite it" \
  mpirun -np 2 "${R[@]}" --metrics "$C"
expect_end "--metrics names the run's data file" 2 "--metrics $WORK/tokens.bin: is a file this run reads" \
  mpirun -np 2 "${R[@]}" --set data.train="$WORK/tokens.bin" --set data.format=text --metrics "$WORK/tokens.bin"
expect_end "--metrics names the deck" 2 "--metrics inputs/default.toml: is a file this run reads" \
  mpirun -np 2 "${R[@]}" --metrics inputs/default.toml
expect_end "--metrics /dev/full" 2 "--metrics /dev/full: is not a regular file" mpirun -np 2 "${R[@]}" --metrics /dev/full
expect_end "--metrics names a directory" 2 "--metrics $WORK: is a directory" mpirun -np 2 "${R[@]}" --metrics "$WORK"
printf 'not json\n' >"$WORK/notes.txt"
expect_end "--metrics names someone's text file" 2 "--metrics $WORK/notes.txt: exists and is not a metrics file" \
  mpirun -np 2 "${R[@]}" --metrics "$WORK/notes.txt"
expect_end "--trace in a missing directory" 2 "--trace $WORK/nope/t.rank0.json: the directory $WORK/nope does not exist" \
  mpirun -np 2 "${R[@]}" --trace "$WORK/nope/t"
[ "$(sha256sum "$C" | cut -c1-64)" = "$sum_before" ] && [ "$(cat "$WORK/notes.txt")" = "not json" ] \
  && ok "the refused files are untouched" || bad "a refused output file was changed"
# A metrics file of ours is replaced whole (written as .partial, renamed at the end).
timeout 60 mpirun -np 2 "${R[@]}" --metrics "$WORK/m.jsonl" --trace "$WORK/t.json" >"$WORK/out" 2>&1
[ -f "$WORK/m.jsonl" ] && [ ! -e "$WORK/m.jsonl.partial" ] && [ "$(grep -c '"loss"' "$WORK/m.jsonl")" = 2 ] \
  && [ -f "$WORK/t.json.rank1.json" ] && [ ! -e "$WORK/t.json.rank1.json.partial" ] \
  && ok "--metrics and --trace: complete files under their names, no .partial left" \
  || bad "metrics/trace after a run: $(ls "$WORK" | tr '\n' ' ')"

# A hostile checkpoint directory: nothing in it is read as a checkpoint but real ones, nothing
# of it is removed, and the run resumes from its own newest.
H="$WORK/hostile"
mkdir -p "$H/step_000009.h5"                    # a directory under a checkpoint name
ln -s /dev/zero "$H/step_000008.h5"             # a link to a device
ln -s "$C" "$H/step_000007.h5"                  # a link to a real checkpoint elsewhere
head -c 5000 /dev/urandom >"$H/step_000010.h5"   # garbage, the highest step
: >"$H/step_99999999999999999999.h5"            # a step past int64
printf 'step_000042.h5\n' >"$H/latest"          # names nothing
cp "$C" "$H/step_000002.h5"
: >"$H/step_000003.h5.0123456789abcdef.tmp"     # another run's write in progress
before=$(ls -A "$H" | sort | tr '\n' ' ')
expect_end "a hostile checkpoint directory" 0 "resumed from $H/step_000007.h5 at step 2" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=3 --set checkpoint.dir="$H" --resume auto
grep -q "warning: $H/step_000010.h5: not an HDF5 file.*skipping it" "$WORK/out" "$WORK/err" \
  && ok "the garbage step_000010.h5 was skipped with a warning; the link to a real checkpoint was used" \
  || bad "hostile dir: no warning for the garbage file"
for f in $before; do [ -e "$H/$f" ] || [ -L "$H/$f" ] || bad "hostile dir: $f was removed"; done
[ "$(readlink "$H/step_000008.h5")" = /dev/zero ] && ok "the hostile directory's files are all still there" \
  || bad "hostile dir now: $(ls -A "$H" | tr '\n' ' ')"

# Resume into a directory holding another model's higher-numbered checkpoints, SIGUSR1, requeue.
Q="$WORK/shared"
# The other model checkpoints every step up to 40, so the stop below lands on one of its names.
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set model.n_layer=1 --set train.steps=40 \
  --set checkpoint.every=1 --set checkpoint.keep=100 --set checkpoint.dir="$Q" >"$WORK/other_model" 2>&1 \
  || bad "the other model's run: $(tail -2 "$WORK/other_model")"
timeout -k 5 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2000 --set checkpoint.dir="$Q" \
  --set checkpoint.keep=1 --resume auto >"$WORK/usr1.log" 2>&1 &
job=$!
for _ in $(seq 300); do grep -q "^step *[3-9]/" "$WORK/usr1.log" && break; sleep 0.1; done
launcher=$(pgrep -P "$job" | head -1)
kill -USR1 "$launcher"
wait "$job"
rc=$?
written=$(grep -o "checkpoint written: [^ ]*" "$WORK/usr1.log" | cut -d' ' -f3)
theirs=$(ls "$Q" | grep -c -E '^step_0000[0-9]{2}\.h5$')
if [ "$rc" -eq 75 ] && [ -n "$written" ] && [ -f "$written" ] && [ "$Q/$(cat "$Q/latest")" = "$written" ] \
   && [ "$theirs" -ge 40 ]; then
  ok "SIGUSR1 beside another model's steps 1-40 (exit 75): $written exists, latest names it, all 40 of theirs kept"
else
  bad "SIGUSR1 in a shared directory: exit $rc, written '$written', dir: $(ls "$Q" | tr '\n' ' ')"
fi
step=$(basename "$written" | sed -E 's/step_0*([0-9]+).*/\1/')
expect_end "the requeued job" 0 "resumed from $written at step $step" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=$((step + 1)) --set checkpoint.dir="$Q" \
  --set checkpoint.keep=1 --resume auto
# Rolled back: resumed from step 10 of a run that reached 20, with keep = 1.
expect_end "a rolled-back run" 0 "resumed from $Q/step_000010.h5 at step 10" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set model.n_layer=1 --set train.steps=12 --set checkpoint.every=1 \
  --set checkpoint.keep=1 --set checkpoint.dir="$Q" --resume "$Q/step_000010.h5"
[ -f "$Q/step_000012.h5" ] && [ "$(cat "$Q/latest")" = step_000012.h5 ] && [ -f "$Q/step_000010.h5" ] \
  && [ ! -f "$Q/step_000011.h5" ] && [ -f "$written" ] \
  && ok "rolled back (keep = 1): step 12 (just written) and 10 (resumed from) kept, the other run's file too" \
  || bad "after the rollback: $(ls "$Q" | tr '\n' ' ')"
still_resumes "after the shared directory" "$D" 2

# Two jobs on one directory: the second is refused at start, the first finishes.
T="$WORK/two"
timeout 120 mpirun -np 1 "$TRAIN" "${SMALL[@]}" --set train.steps=1000 --set checkpoint.every=500 \
  --set checkpoint.dir="$T" >"$WORK/job1.log" 2>&1 &
job1=$!
for _ in $(seq 300); do [ -e "$T/.fsdp-lock" ] && break; sleep 0.1; done
LEFT_IGNORE=train.steps=1000 expect_end "a second job on a directory in use" 7 "checkpoint.dir $T is in use by another job \(host .*, pid [0-9]+" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=10 --set checkpoint.every=5 --set checkpoint.dir="$T"
wait "$job1"
rc=$?
[ "$rc" -eq 0 ] && "$CKPT" verify "$T/step_001000.h5" >/dev/null 2>&1 \
  && ok "the first job finished (exit 0) and its step 1000 verifies" || bad "the first job: exit $rc, $(tail -2 "$WORK/job1.log")"
# --metrics on a JSON file fsdp did not write (a config.json): refused, untouched (issue 44, 3).
printf '{\n  "architectures": ["LlamaForCausalLM"]\n}\n' >"$WORK/config.json"
sum=$(sha256sum <"$WORK/config.json")
expect_end "--metrics on a config.json" 2 "--metrics $WORK/config.json: exists and is not a metrics file fsdp wrote" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --metrics "$WORK/config.json"
[ "$(sha256sum <"$WORK/config.json")" = "$sum" ] && ok "--metrics on a config.json: untouched" ||
  bad "--metrics on a config.json: it changed"

# Retention after a resume: keep = 2 keeps the 2 written last plus the file resumed from.
K="$WORK/keep"
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=4 --set checkpoint.every=4 \
  --set checkpoint.dir="$K" >"$WORK/first" 2>&1 &&
  timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=8 --set checkpoint.every=1 \
    --set checkpoint.keep=2 --set checkpoint.dir="$K" --resume auto >"$WORK/first" 2>&1 ||
  bad "retention after resume: the runs: $(tail -2 "$WORK/first")"
kept=$(cd "$K" && ls step_*.h5 | tr '\n' ' ')
[ "$kept" = "step_000004.h5 step_000007.h5 step_000008.h5 " ] &&
  ok "retention after resume, keep = 2: $kept" || bad "retention after resume, keep = 2: '$kept'"

# checkpoint.dir removed during the run (rank 0 paused before step 4 while it goes): the next
# save refuses to recreate it without the job's lock, exit 7, one line; nothing is recreated.
G="$WORK/gone"
FSDP_TEST_STALL=0@3:4 timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=6 \
  --set checkpoint.every=1 --set checkpoint.async=false --set checkpoint.dir="$G" \
  >"$WORK/gone.out" 2>"$WORK/gone.err" &
job=$!
for _ in $(seq 100); do [ -f "$G/step_000003.h5" ] && break; sleep 0.1; done
rm -rf "$G"
wait $job
rc=$?
if [ $rc -eq 7 ] && grep -q "checkpoint.dir $G: was removed during the run" "$WORK/gone.err" && [ ! -e "$G" ]; then
  ok "checkpoint.dir removed mid-run (exit 7): $(grep -m1 'was removed' "$WORK/gone.err" | cut -c1-160)"
else
  bad "checkpoint.dir removed mid-run: exit $rc, exists: $([ -e "$G" ] && echo yes || echo no), $(tail -2 "$WORK/gone.err")"
fi

finish
