# SPDX-License-Identifier: MIT
"""Hugging Face transformers as the reference for fsdp's models (GPT-2, Llama, Qwen3, Qwen3-MoE,
Mixtral): the pinned environment's python (scripts/pyenv.sh) runs it, offline. Every directory
is read by AutoModelForCausalLM.from_pretrained(dir, dtype=float64, output_loading_info=True),
and a missing, unexpected or mismatched key, or any warning transformers logs while loading, is
an error (the reason on stdout, where the test prints it; exit 1). The float64 experts run
transformers' "eager" experts path (its grouped GEMM takes no float64).
Several commands run in one process (one start-up of torch and transformers), separated by
"::", each printing its own lines in order:

  save ARCH DIR [--seed 1] [--fused 0] [--dtype float32|bfloat16] [--shard SIZE] [KEY=JSON ...]
      a random model of transformers' own (config from ARCH's config class with KEY=JSON fields,
      weights drawn from --seed) written by save_pretrained: transformers 5's default layout
      (one tensor per expert), --fused 1 its in-memory one (save_original_format=False:
      mlp.experts.gate_up_proj [E, 2F, C], mlp.experts.down_proj [E, C, F]), --shard a
      max_shard_size (several files and an index)
  eval-loss DIR VAL T S [EOS|mask]
      the float64 loss of fsdp's evaluation windows (window i = tokens[i(T+1) : i(T+1)+T+1],
      S of them; VAL a byte file or an llm.c .bin); with EOS: packed documents (a document
      starts at each window's start and after each EOS, and sees nothing before its start) and
      VAL.trained's mask, the mean over the scored targets; "mask": the EOS the mask records
  greedy DIR T N PROMPT
      N argmax tokens after PROMPT's bytes, each from the last T tokens
  moe-step HF0 HF1 DATA LR EPS
      fsdp's first AdamW step (no decay, no clipping; HF1, its export) from HF0 on DATA's one
      window: every weight moves by -LR g / (|g| + EPS), g the gradient of transformers' loss
      plus router_aux_loss_coef times its balance loss (output_router_logits); prints the
      losses and the worst relative update error per kind (router, expert, other), each expert
      of a fused tensor on its own"""
import json
import logging
import os
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402

torch.set_num_threads(1)
transformers.utils.logging.disable_progress_bar()
OUT = sys.stdout  # main() keeps it for the results alone


def emit(*args):
    print(*args, file=OUT, flush=True)


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage().splitlines()[0])


class LoadProblem(Exception):
    pass


def load(d, dtype=torch.float64):
    """The model in d, float64, in eval mode; exits 1 naming every key or warning problem."""
    log = _Collect()
    root = logging.getLogger("transformers")
    root.addHandler(log)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                d, dtype=dtype, output_loading_info=True, local_files_only=True,
                experts_implementation="eager")
    finally:
        root.removeHandler(log)
    bad = [f"{k}: {sorted(map(str, info[k]))}" for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                                         "error_msgs") if info.get(k)]
    bad += [f"transformers logged: {line}" for line in log.lines]
    bad += [f"warning: {w.message}" for w in caught if "transformers" in (w.filename or "")]
    if bad:
        raise LoadProblem(f"{d}: transformers {transformers.__version__} loads it with " + "; ".join(bad))
    return model.eval()


# ---- save -------------------------------------------------------------------------------------

def _init(model, seed):
    """Weights well away from a uniform prediction: matrices N(0, 0.08), q and k at twice that
    (sharp attention, so a rotary mistake moves the loss by far more than 1e-5), routers 0.3
    (no top-k choice near a tie), embeddings 0.5, norms 1 + N(0, 0.1) (q/k norms 0.3), biases
    N(0, 0.1). Drawn per name in sorted order from one generator: the seed decides all."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            leaf = name.rsplit(".", 2)
            if name.endswith("bias"):
                v = 0.1 * torch.randn(p.shape, generator=g, dtype=torch.float64)
            elif p.dim() == 1:
                std = 0.3 if ("q_norm" in name or "k_norm" in name) else 0.1
                v = 1.0 + std * torch.randn(p.shape, generator=g, dtype=torch.float64)
            else:
                std = 0.08
                if "embed_tokens" in name or "wte" in name:
                    std = 0.5
                elif "wpe" in name:
                    std = 0.1
                elif "q_proj" in name or "k_proj" in name:
                    std = 0.16
                elif leaf[-2:] == ["gate", "weight"]:
                    std = 0.3
                v = std * torch.randn(p.shape, generator=g, dtype=torch.float64)
            p.copy_(v.to(p.dtype))


def save(arch, d, *args):
    opts = {"--seed": "1", "--fused": "0", "--dtype": "float32", "--shard": ""}
    fields = {}
    args = list(args)
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            k, v = a.split("=", 1)
            fields[k] = json.loads(v)
    config = transformers.AutoConfig.for_model(arch, **fields)
    torch.manual_seed(int(opts["--seed"]))
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    _init(model, int(opts["--seed"]))
    model = model.to(getattr(torch, opts["--dtype"]))
    kw = {"save_original_format": opts["--fused"] != "1"}
    if opts["--shard"]:
        kw["max_shard_size"] = opts["--shard"]
    model.save_pretrained(d, **kw)
    return 0


# ---- evaluation -------------------------------------------------------------------------------

def _tokens(val):
    blob = open(val, "rb").read()
    magic = int.from_bytes(blob[:4], "little")
    if val.endswith(".bin") and magic in (20240520, 20240801):  # llm.c: uint16 or uint32 tokens
        n = int.from_bytes(blob[8:12], "little")
        t = np.frombuffer(blob[1024:], dtype=np.uint16 if magic == 20240520 else np.uint32)[:n]
        return torch.from_numpy(t.astype(np.int64))
    return torch.from_numpy(np.frombuffer(blob, dtype=np.uint8).astype(np.int64))


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids[None, :]).logits[0].double()


def eval_loss(d, val, T, S, eos=None):
    model = load(d)
    T, S = int(T), int(S)
    tokens = _tokens(val)
    n = min(S, len(tokens) // (T + 1))
    wins = [tokens[i * (T + 1):i * (T + 1) + T + 1] for i in range(n)]
    if eos is None:  # the mean over windows of each window's mean
        nll = [F.cross_entropy(_logits(model, w[:-1]), w[1:]) for w in wins]
        emit(repr(float(torch.stack(nll).mean())))
        return 0
    if eos == "mask":  # the document end fsdp-data recorded
        eos = int.from_bytes(open(val + ".trained", "rb").read()[24:28], "little", signed=True)
    eos = int(eos)
    trained = None
    if os.path.exists(val + ".trained"):  # src/data/trained_mask.hpp's format
        blob = open(val + ".trained", "rb").read()
        m = int.from_bytes(blob[8:16], "little")
        trained = np.unpackbits(np.frombuffer(blob[1024:], dtype=np.uint8), bitorder="little")[:m]
    total, count = 0.0, 0
    for i, w in enumerate(wins):
        inp = w[:-1]
        # Each document of the window on its own, positions from 0: what the packed run's
        # restarted positions and block-diagonal mask compute.
        starts = [0] + [t for t in range(1, T) if int(inp[t - 1]) == eos]
        for s, e in zip(starts, starts[1:] + [T]):
            nll = F.cross_entropy(_logits(model, inp[s:e]), w[s + 1:e + 1], reduction="none")
            scored = inp[s:e] != eos
            if trained is not None:
                at = i * (T + 1) + 1 + np.arange(s, e)
                scored &= torch.from_numpy(trained[at].astype(bool))
            total += float(nll[scored].sum())
            count += int(scored.sum())
    emit(repr(total / count))
    return 0


def greedy(d, T, n, prompt):
    model = load(d)
    out = list(prompt.encode())
    for _ in range(int(n)):
        z = _logits(model, torch.tensor(out[-int(T):]))[-1]
        out.append(int(torch.argmax(z)))  # the first maximum, as fsdp-sample takes
    emit(" ".join(map(str, out)))
    return 0


# ---- one MoE step -----------------------------------------------------------------------------

def _pieces(name, t):
    """(label, tensor) per expert for a fused expert tensor, else the tensor itself."""
    if name.endswith("experts.gate_up_proj"):
        half = t.shape[1] // 2
        return [(f"{name}[{e}].gate", t[e, :half]) for e in range(t.shape[0])] + \
               [(f"{name}[{e}].up", t[e, half:]) for e in range(t.shape[0])]
    if name.endswith("experts.down_proj"):
        return [(f"{name}[{e}]", t[e]) for e in range(t.shape[0])]
    return [(name, t)]


def moe_step(hf0, hf1, data, lr, eps):
    lr, eps = float(lr), float(eps)
    model = load(hf0)
    seq = torch.from_numpy(np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64))
    out = model(input_ids=seq[None, :-1], output_router_logits=True)
    ce = F.cross_entropy(out.logits[0], seq[1:])
    aux = out.aux_loss
    (ce + model.config.router_aux_loss_coef * aux).backward()
    after = dict(load(hf1).named_parameters())
    worst = {}
    for name, p in model.named_parameters():
        want = -lr * p.grad / (p.grad.abs() + eps)
        moved = after[name].detach() - p.detach()
        for label, (m, w) in zip([x for x, _ in _pieces(name, moved)],
                                 zip([y for _, y in _pieces(name, moved)], [y for _, y in _pieces(name, want)])):
            err = float((m - w).norm() / max(float(w.norm()), 1e-30))
            kind = "router" if name.endswith(".gate.weight") else "expert" if ".experts." in name else "other"
            if err > worst.get(kind, (0.0, ""))[0]:
                worst[kind] = (err, label)
    emit(f"loss {ce.item():.9g} aux {aux.item():.9g}")
    for kind, (err, label) in sorted(worst.items()):
        emit(f"{kind} {err:.3g} {label}")
    return 0


def main(argv):
    # The results alone on stdout: what libraries print there (DeepSpeed's accelerator note,
    # DeepSpeed being imported by save_pretrained) goes to stderr.
    global OUT
    OUT, sys.stdout = sys.stdout, sys.stderr
    commands, rc = [[]], 0
    for a in argv:
        commands.append([]) if a == "::" else commands[-1].append(a)
    for cmd, *rest in commands:
        fn = {"save": save, "eval-loss": eval_loss, "greedy": greedy, "moe-step": moe_step}[cmd]
        try:
            rc |= fn(*rest)
        except LoadProblem as e:
            emit(e)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
