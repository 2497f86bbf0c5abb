#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every kind of bad input gives one clear line naming what is wrong and where, and the
# documented exit code (2 run deck, 3 data), on one rank and on several, without hanging.
source "$(dirname "$0")/lib.sh"
D=inputs/default.toml
S="--set train.steps=1 --set eval.every=0"

printf '[model]\nn_layr = 4\n' >"$WORK/unknown.toml"
expect_fail "unknown key" 2 "unknown.toml.*model.n_layr.*unknown key" "$TRAIN" --config "$WORK/unknown.toml"
expect_fail "unknown key via --set" 2 "--set.*train.stepz" "$TRAIN" --config $D --set train.stepz=3
expect_fail "wrong type" 2 "train.lr: expected a float" "$TRAIN" --config $D --set train.lr=fast
expect_fail "out of range" 2 "train.batch_size: expected an integer >= 1, got -4" "$TRAIN" --config $D --set train.batch_size=-4
expect_fail "bad enum" 2 "fsdp.strategy.*zero4" "$TRAIN" --config $D --set fsdp.strategy=zero4
expect_fail "missing deck" 2 "nope.toml" "$TRAIN" --config "$WORK/nope.toml"
expect_fail "missing data file" 3 "$WORK/missing.bin.*(no such file|cannot)" "$TRAIN" --config $D $S --set data.train="$WORK/missing.bin"
printf 'hello world, this is plain text that is long enough to hold a few windows of tokens for sure.\n%.0s' {1..40} >"$WORK/text.txt"
expect_fail "token id >= vocab_size" 3 "text.txt.*token 1[0-9][0-9] at index [0-9]+ is out of range for vocab_size 100" "$TRAIN" --config $D $S --set model.vocab_size=100 --set data.train="$WORK/text.txt"
expect_fail "block_size beyond the position table" 2 "model.block_size.*n_positions = 32" "$TRAIN" --config $D $S --set model.n_positions=32
expect_fail "comm.backend this build cannot honour" 2 "comm.backend = nccl: this build's trainer runs its collectives on MPI" "$TRAIN" --config $D $S --set comm.backend=nccl
expect_fail "metrics file in a missing directory" 2 "fsdp-train: --metrics .*nope/m.jsonl: cannot open the metrics file" "$TRAIN" --config $D $S --metrics "$WORK/nope/m.jsonl"
expect_fail "metrics file in a missing directory (np 2)" 2 "fsdp-train: --metrics .*nope/m.jsonl: cannot open the metrics file" mpirun -np 2 "$TRAIN" --config $D $S --metrics "$WORK/nope/m.jsonl"
mkdir -p "$WORK/huge" && : >"$WORK/huge/step_99999999999999999999.h5"
expect_fail "--resume auto past int64 step numbers" 1 "rank 0 .*fsdp-train: uncaught exception: stoll" "$TRAIN" --config $D $S --resume auto --set "checkpoint.dir=$WORK/huge"
expect_fail "not a token file" 3 "text.txt.*not an llm.c token file" "$TRAIN" --config $D $S --set data.format=llmc --set data.train="$WORK/text.txt"

# Several ranks: problems every rank sees are printed once and every rank exits.
expect_fail "fewer sequences than ranks (np 3)" 2 "train.batch_size = 2 is fewer sequences per step than ranks \(3\)" mpirun -np 3 "$TRAIN" --config $D $S --set train.batch_size=2 --set train.micro_batch_size=1
expect_fail "unknown strategy (np 2)" 2 "fsdp.strategy" mpirun -np 2 "$TRAIN" --config $D --set fsdp.strategy=zero9
expect_fail "shard_group_size not dividing N (np 3)" 2 "shard_group_size: 2 does not divide the number of ranks \(3\)" mpirun -np 3 "$TRAIN" --config $D $S --set fsdp.strategy=hybrid --set fsdp.shard_group_size=2 --set train.batch_size=12 --set train.micro_batch_size=1

# One rank alone cannot read its data: the whole job ends within seconds, naming that rank.
start=$(date +%s)
expect_fail "one rank's data file unreadable (np 2)" 3 "rank 1.*$WORK/gone.bin" mpirun -np 1 "$TRAIN" --config $D $S : -np 1 "$TRAIN" --config $D $S --set data.train="$WORK/gone.bin"
[ $(($(date +%s) - start)) -lt 30 ] && ok "one-rank failure ended the job in $(($(date +%s) - start)) s" || bad "one-rank failure took too long"
finish
