#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Our tokens/s against PyTorch's (jobscripts/pytorch_reference.py, Debian's python3-torch) on the
# benchmark shapes, measured side by side: the two alternate PAIRS times and each pair gives a
# ratio; prints every pair and the median ratio. Both get one thread per process and OpenBLAS's
# best kernel for this CPU: OPENBLAS_CORETYPE is set for both from the CPU's flags, overriding
# any the environment pins (a login environment that pins Haswell on an AVX-512 core halves both
# sides' GEMM speed and, given to one side only, decides the ratio).
#   jobscripts/vs_pytorch.sh small|124m|llama124m|moe|ddp2|ddp2-global8 [bf16]
# bf16: fsdp with bf16 parameters (fsdp.gemm_dtype = auto: bf16 GEMMs where the CPU computes them) against PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16), each on its own best bf16 path for this CPU.
# Environment: PAIRS (5), FSDP_BUILD, TORCH_BF16_STEPS (PyTorch's steps in bf16 mode: 6 with
# AVX-512, 4 without), BLOCK (moe only: the context, 128; the batch keeps 512 tokens a step).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
PAIRS=${PAIRS:-5}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "vs_pytorch: needs PyTorch for /usr/bin/python3 (apt-get install python3-torch)" >&2
  exit 1
fi
core=$(/usr/bin/python3 - <<'EOF'
import re
flags = open("/proc/cpuinfo").read()
print("SkylakeX" if re.search(r"\bavx512bw\b", flags) else "Haswell" if re.search(r"\bavx2\b", flags) else "")
EOF
)
[ -n "$core" ] && export OPENBLAS_CORETYPE="$core"
# PyTorch on tcmalloc, as its CPU performance guides advise: under glibc's malloc each tensor of
# 32 MiB or more is a fresh mmap, faulted in page by page and unmapped when freed, which at
# T = 1024 (the attention's B x H x T x T scores) made PyTorch's step 2.8x slower on a VM where
# page faults are dear. fsdp allocates its buffers once and gains nothing from it.
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -f "$TCMALLOC" ]; then
  TORCH=(env LD_PRELOAD="$TCMALLOC" /usr/bin/python3 "$ROOT/jobscripts/pytorch_reference.py")
else
  echo "vs_pytorch: PyTorch runs on glibc's malloc (apt-get install libtcmalloc-minimal4 for the allocator its guides advise)" >&2
  TORCH=(/usr/bin/python3 "$ROOT/jobscripts/pytorch_reference.py")
fi
small=(--layers 4 --embd 256 --heads 4 --vocab 256 --block 128)
case "${1:-}" in
  small)
    ours=("$BUILD/fsdp-train" --config "$ROOT/inputs/bench_small.toml" --set train.steps=30)
    theirs=("${TORCH[@]}" "${small[@]}" --batch 8 --steps 20) ;;
  124m)
    ours=("$BUILD/fsdp-train" --config "$ROOT/inputs/bench_124m.toml" --set train.steps=8)
    theirs=("${TORCH[@]}" --layers 12 --embd 768 --heads 12 --vocab 50257 --block 64 --batch 4 --steps 6) ;;
  llama124m)  # a Llama of 121M parameters (grouped-query 12:4, SwiGLU 2304, tied) at the same shape
    ours=("$BUILD/fsdp-train" --config "$ROOT/inputs/bench_llama_124m.toml" --set train.steps=8)
    theirs=("${TORCH[@]}" --arch llama --layers 12 --embd 768 --heads 12 --kv 4 --ffn 2304
            --vocab 50257 --block 64 --batch 4 --steps 6) ;;
  moe)  # a Mixtral of 4 layers x 512, 8 experts of 1024, top-2 (issue 46's shape), tied. Both
    # on uniformly random tokens, as PyTorch's side draws them: the routing (how many rows each
    # expert gets) depends on the data, and with it both sides' expert GEMMs.
    RAND=$(mktemp /tmp/vs_pytorch_moe.XXXXXX)
    trap 'rm -f "$RAND"' EXIT
    /usr/bin/python3 -c "import numpy as n; n.random.seed(1); n.random.randint(0, 256, 1 << 20).astype(n.uint16).tofile('$RAND')"
    # BLOCK (128) sets the context; the batch keeps 512 tokens a step (at least one sequence).
    T=${BLOCK:-128}
    B=$(( 512 / T > 0 ? 512 / T : 1 ))
    ours=("$BUILD/fsdp-train" --config "$ROOT/inputs/bench_moe.toml" --set train.steps=8
          --set "data.train=$RAND" --set "data.val=$RAND" --set data.format=uint16
          --set model.block_size="$T" --set train.batch_size="$B" --set train.micro_batch_size="$B")
    theirs=("${TORCH[@]}" --arch moe --layers 4 --embd 512 --heads 8 --kv 8 --ffn 1024 --experts 8
            --topk 2 --vocab 256 --block "$T" --batch "$B" --steps 6) ;;
  ddp2)  # 8 sequences per process, as the one-process shape (global batch 16)
    ours=(mpirun --oversubscribe -np 2 "$BUILD/fsdp-train" --config "$ROOT/inputs/bench_small.toml"
          --set train.batch_size=16 --set train.steps=30)
    theirs=("${TORCH[@]}" "${small[@]}" --batch 8 --steps 20 --ddp 2) ;;
  ddp2-global8)  # the one-process global batch of 8 split over 2 processes
    ours=(mpirun --oversubscribe -np 2 "$BUILD/fsdp-train" --config "$ROOT/inputs/bench_small.toml"
          --set train.micro_batch_size=4 --set train.steps=30)
    theirs=("${TORCH[@]}" "${small[@]}" --batch 4 --steps 20 --ddp 2) ;;
  *) echo "usage: $0 small|124m|llama124m|moe|ddp2|ddp2-global8 [fp32|bf16]" >&2; exit 2 ;;
esac
extra=()
[ -n "${STRATEGY:-}" ] && extra=(--set fsdp.strategy="$STRATEGY")
case "${2:-fp32}" in
  fp32) ;;
  bf16)
    extra+=(--set fsdp.mixed_precision=bf16)  # gemm_dtype auto: bf16 GEMMs where they compute
    # PyTorch's bf16 on a CPU without bf16 matmul kernels (AVX2 only) runs ~18x slower than its
    # fp32: fewer steps keep a pair within minutes there (the first step is never timed). With
    # AVX-512 it is PyTorch's faster path, and gets as many steps as fp32.
    steps=4
    [ "$core" = SkylakeX ] && steps=6
    theirs+=(--precision bf16 --steps "${TORCH_BF16_STEPS:-$steps}") ;;
  *) echo "usage: $0 small|124m|llama124m|moe|ddp2|ddp2-global8 [fp32|bf16]" >&2; exit 2 ;;
esac
# Into a file, then grep: a pipe that grep -m1 closes early makes mpirun die of SIGPIPE noisily.
probe=$(mktemp)
"${ours[@]}" "${extra[@]}" --set train.steps=2 --set train.peak_tflops=1 >"$probe" 2>&1 || true
grep -m1 "GEMMs:" "$probe" || true
rm -f "$probe"

ratios=()
for i in $(seq "$PAIRS"); do
  a=$("${ours[@]}" "${extra[@]}" --set train.peak_tflops=1 2>&1 | sed -n 's/.*median \([0-9]*\) tok\/s.*/\1/p')
  b=$("${theirs[@]}" 2>&1 | sed -n 's/.*median \([0-9]*\) tok\/s.*/\1/p')
  r=$(/usr/bin/python3 -c "print(f'{$a / $b:.3f}')")
  echo "pair $i: fsdp $a tok/s, pytorch $b tok/s, ratio $r"
  ratios+=("$r")
done
/usr/bin/python3 -c "
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f'median ratio {statistics.median(r):.3f} (min {min(r):.3f}, max {max(r):.3f}) over {len(r)} pairs')
" "${ratios[@]}"
