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
expect_fail "token id >= vocab_size" 3 "text.txt.*token 1[0-9][0-9] at index [0-9]+ \(byte offset [0-9]+\) is out of range for vocab_size 100" "$TRAIN" --config $D $S --set model.vocab_size=100 --set data.train="$WORK/text.txt"
expect_fail "block_size beyond the position table" 2 "model.block_size.*n_positions = 32" "$TRAIN" --config $D $S --set model.n_positions=32
expect_fail "bf16 GEMMs without bf16 parameters" 2 "fsdp.gemm_dtype = bf16 needs fsdp.mixed_precision = bf16" "$TRAIN" --config $D $S --set fsdp.gemm_dtype=bf16
expect_fail "comm.backend this build cannot honour" 2 "comm.backend=nccl needs a GPU on every rank of group .world.*this build computes on the CPU" "$TRAIN" --config $D $S --set comm.backend=nccl
expect_fail "metrics file in a missing directory" 2 "fsdp-train: --metrics .*nope/m.jsonl: the directory .*nope does not exist" "$TRAIN" --config $D $S --metrics "$WORK/nope/m.jsonl"
expect_fail "metrics file in a missing directory (np 2)" 2 "fsdp-train: --metrics .*nope/m.jsonl: the directory .*nope does not exist" mpirun -np 2 "$TRAIN" --config $D $S --metrics "$WORK/nope/m.jsonl"
# A step number past int64 is nobody's checkpoint: ignored, not an overflow.
mkdir -p "$WORK/huge" && : >"$WORK/huge/step_99999999999999999999.h5"
"$TRAIN" --config $D $S --resume auto --set "checkpoint.dir=$WORK/huge" >"$WORK/out" 2>&1 && grep -q "no complete checkpoint in $WORK/huge, starting fresh" "$WORK/out" \
  && ok "--resume auto ignores step_99999999999999999999.h5 and starts fresh" || bad "--resume auto past int64 step numbers: $(tail -2 "$WORK/out")"
expect_fail "not a token file" 3 "text.txt.*not an llm.c token file" "$TRAIN" --config $D $S --set data.format=llmc --set data.train="$WORK/text.txt"

# Error text stays one bounded line: a 50 MB value, a value with newlines and control bytes.
{ printf '[data]\ntrain = "'; head -c 50000000 /dev/zero | tr '\0' x; printf '"\n'; } >"$WORK/huge.toml"
"$TRAIN" --config "$WORK/huge.toml" $S >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" -eq 3 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && [ "$(wc -c <"$WORK/err")" -lt 1000 ] && grep -q "bytes\] \.\.\." "$WORK/err" \
  && ok "a 50 MB value: one line of $(wc -c <"$WORK/err") bytes (exit 3)" || bad "a 50 MB value: exit $rc, $(wc -c <"$WORK/err") bytes of stderr"
printf '[data]\ntrain = "two\\nlines\\u0007"\n' >"$WORK/nl.toml"
"$TRAIN" --config "$WORK/nl.toml" $S >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" -eq 3 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q 'two\\nlines\\x07' "$WORK/err" \
  && ok "a value with a newline and a bell: one line, escaped (exit 3): $(cat "$WORK/err")" || bad "a value with a newline: exit $rc, $(cat -A "$WORK/err" | head -3)"

# The planner bounds its inputs before any search (it used to loop for minutes).
PLAN="$BUILD/fsdp-plan"
expect_fail "fsdp-plan with n_layer = 2^31 - 1" 2 "model.n_layer: expected an integer in \[1, 10000\], got 2147483647" "$PLAN" --set model.n_layer=2147483647
expect_fail "fsdp-plan --params nan" 2 "--params: expected a parameter count in \[1, 2\^50\], got nan" "$PLAN" --params nan
expect_fail "fsdp-plan --gemm-efficiency 5" 2 "--gemm-efficiency: expected a fraction in \(0, 1\], got 5" "$PLAN" --gemm-efficiency 5
expect_fail "fsdp-plan --budget inf" 2 "--budget: expected a byte count like 80GiB \(at most 2\^60\), got \"inf\"" "$PLAN" --budget inf
expect_fail "a model over 2^50 parameters" 2 "more than 2\^50" "$PLAN" --set model.n_embd=1048576 --set model.n_head=1 --set model.n_layer=10000

# Several ranks: problems every rank sees are printed once and every rank exits.
expect_fail "fewer sequences than ranks (np 3)" 2 "train.batch_size = 2 is fewer sequences per step than ranks \(3\)" mpirun -np 3 "$TRAIN" --config $D $S --set train.batch_size=2 --set train.micro_batch_size=1
expect_fail "unknown strategy (np 2)" 2 "fsdp.strategy" mpirun -np 2 "$TRAIN" --config $D --set fsdp.strategy=zero9
expect_fail "shard_group_size not dividing N (np 3)" 2 "shard_group_size: 2 does not divide the number of ranks \(3\)" mpirun -np 3 "$TRAIN" --config $D $S --set fsdp.strategy=hybrid --set fsdp.shard_group_size=2 --set train.batch_size=12 --set train.micro_batch_size=1
expect_fail "deterministic N not dividing G (np 3)" 2 "train.deterministic = true needs the number of ranks \(3\) to divide the step's micro-batch count G = train.batch_size / train.micro_batch_size = 8" mpirun -np 3 "$TRAIN" --config $D $S --set train.deterministic=true --set train.batch_size=16 --set train.micro_batch_size=2

# One rank alone cannot read its data: the whole job ends within seconds, naming that rank.
start=$(date +%s)
# The same deck on both ranks (a node-local relative path); only rank 0's directory has the file.
mkdir -p "$WORK/a" "$WORK/b" && cp "$WORK/text.txt" "$WORK/a/gone.bin"
expect_fail "one rank's data file unreadable (np 2)" 3 "rank 1.*gone.bin" mpirun \
  -np 1 bash -c "cd $WORK/a && exec $TRAIN --config $(realpath "$SRC")/$D $S --set data.train=gone.bin" : \
  -np 1 bash -c "cd $WORK/b && exec $TRAIN --config $(realpath "$SRC")/$D $S --set data.train=gone.bin"
[ $(($(date +%s) - start)) -lt 30 ] && ok "one-rank failure ended the job in $(($(date +%s) - start)) s" || bad "one-rank failure took too long"
finish
