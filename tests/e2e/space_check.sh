#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The space discipline, proven on a CPU. A second build (FSDP_SPACE_CHECK=ON, scripts/fsdp.sh
# builds it beside the main one) makes the "device" a Kokkos memory space host code cannot
# touch: device and host Views do not convert (configure fails if they do), mirrors are real
# copies, and an element of a device buffer accessed outside a kernel ends the program with its
# stack. Every configuration below runs in it to the end, and its per-step losses and gradient
# norms are bitwise those of the plain CPU build: nothing depends on host and device memory
# being the same. The check itself must fail when broken: FSDP_TEST_TOUCH_DEVICE makes the
# trainer read a device buffer on the host, and the checked build must stop with the stack.
source "$(dirname "$0")/lib.sh"
CHECKED=${FSDP_SPACE_CHECK_BUILD:-$BUILD-spacecheck}
if [ ! -x "$CHECKED/fsdp-train" ]; then
  bad "no space-check build at $CHECKED (scripts/fsdp.sh builds it; or cmake -DFSDP_SPACE_CHECK=ON)"
  finish
fi
D=inputs/default.toml
B="--set train.steps=3 --set eval.every=2 --set eval.sequences=8"

# run NAME NP ARGS...: both builds, then the step records compared without their timings.
run() {
  local name=$1 np=$2
  shift 2
  local ok_both=1
  for side in plain checked; do
    local exe="$TRAIN"
    [ $side = checked ] && exe="$CHECKED/fsdp-train"
    rm -rf "$WORK/ck_$side"
    if ! timeout 300 mpirun -np "$np" "$exe" --config $D $B --set checkpoint.dir="$WORK/ck_$side" \
      --metrics "$WORK/$side.jsonl" "$@" >"$WORK/$side.out" 2>&1; then
      bad "$name: the $side build failed:"
      grep -v '^\s*$' "$WORK/$side.out" | tail -12 | sed 's/^/    /'
      ok_both=0
    fi
  done
  [ $ok_both = 1 ] || return 0
  if python3 - "$WORK/plain.jsonl" "$WORK/checked.jsonl" <<'PY'; then
import json, sys
def records(path):
    keep = ("step", "loss", "grad_norm", "eval_loss")
    return [{k: r[k] for k in keep if k in r} for r in map(json.loads, open(path))]
a, b = records(sys.argv[1]), records(sys.argv[2])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
    ok "$name (np $np): $(grep -c . "$WORK/plain.jsonl") records bitwise equal"
  else
    bad "$name (np $np): the checked build's losses differ:"
    diff <(cut -c1-200 "$WORK/plain.jsonl") <(cut -c1-200 "$WORK/checked.jsonl") | head -6 | sed 's/^/    /'
  fi
}

run "zero3, default deck" 1
run "zero3, prefetch 2, block activation checkpointing" 2 --set fsdp.prefetch=2 --set model.activation_checkpointing=blocks
run "ddp" 2 --set fsdp.strategy=ddp
run "zero1" 2 --set fsdp.strategy=zero1
run "zero2, sharded accumulation" 3 --set fsdp.strategy=zero2 --set fsdp.accumulate=sharded --set train.batch_size=12 --set train.micro_batch_size=2
run "hybrid, shard groups of 2" 4 --set fsdp.strategy=hybrid --set fsdp.shard_group_size=2 --set train.micro_batch_size=2
run "offload optimizer" 2 --set fsdp.offload=optimizer
run "offload params, sublayer units" 2 --set fsdp.offload=params --set fsdp.unit=sublayer
# Offload copies (core/host_copy.hpp): the full gradients a staged update zeroes on the device,
# the host cast a bf16 gather uploads, the later reductions of a step added on the host, and a
# deterministic shard assembled on the device and sent down.
run "offload optimizer, zero1" 2 --set fsdp.strategy=zero1 --set fsdp.offload=optimizer
run "offload params, bf16, sharded accumulation" 2 --set fsdp.offload=params \
  --set fsdp.mixed_precision=bf16 --set fsdp.accumulate=sharded --set train.batch_size=12 --set train.micro_batch_size=2
run "offload params, deterministic hybrid" 4 --set fsdp.offload=params --set fsdp.strategy=hybrid \
  --set fsdp.shard_group_size=2 --set train.deterministic=true --set train.micro_batch_size=2
run "bf16 parameters and reductions" 2 --set fsdp.mixed_precision=bf16 --set fsdp.reduce_dtype=bf16
run "deterministic" 2 --set train.deterministic=true
run "bf16 GEMMs, ddp" 2 --set fsdp.strategy=ddp --set fsdp.mixed_precision=bf16 --set fsdp.gemm_dtype=bf16
run "bf16 GEMMs, zero3 with sub-layer units" 2 --set fsdp.mixed_precision=bf16 --set fsdp.gemm_dtype=bf16 --set fsdp.unit=sublayer

# A checkpoint the checked build writes is read back by both builds, with the same next steps.
rm -rf "$WORK/ck"
R="--set eval.every=0 --set train.batch_size=12 --set train.micro_batch_size=2"
timeout 300 mpirun -np 2 "$CHECKED/fsdp-train" --config $D $R --set train.steps=2 \
  --set checkpoint.every=2 --set checkpoint.dir="$WORK/ck" >"$WORK/w.out" 2>&1 || bad "checked build: writing a checkpoint failed"
for side in plain checked; do
  exe="$TRAIN"
  [ $side = checked ] && exe="$CHECKED/fsdp-train"
  rm -rf "$WORK/ck_$side" && cp -r "$WORK/ck" "$WORK/ck_$side"
  timeout 300 mpirun -np 3 "$exe" --config $D $R --set train.steps=4 \
    --set checkpoint.dir="$WORK/ck_$side" --resume auto >"$WORK/r_$side.out" 2>&1 || bad "$side build: resuming at np 3 failed"
done
if [ "$(grep '^step' "$WORK/r_plain.out" | cut -d'|' -f1-4)" = "$(grep '^step' "$WORK/r_checked.out" | cut -d'|' -f1-4)" ] &&
  [ "$(grep -c '^step' "$WORK/r_plain.out")" -eq 2 ]; then
  ok "a checkpoint written by the checked build resumes at np 3 the same in both builds"
else
  bad "resume from the checked build's checkpoint differs:"
  diff <(grep '^step' "$WORK/r_plain.out") <(grep '^step' "$WORK/r_checked.out") | head -6
fi

# The check must be able to fail: a host read of a device buffer ends the checked build only.
FSDP_TEST_TOUCH_DEVICE=1 timeout 60 "$CHECKED/fsdp-train" --config $D --set train.steps=1 >"$WORK/t.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "space check: host code accessed an element of a device buffer outside a kernel" "$WORK/t.out" &&
  grep -q "touch_device_on_host" "$WORK/t.out"; then
  ok "a host read of a device buffer stops the checked build (exit $rc) with a stack naming it"
else
  bad "the planted host read was not caught (exit $rc):"
  tail -5 "$WORK/t.out" | sed 's/^/    /'
fi
FSDP_TEST_TOUCH_DEVICE=1 timeout 60 "$TRAIN" --config $D --set train.steps=1 >"$WORK/t.out" 2>&1 &&
  ok "the plain build, where host and device memory are one, lets the same read pass" ||
  bad "the plain build failed with the planted read"
finish
