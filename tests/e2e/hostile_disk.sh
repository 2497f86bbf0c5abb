#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checkpoint I/O that cannot complete never hangs the job: a full disk (a small tmpfs) at np 2
# and 3, found before writing (exit 7) or mid-write (the write error or the watchdog ends the
# job); a rank stopped (SIGSTOP) inside a checkpoint write (the watchdog, exit 6); an unwritable
# checkpoint.dir found at start whatever checkpoint.every is. Each case: the exit code of the
# README's table, one line naming the cause, every rank gone within 30 s, and the previous
# checkpoint still verifying and resuming. The tmpfs cases need mount (root); else skipped.
source "$(dirname "$0")/lib.sh"

MNT="$WORK/mnt"
mkdir -p "$MNT"
if mount -t tmpfs -o size=900k none "$MNT" 2>/dev/null; then
  trap 'umount "$MNT" 2>/dev/null; rm -rf "$WORK"' EXIT
  # One checkpoint of the tiny model (~0.5 MB) fits, the second does not (keep = 1 keeps both
  # until the second is complete).
  for np in 2 3; do
    D="$MNT/np$np"
    timeout 60 mpirun -np $np "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=2 \
      --set checkpoint.dir="$D" >"$WORK/first" 2>&1 || bad "np $np: the first checkpoint: $(tail -2 "$WORK/first")"
    expect_end "full disk before the write, np $np" 7 "no space left on device: .* free in $D, the checkpoint needs" \
      mpirun -np $np "$TRAIN" "${SMALL[@]}" --set train.steps=4 --set checkpoint.every=2 \
      --set checkpoint.keep=1 --set checkpoint.dir="$D" --resume auto
    # Past the check (a quota that statvfs does not show): the write itself fails or stalls.
    expect_end "full disk during the write, np $np" 7 "writing checkpoint $D/step_000004.h5.[0-9a-f]{16}.tmp: " \
      env FSDP_TEST_SKIP_SPACE_CHECK=1 mpirun -np $np "$TRAIN" "${SMALL[@]}" --set train.steps=4 \
      --set checkpoint.every=2 --set checkpoint.keep=1 --set checkpoint.dir="$D" --set comm.timeout_s=5 \
      --resume auto
    [ "$(cat "$D/latest")" = step_000002.h5 ] && ok "np $np: latest still names step_000002.h5" \
      || bad "np $np: latest is '$(cat "$D/latest")'"
    rm -f "$D"/step_000004.h5.*.tmp  # room for the resume below to write nothing: steps = 3
    still_resumes "full disk, np $np" "$D" 2
    rm -rf "$D"
  done
  umount "$MNT"
  # An export onto a disk with room for one export but not two: refused (exit 2, one line),
  # the old export's bytes unchanged, no temporary left (issue 44, finding 1).
  if mount -t tmpfs -o size=200k none "$MNT"; then
    E="$WORK/exp"
    timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=1 \
      --set checkpoint.keep=2 --set checkpoint.dir="$E" >"$WORK/first" 2>&1 &&
      timeout 30 mpirun -np 2 "$CKPT" export "$E/step_000001.h5" --hf "$MNT/out" >"$WORK/first" 2>&1 ||
      bad "export: the first export: $(tail -2 "$WORK/first")"
    before=$(cd "$MNT/out" && sha256sum config.json model.safetensors)
    expect_end "export onto a full disk" 2 "model.safetensors: .*(disk full|No space left).*the old export, if any, is unchanged" \
      mpirun -np 2 "$CKPT" export "$E/step_000002.h5" --hf "$MNT/out"
    [ "$(cd "$MNT/out" && sha256sum config.json model.safetensors)" = "$before" ] &&
      [ "$(ls "$MNT/out" | wc -l)" = 3 ] && ok "export onto a full disk: the old export (and its fsdp_export.json) is unchanged, no temporary left" ||
      bad "export onto a full disk: the old export changed: $(ls -la "$MNT/out")"
    # A link planted at the old temporary name is never written through.
    echo precious >"$WORK/target"
    ln -s "$WORK/target" "$WORK/hf/model.safetensors.tmp" 2>/dev/null || { mkdir -p "$WORK/hf"; ln -s "$WORK/target" "$WORK/hf/model.safetensors.tmp"; }
    timeout 30 mpirun -np 2 "$CKPT" export "$E/step_000002.h5" --hf "$WORK/hf" >"$WORK/first" 2>&1 &&
      [ "$(cat "$WORK/target")" = precious ] && ok "export beside a planted model.safetensors.tmp link: its target is untouched" ||
      bad "export beside a planted link: target '$(cat "$WORK/target")': $(tail -2 "$WORK/first")"
    umount "$MNT"
  fi
  # A read-only file system: found at start with checkpoint.every = 0 (a preemption signal
  # would otherwise find it, hours in, with nothing saved).
  if mount -t tmpfs -o ro,size=64k none "$MNT"; then
    expect_end "read-only checkpoint.dir, checkpoint.every = 0" 7 "checkpoint.dir $MNT/ck: .*not writable \(Read-only file system\)" \
      mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.dir="$MNT/ck"
    expect_end "fsdp-ckpt bench --dir on a read-only file system" 2 "fsdp-ckpt bench: --dir: checkpoint.dir $MNT: not writable" \
      mpirun -np 2 "$CKPT" bench --config inputs/default.toml --set model.n_layer=1 --dir "$MNT"
    umount "$MNT"
  fi
else
  echo "skip: the full-disk cases need mount -t tmpfs (root)"
fi

# checkpoint.dir is a file.
printf 'x' >"$WORK/afile"
expect_end "checkpoint.dir is a file" 7 "checkpoint.dir $WORK/afile: exists and is not a directory" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.dir="$WORK/afile"

# A rank stopped inside a checkpoint write: the others wait in the write's next collective; the
# watchdog (comm.timeout_s = 3) ends the job, naming the checkpoint phase and the stopped rank.
S="$WORK/stop"
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=2 \
  --set checkpoint.dir="$S" >"$WORK/first" 2>&1 || bad "stop: the first checkpoint: $(tail -2 "$WORK/first")"
FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE=2 timeout -k 5 40 mpirun -np 2 "$TRAIN" "${SMALL[@]}" \
  --set train.steps=4 --set checkpoint.every=4 --set checkpoint.dir="$S" --set comm.timeout_s=3 \
  --resume auto >"$WORK/out" 2>"$WORK/err" &
job=$!
for _ in $(seq 300); do compgen -G "$S/step_000004.h5.*.tmp" >/dev/null && break; sleep 0.1; done
launcher=$(pgrep -P "$job" | head -1)
victim=$(pgrep -P "$launcher" | tail -1)
if [ -n "$victim" ] && compgen -G "$S/step_000004.h5.*.tmp" >/dev/null; then
  kill -STOP "$victim"
  start=$(date +%s)
  wait "$job"
  rc=$?
  took=$(($(date +%s) - start))
  sleep 0.5
  left=$(pgrep -f -- "$WORK" | tr '\n' ' ')
  line=$(grep -m1 "watchdog on rank .*checkpoint $S/step_000004.h5.[0-9a-f]*.tmp: .*has not completed" "$WORK/err")
  named=$(grep -cE "not arrived: none, but rank [0-9]+ \(silent [0-9.]+ s\)" <<<"$line")
  [ "$rc" -eq 6 ] && [ "$took" -lt 30 ] && [ -n "$line" ] && [ "$named" -eq 1 ] && [ -z "$left" ] \
    && ok "rank stopped in a checkpoint write (exit 6 in ${took} s): ${line:0:200}" \
    || { bad "rank stopped in a write: exit $rc after ${took} s, left '$left':"; head -5 "$WORK/err"; kill -KILL $left 2>/dev/null; }
else
  bad "never reached the checkpoint write (victim '$victim'): $(tail -3 "$WORK/out")"
  kill "$job" 2>/dev/null
  wait "$job"
fi
still_resumes "rank stopped in a write" "$S" 2
finish
