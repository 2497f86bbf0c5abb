# SPDX-License-Identifier: MIT
"""Hugging Face PEFT as the reference for fsdp's LoRA (docs/lora.md): the pinned environment's
python (scripts/pyenv.sh) runs it, offline, in float64. Commands, several in one process
separated by "::", each printing its lines in order (exit 1 on a failed check):

  eval-loss BASE ADAPTER VAL T S
      PeftModel.from_pretrained(the transformers model in BASE, ADAPTER): every key of the
      adapter file loaded (none missing or unexpected, each value the file's), then the float64
      loss of fsdp's evaluation windows (hf_transformers.py eval-loss's)
  grad-signs BASE ADAPTER1 ADAPTER2 DATA
      fsdp's step from ADAPTER1 to ADAPTER2 (AdamW with beta1 = 0, no decay, no clipping: each
      element moves by -lr g / (sqrt(v) + eps), against its gradient) on DATA's one window:
      the sign of every adapter update against PEFT's autograd gradient at ADAPTER1, for the
      elements whose gradient is not within float32 rounding of 0
  make-adapter BASE OUT R ALPHA TARGETS
      PEFT's own adapter on BASE (get_peft_model, LoraConfig(r=R, lora_alpha=ALPHA,
      target_modules=TARGETS split at commas, lora_dropout=0.05)), every A and B drawn N(0, 0.05)
      from seed 5 so the adapter moves the loss, written by save_pretrained to OUT
  merged BASE ADAPTER MERGED
      fsdp-ckpt export --hf --merge's MERGED (loaded by transformers with no key problem)
      against PEFT's merge_and_unload of BASE with ADAPTER in float64: every weight within
      float32 rounding (relative 2^-23 of the element, absolute 2^-23 of the tensor's largest)"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_transformers as hft  # noqa: E402  (the loader and the windows, shared)
import peft  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file  # noqa: E402


def emit(*args):
    print(*args, flush=True)


def adapted(base, adapter, trainable=False):
    """The PEFT model of BASE with ADAPTER, float64; raises naming any key that did not load."""
    model = peft.PeftModel.from_pretrained(hft.load(base), adapter, is_trainable=trainable).double()
    model.train(False)
    stored = load_file(os.path.join(adapter, "adapter_model.safetensors"))
    have = peft.get_peft_model_state_dict(model)
    missing, unexpected = sorted(set(have) - set(stored)), sorted(set(stored) - set(have))
    if missing or unexpected:
        raise hft.LoadProblem(f"{adapter}: PEFT {peft.__version__}: missing {missing[:3]}, unexpected {unexpected[:3]}")
    for k, v in stored.items():
        if not torch.equal(have[k].double(), v.double()):
            raise hft.LoadProblem(f"{adapter}: {k} did not load as stored")
    return model, stored


def eval_loss(base, adapter, val, T, S):
    model, stored = adapted(base, adapter)
    T, S = int(T), int(S)
    tokens = hft._tokens(val)
    n = min(S, len(tokens) // (T + 1))
    wins = [tokens[i * (T + 1):i * (T + 1) + T + 1] for i in range(n)]
    with torch.no_grad():
        nll = [F.cross_entropy(model(input_ids=w[None, :-1]).logits[0].double(), w[1:]) for w in wins]
    emit(f"{len(stored)} adapter tensors loaded by PEFT {peft.__version__}")
    emit(repr(float(torch.stack(nll).mean())))
    return 0


def grad_signs(base, adapter1, adapter2, data):
    model, a = adapted(base, adapter1, trainable=True)
    b = load_file(os.path.join(adapter2, "adapter_model.safetensors"))
    w = hft._tokens(data)
    loss = F.cross_entropy(model(input_ids=w[None, :-1]).logits[0], w[1:])
    loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        if "lora_" in name:
            grads[name.replace(".default", "")] = p.grad.detach()
    checked, wrong, worst = 0, 0, ""
    for k in sorted(a):
        g, d = grads[k].flatten(), (b[k].double() - a[k].double()).flatten()
        # A sign is decided where |g| is well above float32's rounding of the sums behind it.
        sure = g.abs() > 1e-4 * g.abs().max()
        bad = sure & (torch.sign(d) != -torch.sign(g))
        checked += int(sure.sum())
        if int(bad.sum()) and not worst:
            worst = f"{k}: {int(bad.sum())} of {int(sure.sum())}"
        wrong += int(bad.sum())
    emit(f"loss {float(loss):.6f}; {checked} adapter elements checked over {len(a)} tensors, {wrong} against the gradient {worst}")
    return 0 if wrong == 0 and checked > 0 else 1


def merged(base, adapter, merged_dir):
    model, _ = adapted(base, adapter)
    ref = dict(model.merge_and_unload().named_parameters())
    got = dict(hft.load(merged_dir).named_parameters())
    if set(ref) != set(got):
        raise hft.LoadProblem(f"{merged_dir}: parameters {sorted(set(ref) ^ set(got))[:3]} differ from PEFT's merge")
    worst, where = 0.0, ""
    for k in sorted(ref):
        r, g = ref[k].detach().double(), got[k].detach().double()
        bound = 2.0 ** -23 * (r.abs() + r.abs().max())
        excess = float(((g - r).abs() / bound).max())
        if excess > worst:
            worst, where = excess, k
    emit(f"merged weights against PEFT's merge_and_unload: worst error {worst:.3f} of float32 rounding ({where})")
    return 0 if worst <= 1.0 else 1


def make_adapter(base, out, r, alpha, targets):
    model = hft.load(base)
    cfg = peft.LoraConfig(r=int(r), lora_alpha=float(alpha), target_modules=targets.split(","),
                          lora_dropout=0.05, task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, cfg)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.05)
    model.to(torch.float32).save_pretrained(out)
    emit(f"PEFT {peft.__version__} adapter: r {r}, alpha {alpha}, {targets}")
    return 0


def main(argv):
    commands, rc = [[]], 0
    for x in argv:
        commands.append([]) if x == "::" else commands[-1].append(x)
    for cmd, *rest in commands:
        fn = {"eval-loss": eval_loss, "grad-signs": grad_signs, "merged": merged,
              "make-adapter": make_adapter}[cmd]
        try:
            rc |= fn(*rest)
        except hft.LoadProblem as e:
            emit(e)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
