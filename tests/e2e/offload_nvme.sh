#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp.offload = nvme on hostile disks: an offload.path that is missing, a file, read-only, on a
# file system too small, or in use by another job is refused before any step with one line
# (exit 2 or 7); a disk that fails or fills mid-run (FSDP_TEST_OFFLOAD_FAIL) ends every rank
# with exit 7 and the last checkpoint verifies and resumes (in memory: no offload); a job killed
# with SIGKILL leaves no offload file behind and the next job takes the directory; --resume auto
# past a damaged checkpoint starts as fresh as a fresh run (the refused load's moments, already
# in the offload file, are not kept). The tmpfs cases need mount (root); else skipped.
source "$(dirname "$0")/lib.sh"

NVME=(--set fsdp.offload=nvme --set offload.params=true)
D="$WORK/offload"
mkdir -p "$D"

expect_end "missing offload.path" 2 "offload.path $WORK/nowhere: No such file or directory" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$WORK/nowhere"
printf 'x' >"$WORK/afile"
expect_end "offload.path is a file" 2 "offload.path $WORK/afile: is not a directory" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$WORK/afile"
expect_end "fsdp.offload = nvme without offload.path" 2 "fsdp.offload = nvme needs offload.path" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2

MNT="$WORK/mnt"
mkdir -p "$MNT"
if mount -t tmpfs -o size=64k none "$MNT" 2>/dev/null; then
  expect_end "offload.path too small (64 KiB tmpfs), np 3" 7 "offload.path $MNT: no space left on device: .* free, the ranks on this node need" \
    mpirun -np 3 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$MNT"
  [ -z "$(ls -A "$MNT")" ] && ok "nothing left in the small file system" || bad "left in $MNT: $(ls -A "$MNT")"
  umount "$MNT"
  mount -t tmpfs -o ro,size=64k none "$MNT"
  expect_end "read-only offload.path" 7 "offload.path $MNT: not writable \(Read-only file system\)" \
    mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$MNT"
  umount "$MNT"
else
  echo "skip: the small and read-only file systems need mount -t tmpfs (root)"
fi

# A disk that fails, or fills, mid-run (request 150 is in step 3): exit 7 on every rank, naming
# the file and the errno; the step-2 checkpoint stands and resumes without offload. The offload
# files on a small tmpfs where mount works (no O_DIRECT there: the buffered path), else in $D.
F="$D"
if mount -t tmpfs -o size=4m none "$MNT" 2>/dev/null; then F="$MNT"; fi
for spec in "1@150" "0@150:enospc"; do
  C="$WORK/ck_${spec//[@:]/_}"
  case $spec in *enospc) why="No space left on device" np=3 ;; *) why="Input/output error" np=2 ;; esac
  expect_end "disk fails mid-run ($spec), np $np, offload.path $F" 7 "offload file in $F: (reading|writing) .*: $why \(fsdp.offload = nvme: the disk failed mid-run; the last checkpoint stands\)" \
    env FSDP_TEST_OFFLOAD_FAIL="$spec" mpirun -np $np "$TRAIN" "${SMALL[@]}" "${NVME[@]}" \
    --set train.steps=8 --set checkpoint.every=2 --set checkpoint.dir="$C" --set offload.path="$F"
  [ "$(cat "$C/latest" 2>/dev/null)" = step_000002.h5 ] && ok "$spec: latest names step_000002.h5" \
    || bad "$spec: latest is '$(cat "$C/latest" 2>/dev/null)'"
  still_resumes "disk failed mid-run ($spec)" "$C" 2
  # The job ended through MPI_Abort: the data files had no names; the lock file stays, unlocked.
  left=$(ls -A "$F" | grep -v '^fsdp-offload.lock$' | tr '\n' ' ')
  [ -z "$left" ] && ok "$spec: no offload file left in $F" || bad "$spec: left in $F: $left"
done
[ "$F" = "$MNT" ] && umount "$MNT"

# A refused checkpoint leaves nothing behind: its moments were read into the offload file before
# the checksum failed; the fresh start must not train on them. Deterministic Llama at np 2: the
# run after --resume auto past the damaged file has the fresh run's losses, bit for bit.
L=(--config inputs/llama_tiny.toml --set train.deterministic=true --set fsdp.offload=nvme
   --set offload.path="$D" --set eval.every=0 --set eval.sequences=0 --set train.peak_tflops=1)
timeout 60 mpirun -np 2 "$TRAIN" "${L[@]}" --set train.steps=3 --metrics "$WORK/fresh.jsonl" \
  >"$WORK/fresh" 2>&1 || bad "fresh nvme run: $(tail -2 "$WORK/fresh")"
timeout 60 mpirun -np 2 "$TRAIN" "${L[@]}" --set train.steps=2 --set checkpoint.every=2 \
  --set checkpoint.dir="$WORK/ckd" >"$WORK/first" 2>&1 || bad "nvme run to damage: $(tail -2 "$WORK/first")"
C="$WORK/ckd/step_000002.h5"
off=$(h5dump -p -H -d /optim/exp_avg_sq/lm_head.weight "$C" | awk '/OFFSET/ {print $2}')
printf '\x7f' | dd of="$C" bs=1 seek=$((off + 1000)) conv=notrunc status=none
timeout 60 mpirun -np 2 "$TRAIN" "${L[@]}" --set train.steps=3 --set checkpoint.dir="$WORK/ckd" \
  --resume auto --metrics "$WORK/after.jsonl" >"$WORK/after" 2>&1 ||
  bad "--resume auto past the damaged file: $(tail -2 "$WORK/after")"
losses() { grep -o '"loss":[^,]*' "$1" | tr '\n' ' '; }
if grep -q "starting fresh" "$WORK/after" && [ -n "$(losses "$WORK/fresh.jsonl")" ] &&
   [ "$(losses "$WORK/fresh.jsonl")" = "$(losses "$WORK/after.jsonl")" ]; then
  ok "--resume auto past a damaged checkpoint under nvme: the fresh run's losses bit for bit ($(losses "$WORK/after.jsonl"))"
else
  bad "after the refused checkpoint: $(losses "$WORK/after.jsonl") against fresh $(losses "$WORK/fresh.jsonl"); $(grep -m2 -E 'warning|fresh' "$WORK/after")"
fi
rm -rf "$WORK/ckd"

# Two jobs on one offload.path: the second is refused, naming the first; SIGKILL the first and
# the directory holds no offload file, and a new job takes it.
timeout 120 mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=100000 \
  --set offload.path="$D" >"$WORK/first" 2>&1 &
job=$!
for _ in $(seq 300); do grep -q "^step" "$WORK/first" && break; sleep 0.1; done
LEFT_IGNORE="train.steps=100000" expect_end "a second job on the same offload.path" 7 "offload.path $D: in use by another fsdp job \(pid [0-9]+ on .*\); give each job its own offload.path" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$D"
pkill -KILL -f -- "offload.path=$D" 2>/dev/null
wait "$job" 2>/dev/null
left=$(ls -A "$D" | grep -v '^fsdp-offload.lock$' | tr '\n' ' ')
[ -z "$left" ] && ok "SIGKILL left no offload file in $D ($(ls -A "$D" | tr '\n' ' '))" || bad "left in $D: $left"
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${NVME[@]}" --set train.steps=2 --set offload.path="$D" \
  >"$WORK/after" 2>&1 && grep -q "^step     2/2" "$WORK/after" \
  && ok "the next job takes $D after the killed one" || bad "after the kill: $(tail -2 "$WORK/after")"
[ -z "$(ls -A "$D")" ] && ok "a job that ends leaves $D empty" || bad "left in $D: $(ls -A "$D")"
finish
