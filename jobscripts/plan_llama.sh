#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The planner's per-rank memory and step for the decks (Llama 3.2 1B, SmolLM2 135M; with MOE=1
# the mixtures of experts, Qwen3-30B-A3B and Mixtral-8x7B, MFU on active parameters, with expert
# parallelism EP, default 8: ddp's shard group of one cannot take it, so its column is n/a) on
# 8 to 1024 GPUs of a preset machine (MACHINE, default h100), four sequences per rank per step:
# each strategy's peak device memory, and the chosen (*) strategy's step time, tokens/s, MFU
# and scaling efficiency. Usage: [MOE=1] jobscripts/plan_llama.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
MACHINE=${MACHINE:-h100}
cd "$(dirname "$0")/.."
ROW='
import json, sys
j = json.load(sys.stdin)
gib = lambda p: "%.1f" % (p["memory"]["device_total"] / 2**30) if "memory" in p else "n/a"
peaks = "/".join(gib(p) for p in j["plans"] if p["strategy"] != "hybrid")
c = next(p for p in j["plans"] if p["chosen"])
t, s = c["time"], j["setup"]
print("%6d %6d  %-28s %-9s %9.1f %11.4g %5.1f%% %6.3f" % (s["ranks"], s["nodes"], peaks, c["strategy"],
      t["step_s"] * 1e3, t["tokens_per_s"], t["mfu"] * 100, t["scaling_efficiency"]))'
DECKS=(inputs/llama3_1b.toml inputs/smollm2_135m.toml)
EXTRA=()
if [ "${MOE:-0}" = 1 ]; then
  DECKS=(inputs/qwen3_30b_a3b.toml inputs/mixtral_8x7b.toml)
  EXTRA=(--set "fsdp.expert_parallel=${EP:-8}")
fi
for deck in "${DECKS[@]}"; do
  "$BUILD/fsdp-plan" --config "$deck" --ranks 8 --machine "$MACHINE" | head -1
  printf '%6s %6s  %-28s %-9s %9s %11s %6s %6s\n' ranks nodes "peak GiB ddp/zero1/zero2/zero3" chosen "step ms" "tokens/s" MFU eff
  for r in 8 16 64 256 1024; do
    "$BUILD/fsdp-plan" --config "$deck" --ranks "$r" --machine "$MACHINE" \
      --set train.batch_size=$((4 * r)) "${EXTRA[@]}" --json | /usr/bin/python3 -c "$ROW"
  done
  echo
done
