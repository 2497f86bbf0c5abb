#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The PyTorch yardstick for the benchmark targets: the same GPT-2 (pre-LN blocks, tanh GELU,
tied LM head, no dropout) or, with --arch llama, the same Llama (RMSNorm, rotary positions,
SwiGLU, grouped-query attention, no biases), or with --arch moe that Llama with a mixture of
--experts SwiGLU experts of --ffn in every layer (Mixtral's sparse block: softmax router, top
--topk renormalised, Hugging Face's loop over the experts with index_add), trained with AdamW on random tokens, one thread per
process, eager mode, as Debian's PyTorch 1.13 runs it. Prints the median tokens/s over the
timed steps.

  /usr/bin/python3 jobscripts/pytorch_reference.py --layers 4 --embd 256 --heads 4 --vocab 256 \
      --block 128 --batch 8                      # one process
  /usr/bin/python3 jobscripts/pytorch_reference.py ... --ddp 2   # DDP over gloo, `batch` per process
  python3 jobscripts/pytorch_reference.py --layers 12 --embd 768 --heads 12 --vocab 50257 \
      --block 1024 --batch 16 --device cuda --precision bf16   # a GPU, bf16 autocast

--precision bf16 runs the forward under torch.autocast (bf16 GEMMs, fp32 master weights and
optimizer), as a PyTorch user mixes precision. On a GPU, fp32 GEMMs stay fp32 (no TF32), as
fsdp's cuBLAS calls.
"""
import argparse
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c, heads, block):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(c)
        self.c_attn = nn.Linear(c, 3 * c)
        self.attn_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.mlp_proj = nn.Linear(4 * c, c)
        # A buffer, so that .to(device) moves it; constant, so neither saved nor broadcast by DDP.
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).bool(), persistent=False)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return self.attn_proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, c, heads, vocab, block):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(block, c)
        self.h = nn.ModuleList(Block(c, heads, block) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)
        # GPT-2's initialisation, as fsdp's: N(0, 0.02), the residual projections scaled by
        # 1/sqrt(2L), zero biases. (PyTorch's defaults, N(0, 1) embeddings under a tied head,
        # saturate the softmax and fill the backward with denormals: 10x slower on x86.)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class LlamaBlock(nn.Module):
    def __init__(self, c, heads, kv, ffn, block):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv, c // heads
        self.q_proj = nn.Linear(c, c, bias=False)
        self.k_proj = nn.Linear(c, kv * self.d, bias=False)
        self.v_proj = nn.Linear(c, kv * self.d, bias=False)
        self.o_proj = nn.Linear(c, c, bias=False)
        self.gate_proj = nn.Linear(c, ffn, bias=False)
        self.up_proj = nn.Linear(c, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, c, bias=False)
        self.norm1 = nn.Parameter(torch.ones(c))
        self.norm2 = nn.Parameter(torch.ones(c))
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).bool(), persistent=False)

    @staticmethod
    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    @staticmethod
    def rotate(x, cos, sin):  # Hugging Face's convention: the halves rotate as pairs
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def attention(self, x, cos, sin):
        b, t, c = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        # Grouped-query heads as Hugging Face's eager Llama runs them: K and V repeated per group.
        k = k.repeat_interleave(self.heads // self.kv, dim=1)
        v = v.repeat_interleave(self.heads // self.kv, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x, cos, sin):
        x = x + self.attention(self.rms(x, self.norm1), cos, sin)
        h = self.rms(x, self.norm2)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class MoeBlock(LlamaBlock):
    """Llama's block with Hugging Face MixtralSparseMoeBlock's MLP: a router [E, C], softmax,
    top-k renormalised, then for each expert with tokens its SwiGLU on them, weighted and added
    back with index_add_ (transformers' loop)."""
    def __init__(self, c, heads, kv, ffn, block, experts, topk):
        super().__init__(c, heads, kv, ffn, block)
        del self.gate_proj, self.up_proj, self.down_proj
        self.topk = topk
        self.gate = nn.Linear(c, experts, bias=False)
        self.w1 = nn.ModuleList(nn.Linear(c, ffn, bias=False) for _ in range(experts))
        self.w3 = nn.ModuleList(nn.Linear(c, ffn, bias=False) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(ffn, c, bias=False) for _ in range(experts))

    def moe(self, h):
        b, t, c = h.shape
        flat = h.view(-1, c)
        weights = F.softmax(self.gate(flat), dim=1, dtype=torch.float)
        weights, chosen = torch.topk(weights, self.topk, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(h.dtype)
        out = torch.zeros_like(flat)
        mask = F.one_hot(chosen, num_classes=len(self.w1)).permute(2, 1, 0)  # [E, k, N]
        for e in range(len(self.w1)):
            slot, tok = torch.where(mask[e])
            if tok.numel() == 0:
                continue
            z = flat[tok]
            y = self.w2[e](F.silu(self.w1[e](z)) * self.w3[e](z)) * weights[tok, slot, None]
            out.index_add_(0, tok, y.to(h.dtype))
        return out.view(b, t, c)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.rms(x, self.norm1), cos, sin)
        return x + self.moe(self.rms(x, self.norm2))


class Llama(nn.Module):
    def __init__(self, layers, c, heads, kv, ffn, vocab, block, theta=500000.0, experts=0, topk=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, c)
        if experts:
            self.layers = nn.ModuleList(MoeBlock(c, heads, kv, ffn, block, experts, topk) for _ in range(layers))
        else:
            self.layers = nn.ModuleList(LlamaBlock(c, heads, kv, ffn, block) for _ in range(layers))
        self.norm = nn.Parameter(torch.ones(c))
        d = c // heads
        inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.arange(block, dtype=torch.float64)[:, None] * inv[None, :]
        self.register_buffer("cos", torch.cat((ang.cos(), ang.cos()), -1).float(), persistent=False)
        self.register_buffer("sin", torch.cat((ang.sin(), ang.sin()), -1).float(), persistent=False)
        # fsdp's Llama initialisation: N(0, 0.02), residual projections by 1/sqrt(2L).
        for name, p in self.named_parameters():
            if p.dim() == 2:
                resid = ("o_proj.weight", "down_proj.weight") + ((".weight",) if ".w2." in name else ())
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(resid) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.embed(idx)
        for blk in self.layers:
            x = blk(x, self.cos[:t], self.sin[:t])
        logits = LlamaBlock.rms(x, self.norm) @ self.embed.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def run(rank, args):
    cuda = args.device == "cuda"
    if not cuda:
        torch.set_num_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1234 + rank)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    ddp = args.ddp > 1
    if ddp:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        torch.distributed.init_process_group("gloo", rank=rank, world_size=args.ddp)
    if args.arch in ("llama", "moe"):
        model = Llama(args.layers, args.embd, args.heads, args.kv or args.heads, args.ffn,
                      args.vocab, args.block, experts=args.experts if args.arch == "moe" else 0,
                      topk=args.topk).to(dev)
    else:
        model = GPT(args.layers, args.embd, args.heads, args.vocab, args.block).to(dev)
    if ddp:
        # DDP broadcasts every buffer from rank 0 when it wraps the model, and gloo has no bool
        # type ("Invalid scalar type"): the causal masks are the same constant on every rank,
        # so they are left out of DDP's synchronisation.
        nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            model, [name for name, _ in model.named_buffers()])
        model = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rates = []
    for step in range(args.steps):
        idx = torch.randint(args.vocab, (args.batch, args.block), device=dev)
        tgt = torch.randint(args.vocab, (args.batch, args.block), device=dev)
        if ddp:
            torch.distributed.barrier()
        sync()
        t0 = time.perf_counter()
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16,
                            enabled=args.precision == "bf16"):
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        dt = time.perf_counter() - t0
        if step > 0:  # the first step warms the allocator and caches
            rates.append(args.batch * args.block * max(1, args.ddp) / dt)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"pytorch {torch.__version__}: {params} parameters, {max(1, args.ddp)} process(es), "
              f"batch {args.batch} per process, {args.device} {args.precision}, "
              f"median {statistics.median(rates):.0f} tok/s")
    if ddp:
        torch.distributed.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", choices=("gpt2", "llama", "moe"), default="gpt2")
    p.add_argument("--experts", type=int, default=8, help="moe: experts per layer")
    p.add_argument("--topk", type=int, default=2, help="moe: experts per token")
    p.add_argument("--kv", type=int, default=0, help="llama: key/value heads (0 = heads)")
    p.add_argument("--ffn", type=int, default=0, help="llama: SwiGLU width")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--embd", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--batch", type=int, default=8, help="sequences per process per step")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--ddp", type=int, default=1, help="processes (gloo DDP when > 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    args = p.parse_args()
    if args.ddp > 1:
        torch.multiprocessing.spawn(run, args=(args,), nprocs=args.ddp)
    else:
        run(0, args)


if __name__ == "__main__":
    main()
