#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp-bench machine writes a file fsdp-plan reads: every rate positive, the node's cores, and
# a GEMM efficiency calibrated on the deck's model; the plan from it has a positive step time,
# and a time-sliced N = 2 x cores plan is slower per step than N = cores.
source "$(dirname "$0")/lib.sh"
mpirun -np 2 "$BUILD/fsdp-bench" machine --iters 2 --calibrate inputs/default.toml \
  --out "$WORK/m.json" >"$WORK/bench.log" 2>&1 || bad "fsdp-bench machine failed: $(tail -3 "$WORK/bench.log")"
cat "$WORK/bench.log"
python3 - "$WORK/m.json" <<'PY' && ok "machine file: rates, cores and a calibrated efficiency" || bad "machine file"
import json, os, sys
m = json.load(open(sys.argv[1]))
for k in ("gemm_flops_per_rank", "gemm_flops_per_rank_bf16", "intra_node_allgather_busbw",
          "intra_node_reducescatter_busbw", "latency_s", "mem_bandwidth"):
    assert m[k] > 0, k
assert 1 <= m["cores_per_node"] <= os.cpu_count(), m["cores_per_node"]
assert 0.01 < m["gemm_efficiency"] < 2.0, m["gemm_efficiency"]
PY
cores=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cores_per_node'])" "$WORK/m.json")
plan() {
  "$BUILD/fsdp-plan" --config inputs/default.toml --set train.batch_size=16 \
    --set train.micro_batch_size=2 --ranks "$1" --nodes 1 --machine "$WORK/m.json" --json |
    python3 -c "import json,sys; print(next(p for p in json.load(sys.stdin)['plans'] if p['chosen'])['time']['step_s'])"
}
a=$(plan "$cores") b=$(plan $((2 * cores)))
python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if 0 < a < b * 1.2 and b > 0.75 * a else 1)" "$a" "$b" &&
  ok "plans from the file: $cores ranks $a s, $((2 * cores)) time-sliced ranks $b s" ||
  bad "plans from the file: $a s and $b s"

# Two emulated nodes of two ranks: the job-wide group's busbw and per-hop latency are measured,
# and a two-node plan, refused without them, now runs.
mpirun -np 4 "$BUILD/fsdp-bench" machine --iters 2 --ranks-per-node 2 --out "$WORK/m2.json" \
  >"$WORK/bench2.log" 2>&1 || bad "fsdp-bench machine on 2 nodes failed: $(tail -3 "$WORK/bench2.log")"
python3 - "$WORK/m2.json" <<'PY' && ok "two nodes: inter-node busbw and latency measured" || bad "two-node machine file"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["ranks_per_node"] == 2 and m["inter_node_busbw"] > 0 and m["inter_node_latency_s"] >= 0, m
PY
P2=(--config inputs/default.toml --set train.micro_batch_size=4 --ranks 4 --nodes 2)
"$BUILD/fsdp-plan" "${P2[@]}" --machine "$WORK/m.json" >"$WORK/plan1" 2>&1
grep -q "has no inter_node_busbw" "$WORK/plan1" && ok "a 2-node plan on a 1-node file has no step time, and says why" \
  || bad "2-node plan on a 1-node file: $(head -3 "$WORK/plan1")"
"$BUILD/fsdp-plan" "${P2[@]}" --machine "$WORK/m2.json" >"$WORK/plan2" 2>&1
grep -q "step time  *[0-9]" "$WORK/plan2" && ! grep -q "has no inter_node_busbw" "$WORK/plan2" \
  && ok "the 2-node plan predicts a step time from the 2-node file" || bad "2-node plan: $(tail -3 "$WORK/plan2")"
finish
