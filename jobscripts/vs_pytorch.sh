#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp's tokens/s against a peer's on the same shape and the same core(s), measured side by side:
# the two alternate PAIRS times, each pair gives a ratio (fsdp / peer); prints every pair with
# the load average beside it, then the median and the spread (min-max).
#   jobscripts/vs_pytorch.sh SHAPE [fp32|bf16] [eager|compile|fsdp2|deepspeed]
# SHAPE: 124m | llama124m (T = 64, B = 4), 124m-t1024 | llama124m-t1024 (T = 1024, B = 1),
#        moe (inputs/bench_moe.toml as a Qwen3-MoE, against transformers' Qwen3MoeForCausalLM),
#        small (bench_small.toml against torch_peer.py's GPT of its shape), ddp2, ddp2-global8
#        (the older DDP rows: pytorch_reference.py's DDP over gloo, PEER eager).
# Peers (jobscripts/torch_peer.py, PyTorch from the pinned environment, scripts/pyenv.sh):
#   eager, compile   one process on one core (taskset CORE, default 0), torch.optim.AdamW(fused=True);
#                    bf16: torch.autocast("cpu", torch.bfloat16) against fsdp.mixed_precision=bf16
#   fsdp2, deepspeed two processes, one core each, the shape's batch per rank (global 2B):
#                    fsdp zero3 under mpirun -np 2 against FSDP2 fully_shard over gloo (fused
#                    AdamW; bf16: MixedPrecisionPolicy(bf16 params, fp32 reduce)) or DeepSpeed
#                    ZeRO-3 with DeepSpeedCPUAdam(adamw_mode=True) (bf16: its "bf16" config)
# OpenBLAS gets its best kernel for this CPU (OPENBLAS_CORETYPE from the CPU's flags, overriding
# a login environment that pins a narrower one); torch uses its own MKL (fp32) and oneDNN (bf16).
# PyTorch runs on tcmalloc (LD_PRELOAD), as its CPU performance guides advise: on glibc's malloc
# each tensor of 32 MiB or more is a fresh mmap faulted in page by page, which made PyTorch's step
# up to 2.8x slower on a VM where page faults are dear; fsdp allocates its buffers once.
# LORA=R (llama124m, eager or compile): both sides train rank-R adapters (alpha 2R) on every
# projection of a frozen base: lora.enabled against PEFT's get_peft_model (docs/lora.md).
# Environment: PAIRS (3), CORE (0), PYTHON (the pinned environment's), FSDP_BUILD, PROFILE=1 (after
# the pairs, fsdp's --profile and torch.profiler's top operators, one run each), FSDP_STEPS and
# TORCH_STEPS (override the step counts).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
PAIRS=${PAIRS:-3}
CORE=${CORE:-0}
usage() { echo "usage: $0 124m|llama124m|124m-t1024|llama124m-t1024|moe|small|ddp2|ddp2-global8 [fp32|bf16] [eager|compile|fsdp2|deepspeed]" >&2; exit 2; }
[ $# -ge 1 ] || usage
shape=$1 prec=${2:-fp32} peer=${3:-eager}
case "$prec" in fp32|bf16) ;; *) usage ;; esac
case "$peer" in eager|compile|fsdp2|deepspeed) ;; *) usage ;; esac

PY=${PYTHON:-$("$ROOT/scripts/pyenv.sh" --check 2>/dev/null || true)}
[ -z "$PY" ] && [ -x "${HOME:-/root}/.cache/fsdp/probe-venv/bin/python" ] && PY=${HOME:-/root}/.cache/fsdp/probe-venv/bin/python
if [ -z "$PY" ] || ! "$PY" -c "import torch" 2>/dev/null; then
  echo "vs_pytorch: needs the pinned Python environment (scripts/pyenv.sh) or PYTHON=<a python with torch>" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TORCHINDUCTOR_COMPILE_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
core=$("$PY" - <<'EOF'
import re
flags = open("/proc/cpuinfo").read()
print("SkylakeX" if re.search(r"\bavx512bw\b", flags) else "Haswell" if re.search(r"\bavx2\b", flags) else "")
EOF
)
[ -n "$core" ] && export OPENBLAS_CORETYPE="$core"
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
PRELOAD=()
if [ -f "$TCMALLOC" ]; then
  PRELOAD=(env LD_PRELOAD="$TCMALLOC")
else
  echo "vs_pytorch: PyTorch runs on glibc's malloc (apt-get install libtcmalloc-minimal4 for the allocator its guides advise)" >&2
fi
TRAIN="$BUILD/fsdp-train"
PEER="$ROOT/jobscripts/torch_peer.py"
gpt=(--arch gpt2 --layers 12 --embd 768 --heads 12 --vocab 50257)
llama=(--arch llama --layers 12 --embd 768 --heads 12 --kv 4 --ffn 2304 --vocab 50257)
fsteps=8 tsteps=6   # fsdp's median is over its steps after the first; torch's after 1 (eager) or 2 (compiled)
set_bt=()
case "$shape" in
  124m|124m-t1024) deck=bench_124m.toml model=("${gpt[@]}") ;;
  llama124m|llama124m-t1024) deck=bench_llama_124m.toml model=("${llama[@]}") ;;
  moe) deck=bench_moe.toml ;;
  small|ddp2|ddp2-global8) deck=bench_small.toml fsteps=30 ;;
  *) usage ;;
esac
T=64 B=4
case "$shape" in *-t1024) T=1024 B=1 fsteps=5 tsteps=4 ;; esac
[ "$peer" = compile ] && tsteps=$((tsteps + 1))
fsteps=${FSDP_STEPS:-$fsteps} tsteps=${TORCH_STEPS:-$tsteps}
ours=("$TRAIN" --config "$ROOT/inputs/$deck" --set train.steps="$fsteps")
theirs=()
case "$shape" in
  124m*|llama124m*)
    ours+=(--set model.block_size=$T --set train.micro_batch_size=$B)
    theirs=("${model[@]}" --block $T --batch $B) ;;
  moe)  # bench_moe's shape (4 layers x 512, 8 heads, 8 SwiGLU experts of 1024, top-2 renormalised,
    # byte vocabulary, tied, T = 128, B = 4) as a Qwen3-MoE on both sides (q/k norms, every layer
    # sparse, no balance loss), on uniformly random tokens as torch_peer.py draws them: the routing
    # (how many rows each expert gets) depends on the data, and with it both sides' expert GEMMs.
    T=128 B=4
    RAND=$(mktemp /tmp/vs_pytorch_moe.XXXXXX)
    trap 'rm -f "$RAND"' EXIT
    "$PY" -c "import numpy as n; n.random.seed(1); n.random.randint(0, 256, 1 << 20).astype(n.uint16).tofile('$RAND')"
    ours+=(--set model.arch=qwen3_moe --set model.moe_ffn_hidden=1024 --set model.head_dim=64
           --set model.norm_topk_prob=true --set model.output_router_logits=false
           --set "data.train=$RAND" --set "data.val=$RAND" --set data.format=uint16)
    theirs=(--arch qwen3moe --layers 4 --embd 512 --heads 8 --kv 8 --ffn 1024 --experts 8 --topk 2
            --vocab 256 --block $T --batch $B) ;;
  small)
    T=128 B=8 fsteps=${FSDP_STEPS:-30} tsteps=${TORCH_STEPS:-20}
    ours=("$TRAIN" --config "$ROOT/inputs/$deck" --set train.steps="$fsteps")
    theirs=(--layers 4 --embd 256 --heads 4 --vocab 256 --block $T --batch $B) ;;
esac
[ "$prec" = bf16 ] && ours+=(--set fsdp.mixed_precision=bf16)
if [ -n "${LORA:-}" ]; then
  ours+=(--set lora.enabled=true --set lora.rank="$LORA" --set lora.alpha=$((2 * LORA)))
  theirs+=(--lora "$LORA")
fi  # gemm_dtype auto: bf16 GEMMs where they compute

ranks=1
case "$shape:$peer" in
  ddp2:*|ddp2-global8:*)  # the older DDP rows: pytorch_reference.py's DDP over gloo
    b=8; [ "$shape" = ddp2-global8 ] && b=4
    ours=(mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 "${ours[@]}"
          --set train.batch_size=$((2 * b)) --set train.micro_batch_size=$b --set train.steps=30)
    theirs_cmd=("${PRELOAD[@]}" "$PY" "$ROOT/jobscripts/pytorch_reference.py" --layers 4 --embd 256 --heads 4
                --vocab 256 --block 128 --batch $b --steps 20 --ddp 2 --precision "$prec") ;;
  *:fsdp2|*:deepspeed)
    ranks=2
    ours=(mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 "${ours[@]}"
          --set fsdp.strategy=zero3 --set train.batch_size=$((2 * B)))
    theirs_cmd=("${PRELOAD[@]}" "$(dirname "$PY")/torchrun" --nproc_per_node 2 --master_port "${MASTER_PORT:-29631}"
                "$PEER" "${theirs[@]}" --steps "$tsteps" --precision "$prec" --dist "$peer") ;;
  *)
    ours=(taskset -c "$CORE" "${ours[@]}" --set train.batch_size=$B)
    theirs_cmd=(taskset -c "$CORE" "${PRELOAD[@]}" "$PY" "$PEER" "${theirs[@]}" --steps "$tsteps"
                --precision "$prec" --mode "$peer") ;;
esac

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(grep -o -E 'avx512bw|avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | xargs | tr ' ' ,), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, $(grep -c ^processor /proc/cpuinfo) cores"
# Into a file, then grep: a pipe that grep -m1 closes early makes mpirun die of SIGPIPE noisily.
probe=$(mktemp)
"${ours[@]}" --set train.steps=2 </dev/null >"$probe" 2>&1 || true
grep -m1 "GEMMs:" "$probe" || { echo "vs_pytorch: fsdp-train failed:" >&2; tail -5 "$probe" >&2; exit 1; }
rm -f "$probe"
taskset -c "$CORE" "$PY" "$PEER" --gemm-info 2>/dev/null | grep '^torch'
echo "fsdp:  ${ours[*]}"
echo "peer:  ${theirs_cmd[*]}"

rate() { sed -n 's/.*median \([0-9]*\) tok\/s.*/\1/p' | head -1; }
ratios=()
for i in $(seq "$PAIRS"); do
  l0=$(load)
  # </dev/null: mpirun and torchrun forward stdin, and would eat a caller's `while read` list.
  a=$("${ours[@]}" </dev/null 2>&1 | rate)
  # On failure, the ranks' own lines first (torchrun's summary names only the signal: DeepSpeed's
  # ranks have died of SIGABRT now and then, here, with nothing else said).
  out=$("${theirs_cmd[@]}" </dev/null 2>&1) || {
    echo "vs_pytorch: the peer failed in pair $i; its output without torchrun's warnings:" >&2
    echo "$out" | grep -v -E '^W[0-9]{4} |^\s*$' | tail -60 >&2; exit 1; }
  b=$(echo "$out" | rate)
  [ -n "$a" ] && [ -n "$b" ] || { echo "vs_pytorch: no tok/s from one side (fsdp '$a', peer '$b')" >&2; echo "$out" | tail -5 >&2; exit 1; }
  r=$("$PY" -c "print(f'{$a / $b:.3f}')")
  echo "pair $i: fsdp $a tok/s, $peer $b tok/s, ratio $r (load $l0 -> $(load))"
  ratios+=("$r")
done
"$PY" -c "
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f'median ratio {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f}) over {len(r)} pairs')
" "${ratios[@]}"

if [ "${PROFILE:-0}" = 1 ]; then
  echo "--- fsdp --profile"
  "${ours[@]}" --profile </dev/null 2>&1 | sed -n '/done:/,$p'
  echo "--- $peer: torch.profiler"
  prof=("${theirs_cmd[@]}")
  [ "$shape" = ddp2 ] || [ "$shape" = ddp2-global8 ] || prof+=(--profile)
  "${prof[@]}" </dev/null 2>&1 | grep -v -E '^W[0-9]|Warning|warn\(' | tail -30
fi
