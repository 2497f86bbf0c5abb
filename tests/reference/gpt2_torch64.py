# SPDX-License-Identifier: MIT
"""GPT-2 in float64 PyTorch (pre-LN blocks, tanh GELU, tied LM head, LayerNorm eps 1e-5), on
Hugging Face-named, Hugging Face-layout weights (Conv1D: x @ W + b), written from the GPT-2
definition and not from fsdp's code: the reference for fsdp's eval loss and greedy sampling."""
import math

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)


def logits(w, n_head, tokens, position_ids=None, mask=None):
    """tokens: (B, T) ints -> (B, T, V) float64 logits. position_ids (B, T) and mask (B, T, T,
    True where query t may attend key s) as Hugging Face passes packed documents; by default
    positions 0..T-1 and the causal mask."""
    w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in w.items()}
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    B, T = tokens.shape
    pos = torch.arange(T)[None, :].expand(B, T) if position_ids is None else position_ids
    x = w["wte.weight"][tokens] + w["wpe.weight"][pos]
    C = x.shape[-1]
    mask = torch.ones(T, T, dtype=torch.bool).tril() if mask is None else mask[:, None]
    ln = lambda h, p: F.layer_norm(h, (C,), w[p + ".weight"], w[p + ".bias"], eps=1e-5)
    l = 0
    while f"h.{l}.ln_1.weight" in w:
        p = f"h.{l}."
        qkv = ln(x, p + "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (z.view(B, T, n_head, C // n_head).transpose(1, 2) for z in qkv.split(C, -1))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(C // n_head)
        y = F.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v
        x = x + y.transpose(1, 2).reshape(B, T, C) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.gelu(ln(x, p + "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
        l += 1
    return ln(x, "ln_f") @ w["wte.weight"].T


def eval_loss(w, n_head, tokens, T, sequences):
    """fsdp's evaluation: window i is tokens[i*(T+1) : i*(T+1)+T+1]; the mean over windows of
    each window's mean next-token cross-entropy."""
    n = min(sequences, len(tokens) // (T + 1))
    win = torch.stack([torch.as_tensor(tokens[i * (T + 1):i * (T + 1) + T + 1]) for i in range(n)]).long()
    z = logits(w, n_head, win[:, :-1])
    nll = F.cross_entropy(z.reshape(-1, z.shape[-1]), win[:, 1:].reshape(-1), reduction="none")
    return nll.view(n, T).mean(1).mean().item()


def document_layout(win, eos):
    """Packed documents of windows win (n, T+1): a document starts at each window's first token
    and after each eos. Returns position_ids (n, T), restarting at each start, and the mask
    (n, T, T): causal within a document, nothing across a start."""
    inp = win[:, :-1]
    n, T = inp.shape
    starts = torch.zeros(n, T, dtype=torch.long)
    for b in range(n):
        s = 0
        for t in range(T):
            if t > 0 and int(inp[b, t - 1]) == eos:
                s = t
            starts[b, t] = s
    t = torch.arange(T)
    pos = t[None, :] - starts
    key = t[None, None, :]
    mask = (key <= t[None, :, None]) & (key >= starts[:, :, None])
    return pos, mask


def packed_eval_loss(w, n_head, tokens, T, sequences, eos, trained=None):
    """fsdp's evaluation with data.packing = documents and a trained-token mask (trained[i]:
    token i is scored as a target): the mean, over every scored target of the windows, of its
    cross-entropy; the target whose input is eos is not scored."""
    n = min(sequences, len(tokens) // (T + 1))
    idx = torch.stack([torch.arange(i * (T + 1), i * (T + 1) + T + 1) for i in range(n)])
    win = torch.as_tensor(np.asarray(tokens))[idx].long()
    pos, mask = document_layout(win, eos)
    z = logits(w, n_head, win[:, :-1], pos, mask)
    nll = F.cross_entropy(z.reshape(-1, z.shape[-1]), win[:, 1:].reshape(-1), reduction="none").view(n, T)
    scored = win[:, :-1] != eos
    if trained is not None:
        scored &= torch.as_tensor(np.asarray(trained, dtype=bool))[idx[:, 1:]]
    return (nll[scored].sum() / scored.sum()).item()


def greedy(w, n_head, prompt, n, T):
    """n argmax tokens after prompt, each from the last T tokens."""
    out = list(prompt)
    for _ in range(n):
        z = logits(w, n_head, [out[-T:]])[0, -1]
        out.append(int(torch.argmax(z)))  # the first maximum, as fsdp-sample takes
    return out
