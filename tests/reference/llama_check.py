#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The file side of fsdp's Llama-family Hugging Face tests (json + numpy, HDF5 through h5dump; no
PyTorch: the models' own computation is transformers', tests/reference/hf_transformers.py), the
counterpart of hf_check.py for GPT-2:
  random-model DIR [--layers 2 --embd 64 --heads 4 --kv 2 --ffn 96 --vocab 256 --ctx 64
                    --seed 1 --theta 500000 --tied 0 --scaling llama3|none --factor 8
                    --low 0.5 --high 4 --orig 32 --qwen3 0 --headdim 0
                    --moe qwen3_moe|mixtral --experts 4 --topk 2 --moeffn 48 --dense 0,2
                    --renorm 1 --aux 1 --coef 0.01]
                               random LlamaForCausalLM weights (--qwen3 1: Qwen3ForCausalLM, with
                               q/k norms and head_dim --headdim; --moe: Qwen3MoeForCausalLM, with
                               --dense its mlp_only_layers, or MixtralForCausalLM, one tensor per
                               expert): DIR/hf (F32), DIR/hf_bf16, DIR/hf_sharded (two files +
                               index), DIR/hf_ropeparams
  export-matches DIR CKPT [--dtype fp32|bf16] [KEY=JSON ...]
                               DIR holds CKPT's /model bit for bit (or its round-to-nearest-even
                               bf16) under the HF names, with a LlamaForCausalLM config.json
                               (KEY=JSON: config fields that must hold exactly these values)
  bad-files DIR OUT            damaged copies of DIR/hf and DIR/hf_sharded, one directory a case
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_check  # noqa: E402  (h5_dataset: a checkpoint dataset through h5dump)
import safetensors_np  # noqa: E402

read_safetensors = safetensors_np.read


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


SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def options(args, defaults):
    """--name value pairs over defaults (ints where the default is an int)."""
    out = dict(defaults)
    for flag, value in zip(args[::2], args[1::2]):
        key = flag.removeprefix("--")
        if key not in out:
            raise SystemExit(f"unknown option {flag}")
        out[key] = type(out[key])(value) if not isinstance(out[key], str) else value
    return out


def random_model(d, *args):
    # The default rope scaling puts head dimension 16's eight frequencies (wavelengths 6.3,
    # 32.5, 167, ...) in all three bands of the Llama 3.1 blend: kept (< orig/high = 8),
    # blended (8..64) and slowed by factor (> orig/low = 64); orig (32) below the context (64),
    # which transformers 5 asks of a llama3 rope_parameters.
    o = options(args, {"layers": 2, "embd": 64, "heads": 4, "kv": 2, "ffn": 96, "vocab": 256,
                       "ctx": 64, "seed": 1, "theta": 500000.0, "tied": 0, "scaling": "llama3",
                       "factor": 8.0, "low": 0.5, "high": 4.0, "orig": 32, "qwen3": 0,
                       "headdim": 0, "moe": "", "experts": 4, "topk": 2, "moeffn": 48, "dense": "",
                       "renorm": 1, "aux": 1, "coef": 0.01})
    rng = np.random.default_rng(o["seed"])
    C, H, KV, Fd, V = o["embd"], o["heads"], o["kv"], o["ffn"], o["vocab"]
    D = o["headdim"] or C // H
    # Matrices at std 0.08 and the embedding at 0.5 (not HF's 0.02 init): the logits then
    # spread enough that the loss is well away from log V and bf16 rounding shows in it. q and
    # k at twice that sharpen attention, so a rotary mistake (interleaved pairs, no llama3
    # blend, another theta) moves the eval loss by 3e-4 or more, well past a 1e-5 tolerance.
    mat = lambda *shape, std=0.08: rng.normal(0, std, shape)
    norm = lambda: 1.0 + rng.normal(0, 0.1, (C,))
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (V, C))}
    moe = o["moe"]
    dense = [int(x) for x in o["dense"].split(",") if x] if moe == "qwen3_moe" else []
    if moe == "qwen3_moe":
        o["qwen3"] = 1
    for l in range(o["layers"]):
        p = f"model.layers.{l}."
        w.update({p + "input_layernorm.weight": norm(), p + "self_attn.q_proj.weight": mat(H * D, C, std=0.16),
                  p + "self_attn.k_proj.weight": mat(KV * D, C, std=0.16), p + "self_attn.v_proj.weight": mat(KV * D, C),
                  p + "self_attn.o_proj.weight": mat(C, H * D), p + "post_attention_layernorm.weight": norm()})
        if moe and l not in dense:
            # Routers at 0.3: routing weights well apart (no top-k choice near a tie that float32
            # rounding could flip), experts as the dense MLP's matrices.
            x = p + ("mlp." if moe == "qwen3_moe" else "block_sparse_moe.")
            names = ("gate_proj", "up_proj", "down_proj") if moe == "qwen3_moe" else ("w1", "w3", "w2")
            Fm = o["moeffn"] if moe == "qwen3_moe" else Fd
            w[x + "gate.weight"] = mat(o["experts"], C, std=0.3)
            for e in range(o["experts"]):
                w.update({f"{x}experts.{e}.{names[0]}.weight": mat(Fm, C), f"{x}experts.{e}.{names[1]}.weight": mat(Fm, C),
                          f"{x}experts.{e}.{names[2]}.weight": mat(C, Fm)})
        else:
            w.update({p + "mlp.gate_proj.weight": mat(Fd, C), p + "mlp.up_proj.weight": mat(Fd, C),
                      p + "mlp.down_proj.weight": mat(C, Fd)})
        if o["qwen3"]:  # per-head norms over D channels, away from 1 so a missing one shows
            w.update({p + "self_attn.q_norm.weight": 1.0 + rng.normal(0, 0.3, (D,)),
                      p + "self_attn.k_norm.weight": 1.0 + rng.normal(0, 0.3, (D,))})
    w["model.norm.weight"] = norm()
    if not o["tied"]:
        w["lm_head.weight"] = mat(V, C)
    w = {k: v.astype(np.float32) for k, v in w.items()}

    scaling = None if o["scaling"] == "none" else {
        "rope_type": "llama3", "factor": o["factor"], "low_freq_factor": o["low"],
        "high_freq_factor": o["high"], "original_max_position_embeddings": o["orig"]}
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C,
           "intermediate_size": Fd, "num_hidden_layers": o["layers"], "num_attention_heads": H,
           "num_key_value_heads": KV, "hidden_act": "silu", "rms_norm_eps": 1e-5,
           "rope_theta": o["theta"], "rope_scaling": scaling, "tie_word_embeddings": bool(o["tied"]),
           "vocab_size": V, "max_position_embeddings": o["ctx"], "attention_bias": False,
           "mlp_bias": False, "torch_dtype": "float32"}
    if o["qwen3"]:
        cfg = {k: v for k, v in cfg.items() if k != "mlp_bias"}
        cfg.update({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": D,
                    "use_sliding_window": False, "sliding_window": None, "max_window_layers": o["layers"]})
    if moe:
        cfg = {k: v for k, v in cfg.items() if k != "mlp_bias"}
        cfg.update({"output_router_logits": bool(o["aux"]), "router_aux_loss_coef": o["coef"],
                    "num_experts_per_tok": o["topk"]})
    if moe == "qwen3_moe":
        cfg.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_experts": o["experts"],
                    "moe_intermediate_size": o["moeffn"], "norm_topk_prob": bool(o["renorm"]),
                    "decoder_sparse_step": 1, "mlp_only_layers": dense})
    elif moe == "mixtral":
        cfg.update({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                    "num_local_experts": o["experts"], "router_jitter_noise": 0.0, "sliding_window": None})

    def put(sub, config, files):  # files: {file name: (tensors, dtype)}
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        for fn, (t, dtype) in files.items():
            safetensors_np.write(os.path.join(d, sub, fn), t, dtype, {"format": "pt"})
        with open(os.path.join(d, sub, "config.json"), "w") as f:
            json.dump(config, f, indent=1)

    put("hf", cfg, {"model.safetensors": (w, "F32")})
    put("hf_bf16", dict(cfg, torch_dtype="bfloat16"), {"model.safetensors": (w, "BF16")})
    # Sharded: the embedding and layer 0 in the first file, the rest in the second.
    first = {k: v for k, v in w.items() if k.startswith(("model.embed_tokens.", "model.layers.0."))}
    second = {k: v for k, v in w.items() if k not in first}
    put("hf_sharded", cfg, {SHARDS[0]: (first, "F32"), SHARDS[1]: (second, "F32")})
    index = {"metadata": {"total_size": sum(4 * v.size for v in w.values())},
             "weight_map": {k: SHARDS[k not in first] for k in sorted(w)}}
    with open(os.path.join(d, "hf_sharded", "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=1)
    # The newer config layout (transformers >= 4.57 / 5): one rope_parameters dict.
    newer = {k: v for k, v in cfg.items() if k not in ("rope_theta", "rope_scaling")}
    newer["rope_parameters"] = dict(scaling or {"rope_type": "default"}, rope_theta=o["theta"])
    put("hf_ropeparams", newer, {"model.safetensors": (w, "F32")})
    return 0


def h5_model_shapes(ckpt):
    """{name: shape} of the checkpoint's /model datasets, from h5dump's header listing."""
    text = subprocess.run(["h5dump", "-H", "-g", "/model", ckpt], check=True, capture_output=True,
                          text=True).stdout
    found = re.findall(r'DATASET "([^"]+)" \{\s*DATATYPE[^\n]*\n\s*DATASPACE\s+SIMPLE \{ \( ([0-9, ]+) \)', text)
    return {name: tuple(int(x) for x in dims.split(",")) for name, dims in found}


def export_matches(d, ckpt, *args):
    args = list(args)
    want_dtype = None
    if "--dtype" in args:  # the dtype the export was asked for; without it, the files' own
        i = args.index("--dtype")
        want_dtype = args[i + 1]
        del args[i:i + 2]
    pins = {k: json.loads(v) for k, v in (a.split("=", 1) for a in args)}
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    bad = []
    qwen3 = cfg.get("model_type") == "qwen3"
    expect = [("architectures", ["Qwen3ForCausalLM"]), ("model_type", "qwen3")] if qwen3 else \
        [("architectures", ["LlamaForCausalLM"]), ("model_type", "llama")]
    for key, want in expect + list(pins.items()):
        if cfg.get(key) != want:
            bad.append(f"config.json {key} = {cfg.get(key)!r}, not {want!r}")
    fields = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "rms_norm_eps", "rope_theta", "rope_scaling",
              "tie_word_embeddings", "vocab_size", "max_position_embeddings", "torch_dtype"]
    bad += [f"config.json lacks {k}" for k in fields if k not in cfg]
    if bad:
        return report(bad, 0)
    rs = cfg["rope_scaling"]
    if rs is not None and not (rs.get("rope_type") == "llama3" and all(k in rs for k in (
            "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"))):
        bad.append(f"config.json rope_scaling {rs!r} is not null or a complete llama3 dict")
    if not (cfg["rms_norm_eps"] > 0 and cfg["rope_theta"] > 0 and cfg["max_position_embeddings"] > 0):
        bad.append("config.json rms_norm_eps, rope_theta, max_position_embeddings must be positive")

    # The config's shapes, the export's tensors and the checkpoint's datasets: one set of names.
    shapes = expected_shapes(hparams(cfg))
    tensors = read_weights(d)
    in_ckpt = h5_model_shapes(ckpt)
    for what, names in [("the export", set(tensors)), ("the checkpoint's /model", set(in_ckpt))]:
        if names != set(shapes):
            bad.append(f"{what}: names {sorted(names ^ set(shapes))} differ from config.json's Llama")
    for fn in [f for f in os.listdir(d) if f.endswith(".safetensors")]:
        if read_safetensors(os.path.join(d, fn))[1].get("__metadata__", {}).get("format") != "pt":
            bad.append(f"{fn}: __metadata__.format is not 'pt'")
    dtypes = {dt for dt, _ in tensors.values()}
    torch_dtype = {"F32": "float32", "BF16": "bfloat16"}.get(next(iter(dtypes)), "?")
    if len(dtypes) != 1 or cfg["torch_dtype"] != torch_dtype:
        bad.append(f"tensor dtypes {sorted(dtypes)} with torch_dtype {cfg['torch_dtype']!r}")
    if want_dtype and torch_dtype != {"fp32": "float32", "bf16": "bfloat16"}[want_dtype]:
        bad.append(f"--dtype {want_dtype}, but the tensors are {sorted(dtypes)}")
    for name in sorted(shapes):
        if name not in tensors or name not in in_ckpt:
            continue
        dtype, got = tensors[name]
        if tuple(got.shape) != shapes[name] or in_ckpt[name] != shapes[name]:
            bad.append(f"{name}: export {list(got.shape)}, checkpoint {list(in_ckpt[name])}, "
                       f"config {list(shapes[name])}")
            continue
        want = hf_check.h5_dataset(ckpt, "/model/" + name)
        if dtype == "BF16":  # the export rounds to nearest even; compare the widened bits
            want = (safetensors_np.to_bf16_bits(want).astype(np.uint32) << 16).view(np.float32)
        elif dtype != "F32":
            bad.append(f"{name}: dtype {dtype}")
            continue
        if not np.array_equal(got.ravel().view(np.uint32), want.view(np.uint32)):
            bad.append(f"{name}: {int((got.ravel().view(np.uint32) != want.view(np.uint32)).sum())} elements differ")
    return report(bad, len(shapes))


def report(bad, n):
    for b in bad:
        print("FAIL:", b)
    print(f"{n} tensors compared, {len(bad)} problems")
    return 1 if bad else 0


def bad_files(d, out):
    """One damaged copy per case, a directory named after the case, from DIR/hf or DIR/hf_sharded."""
    hf, sharded = os.path.join(d, "hf"), os.path.join(d, "hf_sharded")
    cfg = json.load(open(os.path.join(hf, "config.json")))

    def copy(src, case, config=None, index=None):
        dst = os.path.join(out, case)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        if config is not None:
            with open(os.path.join(dst, "config.json"), "w") as f:
                json.dump(config, f, indent=1)
        if index is not None:
            with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
                json.dump(index, f, indent=1)
        return dst

    copy(hf, "config_missing_field", {k: v for k, v in cfg.items() if k != "num_attention_heads"})
    copy(hf, "config_contradicts", dict(cfg, hidden_size=2 * cfg["hidden_size"]))
    H = cfg["num_attention_heads"]
    kv = next(k for k in range(2, H + 2) if H % k)  # 3 with 4 heads: not a divisor
    copy(hf, "kv_heads_not_divisor", dict(cfg, num_key_value_heads=kv))

    # k_proj's shape transposed in the header: the same byte count, so the data offsets still
    # agree with the shape and only the [KV*D, C] check can catch it.
    dst = copy(hf, "tensor_shape")
    path = os.path.join(dst, "model.safetensors")
    blob = open(path, "rb").read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    header["model.layers.0.self_attn.k_proj.weight"]["shape"].reverse()
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + blob[8 + n:])

    index = json.load(open(os.path.join(sharded, "model.safetensors.index.json")))
    wmap = index["weight_map"]
    gone = dict(wmap, **{"model.norm.weight": "model-00003-of-00003.safetensors"})
    copy(sharded, "index_missing_shard", index=dict(index, weight_map=gone))
    lacking = {k: v for k, v in wmap.items() if k != "model.layers.1.mlp.up_proj.weight"}
    copy(sharded, "index_missing_tensor", index=dict(index, weight_map=lacking))
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"export-matches": export_matches, "random-model": random_model, "bad-files": bad_files}[cmd]
    sys.exit(fn(*args))
