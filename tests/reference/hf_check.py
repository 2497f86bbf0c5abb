#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The file side of tests/e2e/hf_weights.sh (json + numpy, HDF5 through h5dump; no PyTorch: the
model's own computation is transformers', tests/reference/hf_transformers.py):
  export-matches DIR CKPT      DIR/model.safetensors holds CKPT's /model bit for bit (or its
                               round-to-nearest-even bf16), with a config.json GPT2Config
  random-model DIR             random GPT-2 weights as safetensors (F32, BF16) and llm.c files
  bad-files DIR OUT            damaged copies of DIR/model.safetensors and an llm.c file
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmc_np  # noqa: E402
import safetensors_np  # noqa: E402


def h5_dataset(ckpt, name):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "x.bin")
        subprocess.run(["h5dump", "-d", name, "-b", "LE", "-o", out, ckpt], check=True,
                       stdout=subprocess.DEVNULL)
        return np.fromfile(out, dtype="<f4")


def export_matches(d, ckpt):
    tensors, header = safetensors_np.read(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    bad = []
    for key, want in [("model_type", "gpt2"), ("activation_function", "gelu_new"),
                      ("tie_word_embeddings", True), ("layer_norm_epsilon", 1e-5)]:
        if cfg.get(key) != want:
            bad.append(f"config.json {key} = {cfg.get(key)!r}, not {want!r}")
    L = cfg["n_layer"]
    names = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"] + [
        f"h.{l}.{s}" for l in range(L) for s, _ in llmc_np.PER_LAYER]
    if sorted(names) != sorted(tensors):
        bad.append(f"tensor names {sorted(set(tensors) ^ set(names))} differ from GPT-2's")
    if header.get("__metadata__", {}).get("format") != "pt":
        bad.append("__metadata__.format is not 'pt'")
    for name in names:
        if name not in tensors:
            continue
        dtype, got = tensors[name]
        ref = h5_dataset(ckpt, "/model/" + name)
        if got.size != ref.size:
            bad.append(f"{name}: {got.size} elements, the checkpoint has {ref.size}")
            continue
        want = ref if dtype == "F32" else (safetensors_np.to_bf16_bits(ref).astype(np.uint32) << 16).view(np.float32)
        if not np.array_equal(got.ravel().view(np.uint32), want.view(np.uint32)):
            bad.append(f"{name}: {int((got.ravel() != want).sum())} elements differ")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(names)} tensors compared, {len(bad)} problems")
    return 1 if bad else 0


def random_model(d, layers=2, embd=64, heads=4, vocab=256, positions=64, seed=5):
    rng = np.random.default_rng(seed)
    C = embd
    w = {"wte.weight": rng.normal(0, 0.3, (vocab, C)), "wpe.weight": rng.normal(0, 0.1, (positions, C))}
    shapes = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (C, 3 * C),
              "attn.c_attn.bias": (3 * C,), "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,),
              "ln_2.weight": (C,), "ln_2.bias": (C,), "mlp.c_fc.weight": (C, 4 * C),
              "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (4 * C, C), "mlp.c_proj.bias": (C,)}
    for l in range(layers):
        for s, shape in shapes.items():
            base = 1.0 if s.endswith("ln_1.weight") or s.endswith("ln_2.weight") else 0.0
            w[f"h.{l}.{s}"] = base + rng.normal(0, 0.1, shape)
    w["ln_f.weight"] = 1.0 + rng.normal(0, 0.1, (C,))
    w["ln_f.bias"] = rng.normal(0, 0.1, (C,))
    w = {k: v.astype(np.float32) for k, v in w.items()}
    cfg = {"model_type": "gpt2", "n_layer": layers, "n_head": heads, "n_embd": C,
           "vocab_size": vocab, "n_positions": positions, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
           # GPT2Config's default 50256 is outside this vocabulary (transformers warns).
           "bos_token_id": vocab - 1, "eos_token_id": vocab - 1}
    for sub, dtype in [("hf", "F32"), ("hf_bf16", "BF16")]:
        os.makedirs(os.path.join(d, sub), exist_ok=True)
        # HF's own files name the tensors with the "transformer." prefix: the F32 copy does.
        named = {("transformer." + k if dtype == "F32" else k): v for k, v in w.items()}
        safetensors_np.write(os.path.join(d, sub, "model.safetensors"), named, dtype, {"format": "pt"})
        with open(os.path.join(d, sub, "config.json"), "w") as f:
            json.dump(cfg, f)
    llmc_np.write(os.path.join(d, "model.bin"), w, layers, heads, vocab + 64)
    llmc_np.write(os.path.join(d, "model_bf16.bin"), w, layers, heads, vocab + 64, bf16=True)
    return 0


def bad_files(d, out):
    """One damaged file per case, named after the case."""
    os.makedirs(out, exist_ok=True)
    good = open(os.path.join(d, "model.safetensors"), "rb").read()
    n = int.from_bytes(good[:8], "little")
    header = json.loads(good[8:8 + n])
    data = good[8 + n:]

    def put(name, blob):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "model.safetensors"), "wb") as f:
            f.write(blob)

    def with_header(h, body=data):
        text = json.dumps(h).encode()
        return len(text).to_bytes(8, "little") + text + body

    first = next(k for k in header if k != "__metadata__")
    put("truncated", good[: len(good) - 1000])
    put("header_past_end", (len(good)).to_bytes(8, "little") + good[8:])
    put("not_json", with_header({})[:8] + b"{" * 2 + good[10:])
    h = json.loads(json.dumps(header)); h[first]["data_offsets"] = [0, len(data) + 4]
    put("offsets_past_end", with_header(h))
    h = json.loads(json.dumps(header)); h[first]["shape"] = [h[first]["shape"][0] + 1] + h[first]["shape"][1:]
    put("shape_lies", with_header(h))
    # A well-formed file that lacks a tensor: its bytes go too (the tensors must tile the data).
    h = json.loads(json.dumps(header))
    b, e = h.pop(max(k for k in h if k.endswith("mlp.c_fc.weight")))["data_offsets"]
    for k, v in h.items():
        if k != "__metadata__" and v["data_offsets"][0] >= e:
            v["data_offsets"] = [v["data_offsets"][0] - (e - b), v["data_offsets"][1] - (e - b)]
    put("missing_tensor", with_header(h, data[:b] + data[e:]))
    h = json.loads(json.dumps(header)); h[first]["dtype"] = "F64"
    b, e = h[first]["data_offsets"]; h[first]["shape"] = [(e - b) // 8]
    put("wrong_dtype", with_header(h))
    h = json.loads(json.dumps(header)); h["transformer.h.0.ln_1.bias"]["shape"] = [8, 8]
    put("tensor_shape", with_header(h))
    llmc = open(os.path.join(os.path.dirname(d.rstrip("/")), "model.bin"), "rb").read()
    with open(os.path.join(out, "llmc_truncated.bin"), "wb") as f:
        f.write(llmc[:-4])
    with open(os.path.join(out, "llmc_version.bin"), "wb") as f:
        f.write(llmc[:4] + (4).to_bytes(4, "little") + llmc[8:])
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"export-matches": export_matches, "random-model": random_model, "bad-files": bad_files}[cmd]
    sys.exit(fn(*args))
