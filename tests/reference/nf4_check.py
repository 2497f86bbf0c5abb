# SPDX-License-Identifier: MIT
# NF4 quantisation by bitsandbytes (quantize_4bit / dequantize_4bit, blocks of 64, uint8
# storage, this CPU) against fsdp's codec run as a tool:
#   nf4_check.py NF4_CODEC WORKDIR
# Each case is written as raw float32, quantised by the tool, and compared bit for bit: the
# packed bytes, the fp32 scales and the dequantised values. Prints one line per case and a
# summary; exits 1 at the first difference, naming the case and the first element that differs.
import subprocess
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
import bitsandbytes.functional as F  # noqa: E402

codec, work = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(20261207)
levels = np.array(
    [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
     -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
     0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
     0.7229568362236023, 1.0], dtype=np.float32)
cuts = ((levels[:-1] + levels[1:]) / np.float32(2)).astype(np.float32)


def on_cuts():
    # Blocks whose maximum is 1: the others are scaled by exactly 1, so they sit on a cut, one
    # ulp either side of it, and on the levels themselves.
    vals = []
    for c in cuts:
        vals += [c, np.nextafter(c, np.float32(-2)), np.nextafter(c, np.float32(2))]
    vals += list(levels)
    vals = np.array(vals, dtype=np.float32)
    out = []
    for i in range(0, len(vals), 63):
        out += [np.float32(1.0)] + list(vals[i:i + 63])
    return np.array(out, dtype=np.float32)


cases = {
    "normal weights, 4096 (whole blocks)": rng.normal(0, 0.02, 4096),
    "normal weights, 1000 (a partial last block)": rng.normal(0, 0.02, 1000),
    "odd count, 131": rng.normal(0, 1.0, 131),
    "one element": np.array([0.37]),
    "a block of zeros between others": np.concatenate([rng.normal(0, 1, 64), np.zeros(64), rng.normal(0, 1, 64)]),
    "a partial block of zeros": np.concatenate([rng.normal(0, 1, 64), np.zeros(10)]),
    "negative maxima": -np.abs(rng.normal(0, 3, 256)),
    "on the cuts and one ulp off": on_cuts(),
    "scaled cuts (maximum 0.02)": on_cuts() * np.float32(0.02),
    "subnormal and huge": np.concatenate([rng.normal(0, 1e-40, 64), rng.normal(0, 1e30, 64), rng.normal(0, 1e-39, 33)]),
    "heavy tails": rng.standard_cauchy(2048),
}

compared = 0
for name, x in cases.items():
    x = np.ascontiguousarray(x, dtype=np.float32)
    path = f"{work}/case"
    x.tofile(path + ".f32")
    r = subprocess.run([codec, path + ".f32", path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{name}: nf4_codec failed: {r.stderr.strip()}")
    packed = np.fromfile(path + ".packed", dtype=np.uint8)
    absmax = np.fromfile(path + ".absmax", dtype=np.float32)
    deq = np.fromfile(path + ".deq", dtype=np.float32)
    t = torch.from_numpy(x.copy())
    q, state = F.quantize_4bit(t, blocksize=64, quant_type="nf4", quant_storage=torch.uint8)
    want_packed = q.reshape(-1).numpy()
    want_absmax = state.absmax.reshape(-1).numpy().astype(np.float32)
    want_deq = F.dequantize_4bit(q, state).reshape(-1).numpy().astype(np.float32)
    for what, got, want in (("packed bytes", packed, want_packed),
                            ("scales", absmax.view(np.uint32), want_absmax.view(np.uint32)),
                            ("dequantised", deq.view(np.uint32), want_deq.view(np.uint32))):
        if got.shape != want.shape:
            sys.exit(f"{name}: {what}: {got.shape[0]} values, bitsandbytes {want.shape[0]}")
        diff = np.nonzero(got != want)[0]
        if diff.size:
            i = int(diff[0])
            sys.exit(f"{name}: {what} differ at {diff.size} of {got.size}, first [{i}]: "
                     f"fsdp {got[i]:#x}, bitsandbytes {want[i]:#x}")
    compared += x.size
    print(f"{name}: {x.size} elements, {packed.size} bytes, {absmax.size} scales: identical")
print(f"{len(cases)} cases, {compared} elements: bytes, scales and dequantised values identical")
