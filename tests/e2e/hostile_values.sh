#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Non-finite values a hostile or broken file carries (docs/reliability.md, "Failure classes"):
# a NaN or an infinity in exported weights is refused at load by fsdp-train --init-from (an
# evaluation-only run too) and by fsdp-sample, naming the tensor and the element (exit 5), at
# np 1 and 2; train.allow_nonfinite_weights = true lets it in, and the NaN evaluation it then
# gives ends the run like a non-finite training loss (exit 4), never a run that exits 0 with
# its evaluation silently dropped. The export comes from a 2-step tiny run.
source "$(dirname "$0")/lib.sh"
SAMPLE="$BUILD/fsdp-sample"
: >"$WORK/empty.toml"

timeout 60 mpirun -np 2 "$TRAIN" "${SMALL[@]}" --set train.steps=2 --set checkpoint.every=2 \
  --set checkpoint.dir="$WORK/ck" >"$WORK/train" 2>&1 || bad "the tiny run: $(tail -2 "$WORK/train")"
"$CKPT" export "$WORK/ck/step_000002.h5" --hf "$WORK/hf" >"$WORK/export" 2>&1 ||
  bad "export: $(tail -2 "$WORK/export")"

# poke DIR TENSOR INDEX VALUE: writes float32 VALUE at flat INDEX of TENSOR in DIR's safetensors.
poke() {
  /usr/bin/python3 - "$@" <<'PY'
import json, math, struct, sys
d, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
path = d + "/model.safetensors"
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    t = header[name]
    assert t["dtype"] == "F32", t["dtype"]
    f.seek(8 + n + t["data_offsets"][0] + 4 * index)
    f.write(struct.pack("<f", value))
PY
}
cp -r "$WORK/hf" "$WORK/nan"
poke "$WORK/nan" h.1.mlp.c_fc.weight 262 nan  # row 2, column 6 of its 32 x 128
cp -r "$WORK/hf" "$WORK/inf"
poke "$WORK/inf" wte.weight 0 -inf

for np in 1 2; do
  expect_end "--init-from weights with a NaN, np $np" 5 \
    "fsdp-train: $WORK/nan: parameter h.1.mlp.c_fc.weight\[2, 6\] is nan \(non-finite weights are refused" \
    mpirun -np $np "$TRAIN" "${SMALL[@]}" --init-from "$WORK/nan" --set train.steps=2
done
expect_end "evaluation-only --init-from weights with -inf" 5 \
  "fsdp-train: $WORK/inf: parameter wte.weight\[0, 0\] is -inf" \
  mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/inf" --set train.steps=0 \
  --set eval.sequences=4 --set train.batch_size=2 --set train.micro_batch_size=1
expect_end "fsdp-sample with NaN weights" 5 "$WORK/nan: parameter h.1.mlp.c_fc.weight\[2, 6\] is nan" \
  "$SAMPLE" "$WORK/nan" --prompt "The " --tokens 8
# Allowed by the deck: the evaluation is NaN and says so (exit 4), at np 2.
expect_end "allowed NaN weights: the NaN evaluation ends the run" 4 \
  "fsdp-train: val loss is nan at step 0 \(eval over builtin:val\) \(train.on_nonfinite = abort\)" \
  mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/nan" --set train.steps=0 \
  --set eval.sequences=4 --set train.batch_size=2 --set train.micro_batch_size=1 \
  --set train.allow_nonfinite_weights=true
# The good export still loads and evaluates (the checks cost no false alarm).
expect_end "the untouched export loads and evaluates" 0 "val loss [0-9]" \
  mpirun -np 2 "$TRAIN" --config "$WORK/empty.toml" --init-from "$WORK/hf" --set train.steps=0 \
  --set eval.sequences=4 --set train.batch_size=2 --set train.micro_batch_size=1
finish
