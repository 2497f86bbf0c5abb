#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# comm.backend is honoured by fsdp-train: auto and mpi give every process group (world, shard,
# replicate) its path in one log line each; a backend this build cannot give (nccl without
# GPUs) ends every rank with one line naming the group and why, exit 2, before training.
source "$(dirname "$0")/lib.sh"
D=inputs/default.toml
H="--set fsdp.strategy=hybrid --set fsdp.shard_group_size=2 --set train.steps=1 --set eval.every=0 --set train.micro_batch_size=2"

for backend in auto mpi; do
  timeout 120 mpirun -np 4 "$TRAIN" --config $D $H --set comm.backend=$backend >"$WORK/out" 2>"$WORK/err"
  rc=$?
  paths=$(grep -c '^fsdp-train: comm ' "$WORK/out")
  if [ $rc -eq 0 ] && [ "$paths" -eq 3 ] &&
    grep -q '^fsdp-train: comm world (4 ranks): mpi (host memory): ' "$WORK/out" &&
    grep -q '^fsdp-train: comm shard (2 ranks): mpi (host memory): ' "$WORK/out" &&
    grep -q '^fsdp-train: comm replicate (2 ranks): mpi (host memory): ' "$WORK/out"; then
    ok "comm.backend=$backend at np 4, shard groups of 2: $(grep -m1 '^fsdp-train: comm world' "$WORK/out")"
  else
    bad "comm.backend=$backend: exit $rc, $paths path lines:"
    sed 's/^/    /' "$WORK/out" "$WORK/err" | head -20
  fi
done
expect_fail "comm.backend=nccl without a GPU (np 2)" 2 "comm.backend=nccl needs a GPU on every rank of group 'world' \(2 ranks\)" mpirun -np 2 "$TRAIN" --config $D --set train.steps=1 --set comm.backend=nccl
[ "$(grep -c 'comm.backend' "$WORK/err")" -eq 1 ] && ok "the refusal is printed once" || bad "the refusal was printed $(grep -c 'comm.backend' "$WORK/err") times"
finish
