#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The peers a user would run instead of fsdp, timed on the same shapes: PyTorch 2 eager or
`torch.compile` (one process, fused AdamW), FSDP2 `fully_shard` over gloo and DeepSpeed ZeRO-3
with its fused CPU Adam (two or more processes under torchrun), and transformers' own
Qwen3-MoE. The dense models are jobscripts/pytorch_reference.py's GPT-2 and Llama (the same
initialisation as fsdp's) with PyTorch 2's `scaled_dot_product_attention`, as a PyTorch 2 user
writes attention. Random tokens, AdamW (lr 1e-3, weight decay 0.1), gradients clipped to 1.0 as
fsdp's decks do. Prints the median tokens/s over the timed steps (all processes' tokens).

  python jobscripts/torch_peer.py --arch gpt2 --block 64 --batch 4 --mode compile --precision bf16
  torchrun --nproc_per_node 2 jobscripts/torch_peer.py --dist fsdp2 --batch 4 ...  # 4 per rank
  torchrun --nproc_per_node 2 jobscripts/torch_peer.py --dist deepspeed ...
  python jobscripts/torch_peer.py --arch qwen3moe ...     # transformers' Qwen3MoeForCausalLM
  python jobscripts/torch_peer.py --gemm-info              # which GEMM libraries torch uses here

--precision bf16: one process runs the forward under torch.autocast (fp32 master weights);
FSDP2 runs MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32); DeepSpeed its "bf16"
config (bf16 weights, fp32 master copy in the optimizer). --profile prints torch.profiler's
top operators over two steps after the timed ones.
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def gemm_info():
    """One line per GEMM path: the library and version torch links, the ISA oneDNN picks for
    bf16, and a measured rate for a 124M-sized GEMM (1024 x 768 x 3072) in each precision.
    MKL does not name its code path; the rate shows what it reaches."""
    code = r"""
import time, torch
torch.set_num_threads(1)
a = torch.randn(1024, 768); w = torch.randn(3072, 768)
lin = torch.nn.functional.linear
for name, dt in (("fp32", None), ("bf16", torch.bfloat16)):
    x, y = (a, w) if dt is None else (a.to(dt), w.to(dt))
    for _ in range(3): lin(x, y)
    t = time.process_time(); n = 20
    for _ in range(n): lin(x, y)
    print(f"RATE {name} {2 * 1024 * 768 * 3072 * n / (time.process_time() - t) / 1e9:.0f}")
try:  # numpy's bundled OpenBLAS on the same shape, for scale (fsdp's fp32 GEMMs are OpenBLAS's)
    import numpy as np
    x, y = a.numpy(), w.numpy().T
    for _ in range(3): x @ y
    t = time.process_time(); n = 20
    for _ in range(n): x @ y
    print(f"RATE numpy {2 * 1024 * 768 * 3072 * n / (time.process_time() - t) / 1e9:.0f}")
except ImportError:
    pass
"""
    env = dict(os.environ, MKL_VERBOSE="1", ONEDNN_VERBOSE="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout
    import torch
    mkl = next((l.split("MKL_VERBOSE ")[1].split(" Product")[0] for l in out.splitlines()
                if l.startswith("MKL_VERBOSE oneMKL")), "MKL not called")
    fp32_calls = sorted({l.split("(")[0].split()[-1] for l in out.splitlines()
                         if l.startswith("MKL_VERBOSE") and "GEMM" in l})
    isa = next((l.split("isa:")[1] for l in out.splitlines() if "isa:" in l), "?")
    impl = sorted({l.split(",")[6] for l in out.splitlines() if ",primitive,exec," in l})
    rates = dict(l.split()[1:] for l in out.splitlines() if l.startswith("RATE"))
    print(f"torch {torch.__version__}: CPU capability {torch.backends.cpu.get_cpu_capability()}; "
          f"fp32 GEMMs: {mkl} {'/'.join(fp32_calls) or 'oneDNN'} at {rates.get('fp32')} GFLOP/s; "
          f"bf16 GEMMs: oneDNN {torch.backends.mkldnn.version() if hasattr(torch.backends.mkldnn, 'version') else ''}"
          f"{'/'.join(impl)} (ISA: {isa}) at {rates.get('bf16')} GFLOP/s (1024x768x3072, one thread, CPU time; "
          f"numpy's OpenBLAS fp32 {rates.get('numpy', '-')} GFLOP/s)")


def build_model(args):
    import torch
    import torch.nn.functional as F
    import pytorch_reference as ref

    if args.arch == "qwen3moe":
        from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

        cfg = Qwen3MoeConfig(
            vocab_size=args.vocab, hidden_size=args.embd, intermediate_size=args.ffn,
            moe_intermediate_size=args.ffn, num_hidden_layers=args.layers,
            num_attention_heads=args.heads, num_key_value_heads=args.kv or args.heads,
            head_dim=args.embd // args.heads, num_experts=args.experts,
            num_experts_per_tok=args.topk, norm_topk_prob=True, decoder_sparse_step=1,
            mlp_only_layers=[], max_position_embeddings=max(args.block, 128),
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
            rms_norm_eps=1e-5, tie_word_embeddings=True, initializer_range=0.02,
            output_router_logits=args.aux_loss, router_aux_loss_coef=0.001, use_cache=False)
        kw = {"attn_implementation": "sdpa"}
        if args.experts_impl:
            kw["experts_implementation"] = args.experts_impl
        model = Qwen3MoeForCausalLM._from_config(cfg, **kw)

        def loss_fn(idx, tgt):
            # Our targets are already the next tokens: hand transformers' loss the logits directly.
            out = model(input_ids=idx, use_cache=False)
            loss = F.cross_entropy(out.logits.float().view(-1, args.vocab), tgt.view(-1))
            if args.aux_loss and out.aux_loss is not None:
                loss = loss + 0.001 * out.aux_loss
            return loss
        return model, loss_fn

    def gpt_attention(self, x):  # PyTorch 2's fused causal attention
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.attn_proj(y.transpose(1, 2).reshape(b, t, c))

    def llama_attention(self, x, cos, sin):
        b, t, c = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        # The rotary tables are fp32 buffers, which DeepSpeed's bf16 mode leaves fp32, so q and k
        # come out fp32 beside a bf16 v, and SDPA refuses the mix. Autocast casts all three to
        # bf16 inside SDPA anyway; this does the same where no autocast runs.
        if q.dtype != v.dtype:
            q, k = q.to(v.dtype), k.to(v.dtype)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.heads)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, c))

    if args.attention == "sdpa":
        ref.Block.attention = gpt_attention
        ref.LlamaBlock.attention = llama_attention
    if args.arch == "llama":
        model = ref.Llama(args.layers, args.embd, args.heads, args.kv or args.heads, args.ffn,
                          args.vocab, args.block)
    else:
        model = ref.GPT(args.layers, args.embd, args.heads, args.vocab, args.block)
    return model, model


def blocks(model):
    if hasattr(model, "h"):
        return list(model.h)
    if hasattr(model, "layers"):
        return list(model.layers)
    return list(model.model.layers)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gemm-info", action="store_true", help="print the GEMM libraries and exit")
    p.add_argument("--arch", choices=("gpt2", "llama", "qwen3moe"), default="gpt2")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--kv", type=int, default=0, help="key/value heads (0 = heads)")
    p.add_argument("--ffn", type=int, default=0, help="llama: SwiGLU width; qwen3moe: expert width")
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--topk", type=int, default=2)
    p.add_argument("--experts-impl", default="", help="qwen3moe: transformers' experts_implementation "
                   "(default: transformers' own choice)")
    p.add_argument("--aux-loss", action="store_true", help="qwen3moe: add the load-balancing loss")
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=4, help="sequences per process per step")
    p.add_argument("--steps", type=int, default=6, help="steps in all; the first --warmup untimed")
    p.add_argument("--warmup", type=int, default=0, help="untimed steps (0: 1 eager, 2 compiled)")
    p.add_argument("--mode", choices=("eager", "compile"), default="eager")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--attention", choices=("sdpa", "math"), default="sdpa",
                   help="sdpa: F.scaled_dot_product_attention; math: the masked-softmax reference")
    p.add_argument("--dist", choices=("none", "fsdp2", "deepspeed"), default="none")
    p.add_argument("--lora", type=int, default=0,
                   help="llama: PEFT LoRA adapters of this rank (alpha 2r) on every projection, the "
                        "base frozen (fsdp's lora.enabled, lora.targets = all-linear)")
    p.add_argument("--profile", action="store_true", help="torch.profiler's top ops after timing")
    args = p.parse_args()
    if args.gemm_info:
        gemm_info()
        return

    import torch
    import torch.nn.functional as F  # noqa: F401

    torch.set_num_threads(1)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        # One core a rank, as mpirun binds fsdp's ranks (torchrun binds nothing).
        local = int(os.environ.get("LOCAL_RANK", rank))
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[local % len(cores)]})
    if args.dist == "none" and world > 1:
        sys.exit("torch_peer: more than one process needs --dist fsdp2 or --dist deepspeed")
    torch.manual_seed(1234)  # the same initial model on every rank
    model, loss_fn = build_model(args)
    if args.lora:
        import peft

        if args.arch != "llama" or args.dist != "none":
            sys.exit("torch_peer: --lora is for --arch llama on one process")
        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        model = peft.get_peft_model(model, peft.LoraConfig(r=args.lora, lora_alpha=2 * args.lora,
                                                           target_modules=targets, lora_dropout=0.0))
        loss_fn = model
    bf16 = args.precision == "bf16"
    autocast = bf16 and args.dist == "none"

    if args.dist == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        torch.distributed.init_process_group("gloo")
        mesh = init_device_mesh("cpu", (world,))
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 \
            else MixedPrecisionPolicy()
        for blk in blocks(model):
            fully_shard(blk, mesh=mesh, mp_policy=mp)
        fully_shard(model, mesh=mesh, mp_policy=mp)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, fused=True)

        def step(idx, tgt):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(idx, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    elif args.dist == "deepspeed":
        import deepspeed
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        deepspeed.init_distributed(dist_backend="gloo")
        config = {"train_micro_batch_size_per_gpu": args.batch, "gradient_accumulation_steps": 1,
                  "gradient_clipping": 1.0, "zero_optimization": {"stage": 3},
                  "bf16": {"enabled": bf16}, "steps_per_print": 1 << 30,
                  "wall_clock_breakdown": False}
        opt = DeepSpeedCPUAdam(model.parameters(), lr=1e-3, weight_decay=0.1, adamw_mode=True)
        engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=config)
        if args.arch != "qwen3moe":
            loss_fn = engine

        def step(idx, tgt):
            loss = loss_fn(idx, tgt) if args.arch != "qwen3moe" else engine_loss(idx, tgt)
            engine.backward(loss)
            engine.step()

        def engine_loss(idx, tgt):
            out = engine(input_ids=idx, use_cache=False)
            return F.cross_entropy(out.logits.float().view(-1, args.vocab), tgt.view(-1))
    else:
        trained = [q for q in model.parameters() if q.requires_grad]  # LoRA: the adapters alone
        opt = torch.optim.AdamW(trained, lr=1e-3, weight_decay=0.1, fused=True)
        if args.mode == "compile":
            loss_fn = torch.compile(loss_fn)

        def step(idx, tgt):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = loss_fn(idx, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            opt.step()

    warmup = args.warmup or (2 if args.mode == "compile" else 1)
    gen = torch.Generator().manual_seed(99 + rank)
    rates, compile_s = [], 0.0
    for i in range(args.steps):
        idx = torch.randint(args.vocab, (args.batch, args.block), generator=gen)
        tgt = torch.randint(args.vocab, (args.batch, args.block), generator=gen)
        if world > 1:
            torch.distributed.barrier()
        t0 = time.perf_counter()
        step(idx, tgt)
        if world > 1:
            torch.distributed.barrier()
        dt = time.perf_counter() - t0
        if i < warmup:
            compile_s += dt
        else:
            rates.append(args.batch * args.block * world / dt)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(2):
                step(torch.randint(args.vocab, (args.batch, args.block), generator=gen),
                     torch.randint(args.vocab, (args.batch, args.block), generator=gen))
        if rank == 0:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18,
                                            max_name_column_width=48))
    if rank == 0:
        peer = {"none": f"torch {args.mode}", "fsdp2": "FSDP2 fully_shard (gloo)",
                "deepspeed": "DeepSpeed ZeRO-3 (gloo)"}[args.dist]
        if args.arch == "qwen3moe":
            peer += f" (transformers Qwen3MoeForCausalLM, experts_implementation " \
                    f"{getattr(model.config, '_experts_implementation', '?')}, attention sdpa)"
        print(f"{peer} {torch.__version__}: {args.arch}, {world} process(es), batch {args.batch} x "
              f"{args.block} per process, {args.precision}, warm-up {compile_s:.1f} s, "
              f"median {statistics.median(rates):.0f} tok/s "
              f"(min {min(rates):.0f}, max {max(rates):.0f}, {len(rates)} steps)")
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
