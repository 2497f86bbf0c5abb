#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch's causal scaled_dot_product_attention, forward and backward, timed the way
`fsdp-bench attention` times fsdp's kernels: the same B, H, T, D, median of --iters calls after a
warm-up, GFLOP/s over the causal half (4 B H D T(T+1)/2 forward, twice that backward). The
yardstick for the fused kernel's GPU table (docs/attention.md).

  python3 jobscripts/sdpa_reference.py --batch 16 --heads 12 --head-dim 64 --seq 1024 4096 \
      --device cuda --dtype fp32 bf16
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def attention(q, k, v):
    """SDPA where this PyTorch has it (2.0 on); the same computation written out before that."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    s = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device):
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--seq", type=int, nargs="+", default=[256, 1024, 4096])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", nargs="+", default=["fp32"], choices=["fp32", "bf16"])
    p.add_argument("--iters", type=int, default=5)
    a = p.parse_args()
    if a.device == "cpu":
        torch.set_num_threads(1)
    impl = "scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention") else \
        "softmax(QK^T)V written out (this torch has no SDPA)"
    print(f"sdpa_reference: torch {torch.__version__} {impl}, {a.device}, causal, B {a.batch}, "
          f"H {a.heads}, D {a.head_dim}, median of {a.iters}")
    print(f"{'T':>6} {'dtype':<6} {'fwd ms':>10} {'bwd ms':>10} {'fwd GF/s':>10} {'bwd GF/s':>10} "
          f"{'total ms':>10}")
    for T in a.seq:
        causal = 4.0 * a.batch * a.heads * a.head_dim * T * (T + 1) / 2
        for name in a.dtype:
            dt = torch.float32 if name == "fp32" else torch.bfloat16
            g = torch.Generator(device="cpu").manual_seed(T)
            shape = (a.batch, a.heads, T, a.head_dim)
            q, k, v = (torch.randn(shape, generator=g).to(a.device, dt).requires_grad_()
                       for _ in range(3))
            dout = torch.randn(shape, generator=g).to(a.device, dt)
            out = None

            def fwd():
                nonlocal out
                out = attention(q, k, v)

            def bwd():
                torch.autograd.grad(out, (q, k, v), dout)

            fwd()
            bwd()  # warm-up
            f, b = [], []
            for _ in range(a.iters):
                f.append(timed(fwd, a.device))
                b.append(timed(bwd, a.device))
            tf, tb = statistics.median(f), statistics.median(b)
            print(f"{T:>6} {name:<6} {1e3 * tf:>10.2f} {1e3 * tb:>10.2f} {causal / tf / 1e9:>10.1f} "
                  f"{2 * causal / tb / 1e9:>10.1f} {1e3 * (tf + tb):>10.2f}", flush=True)


if __name__ == "__main__":
    main()
