#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Failures of one rank, or of ranks that disagree, end the whole job at once: ranks started
# with different decks (MPMD launches) or one rank unable to read its deck (exit 2, naming the
# key and its values, or the rank); one rank out of memory (ulimit -v on it alone: exit 1 with
# the memory tracker's report); an exception nothing catches, in every program (one line,
# exit 1, never std::terminate's abort). Each: every rank gone within 30 s, and a checkpoint
# written before still verifying and resuming.
source "$(dirname "$0")/lib.sh"

D="$WORK/ck"
timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=2 \
  --set checkpoint.dir="$D" >"$WORK/first" 2>&1 || bad "the first checkpoint: $(tail -2 "$WORK/first")"
A0=("$TRAIN" "${SMALL[@]}" --set train.steps=4 --set checkpoint.dir="$D")
A=("${A0[@]}" --resume auto)

for key in model.n_layer=3 train.batch_size=24 train.steps=5; do
  expect_end "ranks with different decks ($key on rank 1)" 2 \
    "the run deck differs between ranks: ${key%%=*} is .* on rank 0 but ${key#*=} on rank 1" \
    mpirun -np 1 "${A[@]}" : -np 1 "${A[@]}" --set "$key"
done
expect_end "one of 3 ranks resumes a different file" 2 \
  "the run deck differs between ranks: command line.resume is auto on rank 0 but .*step_000002.h5 on rank 2" \
  mpirun -np 2 "${A[@]}" : -np 1 "${A0[@]}" --resume "$D/step_000002.h5"
NODECK=("$TRAIN" --set train.steps=2 --set checkpoint.dir="$D")
expect_end "one rank cannot read its deck" 2 "rank 1: $WORK/none.toml: cannot read run deck: no such file" \
  mpirun -np 1 "${NODECK[@]}" : -np 1 "${NODECK[@]}" --config "$WORK/none.toml"
expect_end "one rank's arguments do not parse" 2 "rank 1: --config: At Most 1 required but received 2" \
  mpirun -np 1 "${A[@]}" : -np 1 "${A[@]}" --config inputs/default.toml
expect_end "a deck that reads as an I/O error" 2 "/proc/self/mem: cannot read run deck: Input/output error" \
  mpirun -np 2 "${NODECK[@]}" --config /proc/self/mem

# A rank stuck at start-up (a hung file system, a slow node): the watchdog covers start-up too.
expect_end "a rank stuck at start-up" 6 "watchdog on rank 0 .*start-up: loading .* has not completed after" \
  env FSDP_TEST_STALL=1@-1:60 mpirun -np 2 "${A[@]}" --set comm.timeout_s=3

# One rank out of memory: a model whose activations (~0.8 GB per rank) fit on rank 0 but not
# under rank 1's 500 MB address-space limit. The others would wait in the next collective.
BIG=(--set model.block_size=512 --set model.n_embd=256 --set train.micro_batch_size=8
     --set train.batch_size=16 --set model.n_layer=4)
expect_end "one rank out of memory" 1 "error on rank 1 .*out of device memory: allocating .* failed .*live by category" \
  mpirun -np 1 "$TRAIN" "${SMALL[@]}" "${BIG[@]}" --set train.steps=2 --set checkpoint.dir="$WORK/big" : \
  -np 1 bash -c "ulimit -v 500000; exec $TRAIN ${SMALL[*]} ${BIG[*]} --set train.steps=2 --set checkpoint.dir=$WORK/big"
# The same model under a budget every rank shares: refused at the same allocation everywhere,
# reported once by rank 0.
expect_end "every rank over memory.device_budget" 1 "^fsdp-train: out of device memory: .* exceeds memory.device_budget" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" "${BIG[@]}" --set train.steps=2 --set memory.device_budget=64MiB \
  --set checkpoint.dir="$WORK/big"

# No program ends in std::terminate: an exception nothing catches is one line and exit 1. Every
# rank throws, so whichever reaches MPI_Abort first reports it (rank 1 does under load).
for app in train sample bench ckpt; do
  args=()
  [ "$app" = ckpt ] && args=(info "$D/step_000002.h5")
  expect_end "uncaught exception in fsdp-$app" 1 "^fsdp: error on rank [01] \(.*\): fsdp-$app: uncaught exception: FSDP_TEST_THROW=fsdp-$app" \
    env FSDP_TEST_THROW=fsdp-$app mpirun -np 2 "$BUILD/fsdp-$app" "${args[@]}" --marker "$WORK"
done
expect_end "uncaught exception in fsdp-plan" 1 "^fsdp: error \(.*\): fsdp-plan: uncaught exception: FSDP_TEST_THROW=fsdp-plan" \
  env FSDP_TEST_THROW=fsdp-plan "$BUILD/fsdp-plan" --config "$WORK/../$(basename "$WORK")/none"
grep -q "core dumped\|terminate called" "$WORK/err" && bad "a core dump or std::terminate's text" || true

expect_end "resumed at train.steps" 0 "nothing to train: the run is at step 2 and train.steps = 2" \
  mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.dir="$D" --resume auto
still_resumes "after the rank failures" "$D" 2
finish
