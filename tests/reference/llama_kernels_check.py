#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Llama's kernels recomputed in float64 PyTorch from the cases fsdp's unit test wrote
(fsdp_unit_tests "[.llama_reference]" with FSDP_REFERENCE_DIR=DIR): RMSNorm, rotary with and
without the llama3 blend, SwiGLU, grouped-query causal attention (the fused and the materialised
kernel) at n_kv_head = n_head, n_head/2 and 1; each forward output and input gradient (autograd of sum(dy * y)) against fsdp's.

  llama_kernels_check.py DIR

The bound: fp32 rounding over sums of at most a few dozen terms, 2e-5 of the largest reference
magnitude (at least 1): 2e-6, where fsdp lands within 3e-7; a wrong formula misses by orders more. Exit 1 on any miss."""
import json
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
BOUND = 2e-6


def load(d, name):
    with open(os.path.join(d, name + ".json")) as f:
        man = json.load(f)
    flat = np.fromfile(os.path.join(d, name + ".bin"), dtype="<f4").astype(np.float64)
    arrays, at = {}, 0
    for a in man["arrays"]:
        n = int(np.prod(a["shape"]))
        arrays[a["name"]] = torch.tensor(flat[at:at + n].reshape(a["shape"]))
        at += n
    assert at == flat.size, f"{name}: {flat.size - at} floats left over"
    return arrays, man.get("meta") or {}


def grads(fn, inputs, dy):
    xs = [x.clone().requires_grad_(True) for x in inputs]
    y = fn(*xs)
    (y * dy).sum().backward()
    return y.detach(), [x.grad for x in xs]


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def inv_freq(D, m):
    f = [m["theta"] ** (-2.0 * i / D) for i in range(D // 2)]
    if m["scaling"] != "llama3":
        return torch.tensor(f)
    out = []
    for v in f:  # Llama 3.1: divide long wavelengths, keep short ones, mix between
        wl = 2 * math.pi / v
        lo_wl, hi_wl = m["original"] / m["low"], m["original"] / m["high"]
        if wl < hi_wl:
            out.append(v)
        elif wl > lo_wl:
            out.append(v / m["factor"])
        else:
            s = (m["original"] / wl - m["low"]) / (m["high"] - m["low"])
            out.append((1 - s) * v / m["factor"] + s * v)
    return torch.tensor(out)


def rope(x, m):  # x [B, T, heads, D]
    T, D = x.shape[1], x.shape[3]
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq(D, m)[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
    half = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
    return x * cos + half * sin


def swiglu(gu):
    g, u = gu.chunk(2, -1)
    return torch.nn.functional.silu(g) * u


def attention(qkv, H, KV, D):  # qkv [B, T, (H + 2 KV) D]
    B, T, _ = qkv.shape
    q = qkv[..., :H * D].reshape(B, T, H, D).transpose(1, 2)
    k = qkv[..., H * D:(H + KV) * D].reshape(B, T, KV, D).transpose(1, 2)
    v = qkv[..., (H + KV) * D:].reshape(B, T, KV, D).transpose(1, 2)
    k = k.repeat_interleave(H // KV, dim=1)  # query head h reads K/V head h // (H / KV)
    v = v.repeat_interleave(H // KV, dim=1)
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)


def compare(case, what, got, want, bad):
    err = float((got - want).abs().max()) / max(1.0, float(want.abs().max()))
    status = "ok " if err <= BOUND else "BAD"
    print(f"{status} {case:16s} {what:5s} max error {err:.2e} of the largest value (bound {BOUND:.0e})")
    if err > BOUND:
        bad.append(f"{case} {what}")


def main(d):
    bad = []
    a, m = load(d, "rmsnorm")
    y, (dx, dw) = grads(lambda x, w: rmsnorm(x, w, m["eps"]), [a["x"], a["w"]], a["dy"])
    for what, got, want in [("y", a["y"], y), ("dx", a["dx"], dx), ("dw", a["dw"], dw)]:
        compare("rmsnorm", what, got, want, bad)
    for name in ["rope", "rope_llama3"]:
        a, m = load(d, name)
        y, (dx,) = grads(lambda x: rope(x, m), [a["x"]], a["dy"])
        compare(name, "y", a["y"], y, bad)
        compare(name, "dx", a["dx"], dx, bad)
    a, _ = load(d, "swiglu")
    y, (dgu,) = grads(swiglu, [a["gu"]], a["dy"])
    compare("swiglu", "y", a["y"], y, bad)
    compare("swiglu", "dgu", a["dgu"], dgu, bad)
    for kernel in ["attention", "materialized"]:  # the fused kernel, the materialised one
        for kv in [4, 2, 1]:
            a, m = load(d, f"{kernel}_kv{kv}")
            y, (dqkv,) = grads(lambda x: attention(x, m["H"], m["KV"], m["D"]), [a["qkv"]], a["dy"])
            name = ("fused" if kernel == "attention" else "materialized") + f" kv={kv}"
            compare(name, "y", a["y"], y, bad)
            compare(name, "dqkv", a["dqkv"], dqkv, bad)
    if bad:
        print("misses:", ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
