# SPDX-License-Identifier: MIT
"""llm.c's GPT-2 parameter file (train_gpt2.py's write_model) written from Hugging Face-layout
arrays with numpy only: header of 256 int32 [20240326, version, maxT, V, L, NH, C, Vp], then
the tensors in llm.c's order, matrices as (out, in), wte padded to Vp rows."""
import numpy as np

from safetensors_np import to_bf16_bits

PER_LAYER = [
    ("ln_1.weight", False), ("ln_1.bias", False),
    ("attn.c_attn.weight", True), ("attn.c_attn.bias", False),
    ("attn.c_proj.weight", True), ("attn.c_proj.bias", False),
    ("ln_2.weight", False), ("ln_2.bias", False),
    ("mlp.c_fc.weight", True), ("mlp.c_fc.bias", False),
    ("mlp.c_proj.weight", True), ("mlp.c_proj.bias", False),
]


def write(path, w, n_layer, n_head, padded_vocab, bf16=False, pad_value=7.0):
    V, C = w["wte.weight"].shape
    maxT = w["wpe.weight"].shape[0]
    header = np.zeros(256, dtype="<i4")
    header[:8] = [20240326, 5 if bf16 else 3, maxT, V, n_layer, n_head, C, padded_vocab]
    wte = np.full((padded_vocab, C), pad_value, dtype=np.float32)  # padding rows are never read
    wte[:V] = w["wte.weight"]
    parts = [wte, w["wpe.weight"]]
    for suffix, transposed in PER_LAYER:
        for l in range(n_layer):
            a = w[f"h.{l}.{suffix}"]
            parts.append(a.T if transposed else a)
    parts += [w["ln_f.weight"], w["ln_f.bias"]]
    flat = np.concatenate([np.ascontiguousarray(p, dtype=np.float32).ravel() for p in parts])
    body = to_bf16_bits(flat).tobytes() if bf16 else flat.astype("<f4").tobytes()
    with open(path, "wb") as f:
        f.write(header.tobytes() + body)
