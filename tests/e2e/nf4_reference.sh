#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp's NF4 codec (model/gemm/nf4.hpp, through tests/tools/nf4_codec) against bitsandbytes'
# own quantize_4bit / dequantize_4bit (blocks of 64, quant_type nf4, uint8 storage) on this CPU,
# in the pinned reference environment (tests/reference/nf4_check.py): the packed bytes, the
# scales and the dequantised values must be the same bits. The inputs: normal weights at the
# scales of a trained model's matrices, whole blocks and a partial last block, odd counts, a
# block of zeros, values on the cuts between levels and next to them, subnormal and huge values.
source "$(dirname "$0")/lib.sh"
C=${NF4_CODEC:-$BUILD/tests/nf4_codec}
ref_python torch numpy bitsandbytes
if "$REFPY" "$SRC/tests/reference/nf4_check.py" "$C" "$WORK" >"$WORK/cmp" 2>&1; then
  ok "NF4 against bitsandbytes $("$REFPY" -c 'import bitsandbytes; print(bitsandbytes.__version__)' 2>/dev/null): $(tail -1 "$WORK/cmp")"
else
  bad "NF4 against bitsandbytes: $(tail -1 "$WORK/cmp")"
fi
finish
