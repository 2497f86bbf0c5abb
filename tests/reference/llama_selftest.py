#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks of the Llama reference itself (seconds, no fsdp binaries):
  1. llama_torch64.logits against a plain-loop Llama (scalar RMSNorm, rotary pair by pair with
     the Llama 3.1 band chosen per frequency by if/elif, head j reading kv head j // (H/KV)),
     for default and llama3 rope, GQA and MHA, tied and untied;
  2. llama_check random-model's variants: hf, hf_sharded, hf_ropeparams (and an F16 copy of
     weights exactly representable in F16) give the identical eval loss; hf_bf16 a close,
     different one;
  3. bad-files' copies are each refused by the reference loader;
  4. export-matches against a fake checkpoint made by h5import: passes for the F32 and BF16
     copies, fails for a one-bit change and for a wrong pinned config value.
Prints one line per check; exit status 1 if any fails."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_check  # noqa: E402
import llama_torch64 as ref  # noqa: E402

FAILED = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        FAILED.append(what)


def loop_logits(w, hp, tokens):
    """One sequence, every sum written out: a second derivation of the same equations."""
    H, KV, D, eps, T = hp["H"], hp["KV"], hp["D"], hp["eps"], len(tokens)
    W = {k: v.numpy() for k, v in w.items()}

    def freq(i):
        f = hp["theta"] ** (-2.0 * i / D)
        if hp["scaling"] is None:
            return f
        factor, low, high, orig = hp["scaling"]
        wl = 2 * math.pi / f
        if wl < orig / high:
            return f
        if wl > orig / low:
            return f / factor
        s = (orig / wl - low) / (high - low)
        return (1 - s) * f / factor + s * f

    def norm(x, g):
        ms = sum(v * v for v in x) / len(x)
        return [x[i] / math.sqrt(ms + eps) * g[i] for i in range(len(x))]

    def matvec(M, x):
        return [sum(M[r][c] * x[c] for c in range(len(x))) for r in range(len(M))]

    def rope(vec, pos):  # dimension i pairs with i + D/2
        out = list(vec)
        for i in range(D // 2):
            a, b = vec[i], vec[i + D // 2]
            c, s = math.cos(pos * freq(i)), math.sin(pos * freq(i))
            out[i], out[i + D // 2] = a * c - b * s, b * c + a * s
        return out

    xs = [list(W["model.embed_tokens.weight"][t]) for t in tokens]
    for l in range(hp["L"]):
        p = f"model.layers.{l}."
        hs = [norm(x, W[p + "input_layernorm.weight"]) for x in xs]
        q = [matvec(W[p + "self_attn.q_proj.weight"], h) for h in hs]
        k = [matvec(W[p + "self_attn.k_proj.weight"], h) for h in hs]
        v = [matvec(W[p + "self_attn.v_proj.weight"], h) for h in hs]
        ys = []
        for t in range(T):
            y = []
            for j in range(H):
                g = j // (H // KV)
                qj = rope(q[t][j * D:(j + 1) * D], t)
                sc = [sum(a * b for a, b in zip(qj, rope(k[u][g * D:(g + 1) * D], u))) / math.sqrt(D)
                      for u in range(t + 1)]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                y += [sum(e[u] * v[u][g * D + i] for u in range(t + 1)) / sum(e) for i in range(D)]
            ys.append(y)
        xs = [[a + b for a, b in zip(x, matvec(W[p + "self_attn.o_proj.weight"], y))] for x, y in zip(xs, ys)]
        for t in range(T):
            h = norm(xs[t], W[p + "post_attention_layernorm.weight"])
            gate, up = matvec(W[p + "mlp.gate_proj.weight"], h), matvec(W[p + "mlp.up_proj.weight"], h)
            act = [a / (1 + math.exp(-a)) * b for a, b in zip(gate, up)]
            xs[t] = [a + b for a, b in zip(xs[t], matvec(W[p + "mlp.down_proj.weight"], act))]
    head = W["model.embed_tokens.weight" if hp["tied"] else "lm_head.weight"]
    return np.array([matvec(head, norm(x, W["model.norm.weight"])) for x in xs])


def loss(d, val, T=64, S=12):
    w, hp = ref.load(d)
    tokens = np.frombuffer(open(val, "rb").read(), dtype=np.uint8).astype(np.int64)
    return ref.eval_loss(w, hp, tokens, T, S)


def write_f16_copy(src, dst):
    """src's weights rounded to float16, stored as F16; returns them widened (for an F32 twin)."""
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), dst)
    tensors = {n: a.astype(np.float16) for n, (_, a) in ref.read_safetensors(os.path.join(src, "model.safetensors"))[0].items()}
    header, at, chunks = {}, 0, []
    for n, a in tensors.items():
        raw = a.astype("<f2").tobytes()
        header[n] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(chunks))
    return {n: a.astype(np.float32) for n, a in tensors.items()}


def fake_checkpoint(hf_dir, path, flip=None):
    """An HDF5 file whose /model holds hf_dir's F32 tensors (h5import: no h5py here)."""
    tensors = ref.read_weights(hf_dir)
    work = tempfile.mkdtemp()
    if os.path.exists(path):
        os.remove(path)  # h5import adds to an existing file
    argv = ["h5import"]
    for i, (n, (_, a)) in enumerate(sorted(tensors.items())):
        a = a.copy()
        if n == flip:
            a.ravel().view(np.uint32)[3] ^= 1  # one low mantissa bit
        a.astype("<f4").tofile(os.path.join(work, f"{i}.bin"))
        with open(os.path.join(work, f"{i}.conf"), "w") as f:
            f.write(f"PATH /model/{n}\nINPUT-CLASS FP\nINPUT-SIZE 32\nINPUT-BYTE-ORDER LE\n"
                    f"RANK {a.ndim}\nDIMENSION-SIZES {' '.join(map(str, a.shape))}\n"
                    "OUTPUT-CLASS FP\nOUTPUT-SIZE 32\nOUTPUT-ARCHITECTURE IEEE\nOUTPUT-BYTE-ORDER LE\n")
        argv += [os.path.join(work, f"{i}.bin"), "-c", os.path.join(work, f"{i}.conf")]
    subprocess.run(argv + ["-o", path], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(work)


def main():
    torch.manual_seed(0)
    # 1. Tensor code against loops; heads of dimension 8 so all three llama3 bands are reached.
    # theta 100 gives wavelengths 6.3, 19.9, 62.8, 199: (8, 1, 4, 32) keeps the first (< 8),
    # blends the second (8..32) and slows the rest.
    three_bands = (8.0, 1.0, 4.0, 32.0)
    for H, KV, tied, scaling in [(4, 2, False, three_bands), (4, 4, True, None),
                                 (4, 1, False, (4.0, 1.0, 2.0, 8.0))]:
        hp = {"C": 32, "H": H, "KV": KV, "D": 8, "F": 24, "L": 2, "V": 11, "eps": 1e-5,
              "theta": 100.0, "scaling": scaling, "tied": tied}
        w = {n: (1.0 if "norm" in n else 0.0) + 0.3 * torch.randn(s, dtype=torch.float64)
             for n, s in ref.expected_shapes(hp).items()}
        tokens = [3, 1, 4, 1, 5, 9, 2]
        got = ref.logits(w, hp, [tokens])[0].numpy()
        err = np.abs(got - loop_logits(w, hp, tokens)).max()
        check(err < 1e-12, f"logits vs loops, H={H} KV={KV} tied={tied} scaling={scaling}: max |diff| {err:.1e}")
    factor, low, high, orig = three_bands
    wl = 2 * math.pi / ref.inv_freq(8, 100.0, None)
    bands = {("kept" if x < orig / high else "slowed" if x > orig / low else "blended") for x in wl.tolist()}
    check(bands == {"kept", "blended", "slowed"}, f"the loop test's llama3 case reaches bands {sorted(bands)}")

    d = tempfile.mkdtemp()
    try:
        # 2. The variants' eval losses.
        llama_check.random_model(d)
        val = os.path.join(d, "val.txt")
        rng = np.random.default_rng(1)
        with open(val, "wb") as f:  # text-like bytes, as hf_weights.sh's val.txt
            f.write(bytes(rng.choice(list(b"abcdefgh ijklmnop"), 64 * 65)))
        L = {v: loss(os.path.join(d, v), val) for v in ("hf", "hf_sharded", "hf_ropeparams", "hf_bf16")}
        for v, x in L.items():
            print(f"      eval-loss {v:14s} {x!r}")
        check(L["hf"] == L["hf_sharded"] == L["hf_ropeparams"], "hf, hf_sharded, hf_ropeparams: identical losses")
        rel = abs(L["hf_bf16"] - L["hf"]) / L["hf"]
        check(0 < rel < 1e-2, f"hf_bf16 close to hf but not equal (relative {rel:.1e})")
        check(abs(L["hf"] - math.log(256)) > 0.1, f"the loss {L['hf']:.4f} is not log V = {math.log(256):.4f}")
        wl = 2 * math.pi / ref.inv_freq(16, 500000.0, None)
        bands = {("kept" if x < 64 / 8 else "slowed" if x > 64 / 1 else "blended") for x in wl.tolist()}
        check(bands == {"kept", "blended", "slowed"}, f"random-model's default rope reaches bands {sorted(bands)}")
        # F16: compare with an F32 file of the very same (F16-representable) values.
        w16 = write_f16_copy(os.path.join(d, "hf"), os.path.join(d, "hf_f16"))
        os.makedirs(os.path.join(d, "hf_f16as32"))
        shutil.copy(os.path.join(d, "hf", "config.json"), os.path.join(d, "hf_f16as32"))
        llama_check.safetensors_np.write(os.path.join(d, "hf_f16as32", "model.safetensors"), w16)
        a, b = loss(os.path.join(d, "hf_f16"), val), loss(os.path.join(d, "hf_f16as32"), val)
        check(a == b, f"F16 file and its F32 twin: {a!r} == {b!r}")
        # Tied, and rope without scaling, through the CLI's options.
        for extra in (["--tied", "1"], ["--scaling", "none"]):
            e = os.path.join(d, "x" + extra[1])
            llama_check.random_model(e, *extra)
            cfg = json.load(open(os.path.join(e, "hf_ropeparams", "config.json")))
            la = loss(os.path.join(e, "hf"), val)
            lb = loss(os.path.join(e, "hf_ropeparams"), val)
            lc = loss(os.path.join(e, "hf_sharded"), val)
            check(la == lb == lc and la != L["hf"], f"random-model {' '.join(extra)}: {la!r} in all three"
                  f" (rope_parameters {cfg['rope_parameters']})")
        names = set(ref.read_weights(os.path.join(d, "xnone", "hf")))
        check("lm_head.weight" in names and "lm_head.weight" not in ref.read_weights(os.path.join(d, "x1", "hf")),
              "lm_head.weight present untied, absent tied")
        w, hp = ref.load(os.path.join(d, "hf"))
        ids = ref.greedy(w, hp, list(b"The "), 80, 64)
        check(len(ids) == 84 and all(0 <= i < 256 for i in ids), f"greedy 80 past a 64 window: {ids[:12]} ...")

        # 3. Damaged copies: each refused by the reference loader.
        out = os.path.join(d, "bad")
        llama_check.bad_files(d, out)
        for case in sorted(os.listdir(out)):
            try:
                ref.load(os.path.join(out, case))
                check(False, f"bad-files {case}: loaded")
            except (KeyError, ValueError, FileNotFoundError) as e:
                check(True, f"bad-files {case}: {type(e).__name__}: {e}"[:150])

        # 4. export-matches on fake checkpoints.
        ck = os.path.join(d, "ck.h5")
        fake_checkpoint(os.path.join(d, "hf"), ck)
        run = lambda *a: subprocess.run([sys.executable, os.path.join(HERE, "llama_check.py"), *a],
                                        capture_output=True, text=True)
        for args, want in [((os.path.join(d, "hf"), ck), 0), ((os.path.join(d, "hf_sharded"), ck), 0),
                           ((os.path.join(d, "hf_bf16"), ck, "--dtype", "bf16"), 0),
                           ((os.path.join(d, "hf"), ck, "--dtype", "bf16"), 1),
                           ((os.path.join(d, "hf"), ck, "rope_theta=500000.0", "max_position_embeddings=64"), 0),
                           ((os.path.join(d, "hf"), ck, "rope_theta=10000"), 1),
                           ((os.path.join(d, "hf_ropeparams"), ck), 1)]:
            r = run("export-matches", *args)
            last = (r.stdout + r.stderr).strip().splitlines()
            check(r.returncode == want, f"export-matches {' '.join(os.path.basename(x) for x in args)}: "
                  f"rc {r.returncode}, {last[0] if want else last[-1]}")
        fake_checkpoint(os.path.join(d, "hf"), ck, flip="model.layers.1.mlp.up_proj.weight")
        r = run("export-matches", os.path.join(d, "hf"), ck)
        check(r.returncode == 1 and "up_proj.weight: 1 elements differ" in r.stdout, f"one flipped bit: {r.stdout.splitlines()[0]}")
    finally:
        shutil.rmtree(d)
    print(f"{len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
