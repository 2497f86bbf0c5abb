# SPDX-License-Identifier: MIT
"""Llama (the Llama 3 family: RMSNorm, rotary positions with the optional Llama 3.1 frequency
blend, grouped-query attention, SwiGLU MLP, untied or tied head), Qwen3 (the same with an
RMSNorm over each q and k head before the rotation, and its own head_dim) and their mixtures of
experts, Qwen3-MoE and Mixtral (a softmax router over the experts, the top k, optionally
renormalised, the experts' SwiGLU outputs weighted and summed; Hugging Face's load-balancing
loss), in float64 PyTorch, on a Hugging Face LlamaForCausalLM, Qwen3ForCausalLM,
Qwen3MoeForCausalLM or MixtralForCausalLM directory (config.json + safetensors, one file or an
index over several; F32, BF16 or F16). Written from the models' equations, not from transformers
or fsdp: the reference for fsdp's eval loss, greedy sampling and the experts' gradients."""
import json
import math
import os
import struct
import sys
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_torch64  # noqa: E402  (the evaluation windows and greedy loop are shared with GPT-2's)

torch.set_num_threads(1)  # one thread: the same sums in the same order on every run

# safetensors dtype -> (stored numpy dtype, widening to float32, exact for all three)
_DTYPES = {"F32": (np.dtype("<f4"), lambda a: a),
           "F16": (np.dtype("<f2"), lambda a: a.astype(np.float32)),
           "BF16": (np.dtype("<u2"), lambda a: (a.astype(np.uint32) << 16).view(np.float32))}


def read_safetensors(path):
    """{name: (dtype name, float32 array in its shape)} and the header; values widened exactly."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        stored, widen = _DTYPES[t["dtype"]]
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], widen(np.frombuffer(data[b:e], dtype=stored)).reshape(t["shape"]))
    return out, header


def read_weights(d):
    """{name: (dtype, float32 array)} from d/model.safetensors, or from the files that
    d/model.safetensors.index.json's weight_map names (each tensor taken from its listed file)."""
    index = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(d, "model.safetensors"))[0]
    with open(index) as f:
        wmap = json.load(f)["weight_map"]
    files = {fn: read_safetensors(os.path.join(d, fn))[0] for fn in sorted(set(wmap.values()))}
    missing = [n for n, fn in wmap.items() if n not in files[fn]]
    if missing:
        raise ValueError(f"{d}: index names tensors its files lack: {missing}")
    return {n: files[fn][n] for n, fn in wmap.items()}


def hparams(cfg):
    """The numbers the forward needs, from config.json in either rope layout: the older
    rope_theta + rope_scaling, or the newer rope_parameters. Defaults are LlamaConfig's."""
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    if "rope_parameters" in cfg and cfg["rope_parameters"] is not None:
        rope = cfg["rope_parameters"]
        theta = rope["rope_theta"]
    else:
        rope = cfg.get("rope_scaling")
        theta = cfg.get("rope_theta", 10000.0)
    kind = "default" if rope is None else rope.get("rope_type", rope.get("type", "default"))
    if kind not in ("default", "llama3"):
        raise ValueError(f"rope type {kind!r}: only default and llama3 are modelled")
    scaling = None if kind == "default" else tuple(float(rope[k]) for k in (
        "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"))
    mtype = cfg.get("model_type")
    qwen3 = mtype in ("qwen3", "qwen3_moe") or "Qwen3ForCausalLM" in cfg.get("architectures", [])
    D = cfg.get("head_dim") or C // H
    if H % KV or D % 2 or (not cfg.get("head_dim") and C % H):
        raise ValueError(f"heads: hidden {C}, heads {H}, kv heads {KV}, head_dim {cfg.get('head_dim')}")
    if cfg.get("use_sliding_window"):
        raise ValueError("use_sliding_window: only full causal attention is modelled")
    for flag in ("attention_bias", "mlp_bias"):
        if cfg.get(flag):
            raise ValueError(f"{flag}: biases are not modelled")
    if cfg.get("hidden_act", "silu") != "silu":
        raise ValueError(f"hidden_act {cfg['hidden_act']!r}: only silu is modelled")
    L = cfg["num_hidden_layers"]
    moe = None
    if mtype == "qwen3_moe":  # Qwen3MoeConfig's rule for which layers have experts
        dense = set(cfg.get("mlp_only_layers") or [])
        step = cfg.get("decoder_sparse_step", 1)
        moe = {"E": cfg["num_experts"], "K": cfg["num_experts_per_tok"], "F": cfg["moe_intermediate_size"],
               "renorm": bool(cfg.get("norm_topk_prob", False)), "block": "mlp.",
               "names": ("gate_proj", "up_proj", "down_proj"),
               "sparse": [l not in dense and (l + 1) % step == 0 for l in range(L)]}
    elif mtype == "mixtral":
        moe = {"E": cfg["num_local_experts"], "K": cfg["num_experts_per_tok"], "F": cfg["intermediate_size"],
               "renorm": True, "block": "block_sparse_moe.", "names": ("w1", "w3", "w2"), "sparse": [True] * L}
    if moe:
        moe["coef"] = float(cfg.get("router_aux_loss_coef", 0.001)) if cfg.get("output_router_logits") else 0.0
    return {"C": C, "H": H, "KV": KV, "D": D, "F": cfg.get("intermediate_size"), "qk_norm": qwen3,
            "L": L, "V": cfg["vocab_size"], "moe": moe,
            "eps": float(cfg.get("rms_norm_eps", 1e-6)), "theta": float(theta), "scaling": scaling,
            "tied": bool(cfg.get("tie_word_embeddings", False))}


def sparse(hp, l):
    return hp["moe"] is not None and hp["moe"]["sparse"][l]


def expected_shapes(hp):
    """HF name -> shape, nn.Linear layout [out, in]; lm_head only when untied."""
    C, D, Fd = hp["C"], hp["D"], hp["F"]
    s = {"model.embed_tokens.weight": (hp["V"], C), "model.norm.weight": (C,)}
    for l in range(hp["L"]):
        p = f"model.layers.{l}."
        s.update({p + "input_layernorm.weight": (C,), p + "self_attn.q_proj.weight": (hp["H"] * D, C),
                  p + "self_attn.k_proj.weight": (hp["KV"] * D, C),
                  p + "self_attn.v_proj.weight": (hp["KV"] * D, C),
                  p + "self_attn.o_proj.weight": (C, hp["H"] * D),
                  p + "post_attention_layernorm.weight": (C,)})
        if sparse(hp, l):  # the router [E, C] and each expert's gate, up [F, C] and down [C, F]
            m = hp["moe"]
            x = p + m["block"]
            s[x + "gate.weight"] = (m["E"], C)
            for e in range(m["E"]):
                g, u, dn = m["names"]
                s.update({f"{x}experts.{e}.{g}.weight": (m["F"], C), f"{x}experts.{e}.{u}.weight": (m["F"], C),
                          f"{x}experts.{e}.{dn}.weight": (C, m["F"])})
        else:
            s.update({p + "mlp.gate_proj.weight": (Fd, C), p + "mlp.up_proj.weight": (Fd, C),
                      p + "mlp.down_proj.weight": (C, Fd)})
        if hp["qk_norm"]:
            s.update({p + "self_attn.q_norm.weight": (D,), p + "self_attn.k_norm.weight": (D,)})
    if not hp["tied"]:
        s["lm_head.weight"] = (hp["V"], C)
    return s


def load(d):
    """(float64 torch weights by HF name, hparams) of a Llama directory; names and shapes checked
    (a tied model's stray lm_head.weight is ignored, as HF ties it to the embedding)."""
    with open(os.path.join(d, "config.json")) as f:
        hp = hparams(json.load(f))
    raw = read_weights(d)
    want = expected_shapes(hp)
    missing = sorted(set(want) - set(raw))
    if missing:
        raise ValueError(f"{d}: tensors missing: {missing}")
    for n, shape in want.items():
        if tuple(raw[n][1].shape) != shape:
            raise ValueError(f"{d}: {n} has shape {list(raw[n][1].shape)}, the config says {list(shape)}")
    return {n: torch.from_numpy(raw[n][1].astype(np.float64)) for n in want}, hp


def inv_freq(D, theta, scaling):
    """theta^(-2i/D) for i < D/2; with Llama 3.1 scaling (factor, low, high, orig): long
    wavelengths slowed by factor, short ones kept, the band between blended linearly in orig/wavelen."""
    f = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    if scaling is None:
        return f
    factor, low, high, orig = scaling
    wavelen = 2 * math.pi / f
    smooth = (orig / wavelen - low) / (high - low)
    blended = (1 - smooth) * f / factor + smooth * f
    return torch.where(wavelen > orig / low, f / factor, torch.where(wavelen < orig / high, f, blended))


def rotate(x, cos, sin):
    """HF's rotate_half convention: dimension i pairs with i + D/2 (not interleaved pairs)."""
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def moe_mlp(w, m, x, h):
    """A sparse layer's MLP on h (B, T, C) with the tensors under prefix x: (output, router logits
    (B*T, E)). The router as Qwen3MoeSparseMoeBlock and MixtralSparseMoeBlock compute it."""
    B, T, C = h.shape
    flat = h.reshape(-1, C)
    router = flat @ w[x + "gate.weight"].T
    probs = F.softmax(router, dim=-1)
    weights, chosen = torch.topk(probs, m["K"], dim=-1)
    if m["renorm"]:
        weights = weights / weights.sum(-1, keepdim=True)
    out = torch.zeros_like(flat)
    g, u, dn = m["names"]
    for e in range(m["E"]):  # each expert on the tokens that chose it, weighted
        tok, slot = torch.where(chosen == e)
        if tok.numel() == 0:
            continue
        z = flat[tok]
        y = (F.silu(z @ w[f"{x}experts.{e}.{g}.weight"].T) * (z @ w[f"{x}experts.{e}.{u}.weight"].T)) \
            @ w[f"{x}experts.{e}.{dn}.weight"].T
        out = out.index_add(0, tok, y * weights[tok, slot, None])
    return out.reshape(B, T, C), router


def balance_loss(hp, routers):
    """Hugging Face's load_balancing_loss_func: the sparse layers' router logits together,
    E * sum over slots and experts of (share of choices) * (mean probability)."""
    m = hp["moe"]
    allr = torch.cat(routers, 0)
    probs = F.softmax(allr, dim=-1)
    _, chosen = torch.topk(probs, m["K"], dim=-1)
    mask = F.one_hot(chosen, m["E"]).to(torch.float64)  # (N, K, E)
    return m["E"] * (mask.mean(0) * probs.mean(0)[None, :]).sum()


def logits(w, hp, tokens, position_ids=None, mask=None, routers=None):
    """tokens: (B, T) ints -> (B, T, V) float64 logits. Positions count from 0 in each row, or
    are position_ids (B, T) with mask (B, T, T), as Hugging Face passes packed documents.
    routers: a list that receives each sparse layer's router logits."""
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    B, T = tokens.shape
    H, KV, D, eps = hp["H"], hp["KV"], hp["D"], hp["eps"]
    pos = torch.arange(T)[None, :].expand(B, T) if position_ids is None else position_ids
    ang = pos.to(torch.float64)[..., None] * inv_freq(D, hp["theta"], hp["scaling"])
    cos, sin = torch.cat((ang, ang), -1).cos()[:, None], torch.cat((ang, ang), -1).sin()[:, None]
    mask = torch.ones(T, T, dtype=torch.bool).tril() if mask is None else mask[:, None]
    x = w["model.embed_tokens.weight"][tokens]
    for l in range(hp["L"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        heads = lambda name, n: (h @ w[p + name].T).view(B, T, n, D).transpose(1, 2)  # (B, n, T, D)
        q, k = heads("self_attn.q_proj.weight", H), heads("self_attn.k_proj.weight", KV)
        if hp["qk_norm"]:  # Qwen3: each head normalised over its D channels, then rotated
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        v = heads("self_attn.v_proj.weight", KV)
        # Grouped-query: query head j reads key/value head j // (H / KV).
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        y = F.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v
        x = x + y.transpose(1, 2).reshape(B, T, H * D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if sparse(hp, l):
            y, r = moe_mlp(w, hp["moe"], p + hp["moe"]["block"], h)
            x = x + y
            if routers is not None:
                routers.append(r)
            continue
        g = F.silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
        x = x + g @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight" if hp["tied"] else "lm_head.weight"]
    return rms_norm(x, w["model.norm.weight"], eps) @ head.T


def _as_gpt2_forward():
    """gpt2_torch64's eval_loss and greedy hold fsdp's evaluation windows and sliding context;
    they call its module-level logits(w, n_head, tokens), which this swaps for Llama's (the
    hparams travel in the n_head argument)."""
    return mock.patch.object(gpt2_torch64, "logits", logits)


def eval_loss(w, hp, tokens, T, sequences):
    with _as_gpt2_forward():
        return gpt2_torch64.eval_loss(w, hp, tokens, T, sequences)


def packed_eval_loss(w, hp, tokens, T, sequences, eos, trained=None):
    with _as_gpt2_forward():
        return gpt2_torch64.packed_eval_loss(w, hp, tokens, T, sequences, eos, trained)


def greedy(w, hp, prompt, n, T):
    with _as_gpt2_forward():
        return gpt2_torch64.greedy(w, hp, prompt, n, T)
