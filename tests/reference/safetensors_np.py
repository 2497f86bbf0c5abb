# SPDX-License-Identifier: MIT
"""safetensors read and written with json and numpy only (no Hugging Face code): the
independent side of fsdp's export and --init-from tests."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}


def read(path):
    """{name: (dtype name, float32 array in its shape)} and the header; F16 and BF16 widened exactly."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = np.frombuffer(data[b:e], dtype=DTYPES[t["dtype"]])
        if t["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            raw = raw.astype(np.float32)
        out[name] = (t["dtype"], raw.reshape(t["shape"]))
    return out, header


def to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bits (finite values)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = u + 0x7FFF + ((u >> 16) & 1)
    return (u >> 16).astype(np.uint16)


def write(path, tensors, dtype="F32", metadata=None):
    """tensors: {name: float array}; stored in the given order, F32 or BF16 (rounded)."""
    header, chunks, at = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        raw = (to_bf16_bits(a) if dtype == "BF16" else np.asarray(a, dtype="<f4")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
