#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU device check, in one command, from the bundle jobscripts/device_bundle.sh packs. For a
# GPU node with the CUDA driver, the toolkit and PyTorch but no MPI, HDF5 or BLAS; about six
# minutes on one H200. From the repository root:
#
#   bash jobscripts/device_check.sh [ARCHIVE]     (default .device-bundle/fsdp-device.tar.xz)
#
# Checks, each one line PASS/FAIL/NOT RUN in summary.txt, with every run's log and metrics in
# logs.tar.gz and the GPU's checkpoint beside it (three files: in $OUT when set, else
# ./device-check-out):
#   1 the GPU tests: test_device_select at 1 and 2 ranks, test_nccl at 1 rank (NCCL) and at
#     2 ranks sharing the GPU (the MPI path); a GPU test that skips itself fails here
#   2 the default deck, 50 steps, fp32 on the GPU against the CPU build: every step's loss
#     within 1e-4 relative (the CPU build's run was made when the bundle was packed)
#   3 bf16 against fp32 on the GPU: every 10-step mean loss within 2%
#   4 a checkpoint written on the GPU at step 25 and resumed there: steps 26-50 bitwise the
#     uninterrupted run's (4a); the checkpoint is left beside the summary (gpu_step25.h5), and
#     back on the CPU machine jobscripts/device_check_cpu.sh has the CPU build verify it and
#     resume from it, 5 steps within 1e-4 (4b: NOT RUN here)
#   5 zero3 at 2 ranks sharing the GPU over the MPI path: the comm line names MPI, losses
#     within 1e-4 of one rank's
#   6 GPT-2 124M, T = 1024, the largest micro-batch that fits: fsdp's tok/s and MFU in fp32 and
#     bf16, beside PyTorch's own GPT-2 training step of the same shape on the same GPU
#   7 the fused attention on the device: (a) its output and gradients against the materialised
#     path's (fsdp-bench attention --check, D = 64 and 128, T up to 1024, the GPU's two-pass
#     backward and shared-memory tiles); (b) fused and materialised forward+backward times at
#     B = 16, H = 12, D = 64, T = 1024 and 4096, beside PyTorch's scaled_dot_product_attention
# FSDP_DEVICE_CHECK_DRY=1 runs what can run without a GPU (the CPU build stands in for the GPU
# build; 1, 6 and 7b are NOT RUN): how the bundle and this script are tested on a CPU machine.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCHIVE=${1:-$ROOT/.device-bundle/fsdp-device.tar.xz}
DEST=${OUT:-$ROOT/device-check-out}
DRY=${FSDP_DEVICE_CHECK_DRY:-0}
mkdir -p "$DEST"
RES=$(mktemp -d /tmp/fsdp-device-logs.XXXXXX)  # packed into $DEST/logs.tar.gz at the end
SUMMARY=$DEST/summary.txt
: >"$SUMMARY"
say() { echo "device_check: $*" | tee -a "$SUMMARY"; }
die() { say "FAILED to start: $*"; exit 1; }
FAILS=0
pass() { say "PASS $*"; }
fail() { say "FAIL $*"; FAILS=$((FAILS + 1)); }
notrun() { say "NOT RUN $*"; }

# ---- the bundle and its environment ----------------------------------------------------------
[ -f "$ARCHIVE" ] || die "no bundle at $ARCHIVE (jobscripts/device_bundle.sh makes it)"
U=$(mktemp -d /tmp/fsdp-device.XXXXXX)
tar -C "$U" -xJf "$ARCHIVE" || die "cannot unpack $ARCHIVE"
B=$U/fsdp-device
say "bundle: $(head -1 "$B/MANIFEST")"

# CUDA's libraries come from the node: its toolkit, or the nvidia-* wheels PyTorch installed.
cuda_dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib)
while IFS= read -r d; do cuda_dirs+=("$d"); done < <(python3 - 2>/dev/null <<'PY'
import glob, os, site
for s in site.getsitepackages():
    for d in sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib"))):
        print(d)
PY
)
LIBS=$B/lib
if [ "$DRY" != 1 ]; then
  while read -r need; do
    [ -n "$need" ] || continue
    found=""
    for d in "${cuda_dirs[@]}"; do [ -e "$d/$need" ] && { found=$d; break; }; done
    [ -n "$found" ] || die "$need, which the GPU build links, is on this node in none of: ${cuda_dirs[*]}"
    case ":$LIBS:" in *":$found:"*) ;; *) LIBS=$LIBS:$found ;; esac
  done <"$B/lib/FROM_NODE"
fi
# Only fsdp's programs see the bundle's libraries: its libstdc++ is older than a newer node's,
# which PyTorch needs.
FSDP_ENV=(env LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
# Open MPI, relocated: every directory it would look under /usr for, under the bundle.
M=$B/mpi
export OPAL_PREFIX=$M OPAL_EXEC_PREFIX=$M OPAL_BINDIR=$M/bin OPAL_LIBDIR=$B/lib \
  OPAL_PKGLIBDIR=$M/lib/openmpi3 OPAL_DATAROOTDIR=$M/share OPAL_DATADIR=$M/share \
  OPAL_PKGDATADIR=$M/share/openmpi OPAL_SYSCONFDIR=$M/etc
export OMPI_MCA_mca_base_component_path=$M/lib/openmpi3 PMIX_MCA_mca_base_component_path=$M/lib/pmix
export PMIX_INSTALL_PREFIX=$M PATH=$M/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One node, no network: shared memory and loopback only.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
MPIRUN=("${FSDP_ENV[@]}" "$M/bin/mpirun" --bind-to none)

TRAIN=$B/gpu/fsdp-train  # a dry run's bundle has the CPU build there
D=$ROOT/inputs/default.toml
if [ "$DRY" != 1 ]; then
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader |
    sed 's/^/device_check: gpu: /' | tee -a "$SUMMARY"
fi

# train NAME ARGS...: fsdp-train with metrics, 0 when it ran; log and metrics under $RES.
train() {
  local name=$1
  shift
  timeout 600 "${FSDP_ENV[@]}" "$@" --metrics "$RES/$name.jsonl" >"$RES/$name.log" 2>&1
}
# compare A B TOL [FIRST]: every step's loss in A's metrics within relative TOL of B's.
compare() {
  python3 - "$RES/$1.jsonl" "$RES/$2.jsonl" "$3" "${4:-1}" <<'PY'
import json, sys
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r and "eval_loss" not in r}
a, b, tol, first = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
steps = sorted(s for s in a if s >= first)
worst = max((abs(a[s] - b[s]) / abs(b[s]), s) for s in steps) if steps and all(s in b for s in steps) else (float("inf"), 0)
print(f"{len(steps)} steps, worst relative difference {worst[0]:.2e} at step {worst[1]}")
sys.exit(0 if worst[0] <= tol else 1)
PY
}
S50=(--config "$D" --set train.steps=50 --set eval.every=0)

# ---- 1: the GPU tests --------------------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  notrun "1 GPU tests (dry run: no GPU)"
else
  ok=1
  for t in "1 test_device_select" "2 test_device_select" "1 test_nccl [nccl]" "2 test_nccl [mpi],[select]"; do
    set -- $t
    np=$1 exe=$2 tag=${3:-}
    "${MPIRUN[@]}" -np "$np" "$B/gpu/$exe" $tag >"$RES/test_${exe}_np$np.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { ok=0; say "  $exe at $np rank(s): exit $rc (77 = skipped itself: no GPU seen)"; }
  done
  [ $ok = 1 ] && pass "1 GPU tests (test_device_select np 1-2, test_nccl np 1 NCCL, np 2 MPI)" ||
    fail "1 GPU tests (logs: test_*.log)"
fi

# ---- 2: fp32 on the GPU against the CPU build ---------------------------------------------------
cp "$B/ref/cpu_fp32.jsonl" "$RES/cpu_fp32.jsonl" 2>/dev/null
if train gpu_fp32 "$TRAIN" "${S50[@]}" && [ -s "$RES/cpu_fp32.jsonl" ]; then
  r=$(compare gpu_fp32 cpu_fp32 1e-4) && pass "2 fp32 GPU vs CPU: $r" || fail "2 fp32 GPU vs CPU: $r"
else
  fail "2 fp32 GPU vs CPU: the GPU run failed (gpu_fp32.log) or the bundle has no ref/cpu_fp32.jsonl"
fi

# ---- 3: bf16 against fp32 ----------------------------------------------------------------------
if train gpu_bf16 "$TRAIN" "${S50[@]}" --set fsdp.mixed_precision=bf16; then
  r=$(python3 - "$RES/gpu_bf16.jsonl" "$RES/gpu_fp32.jsonl" <<'PY'
import json, sys
def losses(p):
    return [r["loss"] for r in map(json.loads, open(p)) if "loss" in r and "eval_loss" not in r]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
worst = max(abs(sum(a[i - 10:i]) - sum(b[i - 10:i])) / sum(b[i - 10:i]) for i in range(10, len(b) + 1))
print(f"worst 10-step mean difference {100 * worst:.2f}%")
sys.exit(0 if worst <= 0.02 and len(a) == len(b) else 1)
PY
) && pass "3 bf16 vs fp32: $r" || fail "3 bf16 vs fp32: $r"
else
  fail "3 bf16 vs fp32: the bf16 run failed (gpu_bf16.log)"
fi

# ---- 4: a GPU checkpoint, resumed on the GPU and read by the CPU build -------------------------
CK=$U/ck
if train gpu_ckpt "$TRAIN" "${S50[@]}" --set train.steps=25 --set checkpoint.every=25 --set checkpoint.dir="$CK" &&
  train gpu_resume "$TRAIN" "${S50[@]}" --set checkpoint.dir="$CK" --resume auto; then
  r=$(compare gpu_resume gpu_fp32 0 26)
  if [ $? = 0 ]; then
    pass "4a GPU checkpoint resumed on the GPU: bitwise ($r)"
  else
    fail "4a GPU checkpoint resumed on the GPU: not bitwise ($r)"
  fi
  first=$(ls "$CK"/step_*.h5 2>/dev/null | sort | head -1)
  if [ -n "$first" ] && cp "$first" "$DEST/gpu_step25.h5"; then
    notrun "4b the CPU build reads the GPU checkpoint: on the CPU machine, jobscripts/device_check_cpu.sh <this folder>"
  else
    fail "4b no GPU checkpoint to take back (gpu_ckpt.log)"
  fi
else
  fail "4 GPU checkpoint: writing or resuming failed (gpu_ckpt.log, gpu_resume.log)"
fi

# ---- 5: zero3 at 2 ranks sharing the GPU over the MPI path -------------------------------------
if train gpu_zero3_np2 "${MPIRUN[@]}" -np 2 "$TRAIN" "${S50[@]}" --set fsdp.strategy=zero3; then
  path=$(grep -m1 'fsdp-train: comm world' "$RES/gpu_zero3_np2.log" | sed 's/^fsdp-train: comm //')
  r=$(compare gpu_zero3_np2 gpu_fp32 1e-4)
  if [ $? = 0 ] && { [ "$DRY" = 1 ] || [[ $path == *mpi* ]]; }; then
    pass "5 zero3 np 2 on one GPU: $r; comm $path"
  else
    fail "5 zero3 np 2 on one GPU: $r; comm $path"
  fi
else
  fail "5 zero3 np 2 on one GPU: the run failed (gpu_zero3_np2.log)"
fi

# ---- 6: GPT-2 124M at T = 1024 beside PyTorch ---------------------------------------------------
if [ "$DRY" = 1 ]; then
  notrun "6 GPT-2 124M benchmark (dry run: no GPU)"
else
  BENCH=(--config "$ROOT/inputs/bench_124m.toml" --set model.block_size=1024 --set train.steps=10)
  fits=""
  for mb in 32 16 8 4; do
    if train "bench_probe_$mb" "$TRAIN" "${BENCH[@]}" --set train.steps=2 \
      --set train.batch_size=$mb --set train.micro_batch_size=$mb; then
      fits=$mb
      break
    fi
  done
  if [ -z "$fits" ]; then
    fail "6 GPT-2 124M: no micro-batch of 32, 16, 8 or 4 ran (bench_probe_*.log)"
  else
    for prec in fp32 bf16; do
      train "bench_$prec" "$TRAIN" "${BENCH[@]}" --set train.batch_size=$fits --set train.micro_batch_size=$fits \
        --set fsdp.mixed_precision=$prec
      ours=$(python3 - "$RES/bench_$prec.jsonl" <<'PY'
import json, statistics, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if "tokens_per_s" in r][2:]  # warm-up
print(f"{statistics.median(r['tokens_per_s'] for r in rows):.0f} {100 * statistics.median(r['mfu'] for r in rows):.1f}" if rows else "0 0")
PY
)
      PYTHONUNBUFFERED=1 timeout 300 python3 "$ROOT/jobscripts/pytorch_reference.py" --layers 12 --embd 768 \
        --heads 12 --vocab 50257 --block 1024 --batch "$fits" --steps 10 --device cuda \
        --precision "$prec" >"$RES/torch_$prec.log" 2>&1
      theirs=$(sed -n 's/.*median \([0-9]*\) tok\/s.*/\1/p' "$RES/torch_$prec.log")
      set -- $ours
      ratio=$(python3 -c "print(f'{$1 / $theirs:.2f}' if '$theirs' else 'n/a')" 2>/dev/null)
      say "6 GPT-2 124M T=1024 B=$fits $prec: fsdp $1 tok/s, MFU $2%; PyTorch ${theirs:-failed} tok/s; ratio $ratio"
    done
  fi
fi

# ---- 7: the fused attention on the device ------------------------------------------------------
ATTN=$B/gpu/fsdp-bench
if timeout 300 "${FSDP_ENV[@]}" "$ATTN" attention --check --seq 1 64 333 1024 --heads 4 --head-dim 64 \
  --iters 1 >"$RES/attention_check_d64.log" 2>&1 &&
  timeout 300 "${FSDP_ENV[@]}" "$ATTN" attention --check --seq 7 333 --heads 4 --head-dim 128 \
    --iters 1 >"$RES/attention_check_d128.log" 2>&1; then
  worst=$(cat "$RES"/attention_check_d*.log | sed -n 's/.*output \([^,]*\), dq|dk|dv \([^ ]*\).*/\1 \2/p' |
    tr ' ' '\n' | sort -g | tail -1)
  pass "7a fused attention matches the materialised path: 6 shapes, worst relative error $worst"
else
  fail "7a fused attention against the materialised path (attention_check_d64.log, attention_check_d128.log)"
fi
if [ "$DRY" = 1 ]; then
  notrun "7b attention timings (dry run: no GPU)"
else
  timeout 300 "${FSDP_ENV[@]}" "$ATTN" attention --batch 16 --heads 12 --head-dim 64 --seq 1024 4096 \
    >"$RES/attention_bench.log" 2>&1
  PYTHONUNBUFFERED=1 timeout 300 python3 "$ROOT/jobscripts/sdpa_reference.py" --batch 16 --heads 12 \
    --head-dim 64 --seq 1024 4096 --device cuda --dtype fp32 bf16 >"$RES/sdpa.log" 2>&1
  while read -r line; do say "7b fsdp: $line"; done < <(grep -E '^ +[0-9]+ (fused|materialized)' "$RES/attention_bench.log")
  while read -r line; do say "7b torch: $line"; done < <(grep -E '^ +[0-9]+ (fp32|bf16)' "$RES/sdpa.log")
fi

say "$FAILS check(s) failed"
cp "$SUMMARY" "$RES/"
tar -C "$RES" -czf "$DEST/logs.tar.gz" .
rm -rf "$U" "$RES"
[ "$FAILS" = 0 ]
