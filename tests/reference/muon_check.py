# SPDX-License-Identifier: MIT
"""Muon against float64 PyTorch (the pinned environment's: the model is transformers'
LlamaForCausalLM, tests/reference/hf_transformers.py): K training steps of a Hugging Face Llama directory on one
training sequence (every sequence of the batch is the same window, so the batch gradient is that
sequence's), with the optimizer written here from its definition, not from torch.optim or fsdp:

  hidden matrices (q, k, v, o, gate, up, down), each on its own:
    buf = momentum * buf + (1 - momentum) * g
    u = (1 - momentum) * g + momentum * buf  (Nesterov)
    X = u / ||u||_F, then 5 times: A = X X^T, X = a X + (b A + c A A) X   (on the wide side)
    W = W (1 - lr wd) - lr * 0.2 * sqrt(max(out, in)) * X
  everything else AdamW (bias-corrected, decoupled decay on the 2-D ones).

compare HF0 HF_K DATA K lr wd momentum: fsdp's weights after K steps (HF_K, exported) against the
reference's from HF0; per tensor, the relative error of the update W_K - W_0, which must be within
1e-3 (the float32 gradients, moments and Newton-Schulz GEMMs against float64)."""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_transformers  # noqa: E402  (the model: transformers' LlamaForCausalLM, float64)

torch.set_num_threads(1)
A, B, C = 3.4445, -4.7750, 2.0315
HIDDEN = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def newton_schulz(g, steps=5):
    x = g / max(g.norm().item(), 1e-7)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    for _ in range(steps):
        a = x @ x.T
        x = A * x + (B * a + C * a @ a) @ x
    return x.T if tall else x


def loss_and_grads(w, model, seq):
    params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    tokens = torch.as_tensor(seq[None, :-1])
    targets = torch.as_tensor(seq[None, 1:])
    logits = functional_call(model, params, (tokens,)).logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    return loss.item(), {k: p.grad for k, p in params.items()}


def train(w, model, seq, K, lr, wd, mom, b1=0.9, b2=0.95, eps=1e-8):
    w = {k: v.clone() for k, v in w.items()}
    state = {k: (torch.zeros_like(v), torch.zeros_like(v)) for k, v in w.items()}
    losses = []
    for t in range(1, K + 1):
        loss, g = loss_and_grads(w, model, seq)
        losses.append(loss)
        for k in w:
            m, v = state[k]
            if k.split(".")[-2] in HIDDEN:
                m.mul_(mom).add_((1 - mom) * g[k])
                u = (1 - mom) * g[k] + mom * m
                out, inp = w[k].shape
                w[k] = w[k] * (1 - lr * wd) - lr * 0.2 * math.sqrt(max(out, inp)) * newton_schulz(u)
            else:
                m.mul_(b1).add_((1 - b1) * g[k])
                v.mul_(b2).add_((1 - b2) * g[k] * g[k])
                mh, vh = m / (1 - b1 ** t), v / (1 - b2 ** t)
                decay = wd if w[k].dim() == 2 else 0.0
                w[k] = w[k] - lr * (mh / (vh.sqrt() + eps) + decay * w[k])
    return w, losses


def compare(d0, dk, data, K, lr, wd, mom):
    model = hf_transformers.load(d0)
    w0 = {k: v.detach().clone() for k, v in model.named_parameters()}
    seq = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
    want, losses = train(w0, model, seq, int(K), float(lr), float(wd), float(mom))
    got = {k: v.detach() for k, v in hf_transformers.load(dk).named_parameters()}
    worst = {"muon": (0.0, ""), "adamw": (0.0, "")}
    for k in sorted(w0):
        dw_ref, dw = want[k] - w0[k], got[k] - w0[k]
        err = ((dw - dw_ref).norm() / dw_ref.norm()).item()
        kind = "muon" if k.split(".")[-2] in HIDDEN else "adamw"
        if err > worst[kind][0]:
            worst[kind] = (err, k)
    print(f"reference losses {', '.join(f'{x:.6f}' for x in losses)}")
    for kind, (err, name) in worst.items():
        print(f"{kind}: the largest relative error of an update {err:.2e} ({name})")
    return 0 if max(e for e, _ in worst.values()) <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(compare(*sys.argv[2:]) if sys.argv[1] == "compare" else 2)
