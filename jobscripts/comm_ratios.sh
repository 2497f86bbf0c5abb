#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsdp-bench comm REPEATS times on RANKS ranks; prints, per collective and size, the median over
# runs of MPI's time / ours (with the min-max) and our median time.
#   jobscripts/comm_ratios.sh [extra fsdp-bench comm options]
# Environment: RANKS (2), REPEATS (5), FSDP_BUILD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FSDP_BUILD:-$ROOT/build}
RANKS=${RANKS:-2}
REPEATS=${REPEATS:-5}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for r in $(seq "$REPEATS"); do
  mpirun --oversubscribe -np "$RANKS" "$BUILD/fsdp-bench" comm --json "$DIR/run$r.json" "$@" >/dev/null
done
python3 - "$DIR" "$RANKS" "$REPEATS" <<'PY'
import glob, json, statistics, sys
d, ranks, repeats = sys.argv[1:]
ratio, ours = {}, {}
for f in sorted(glob.glob(f"{d}/run*.json")):
    for r in json.load(open(f))["results"]:
        key = (r["op"], r["size_bytes"])
        if r["impl"] == "ours":
            ratio.setdefault(key, []).append(r["ratio_to_mpi"])
            ours.setdefault(key, []).append(r["time_us"])
print(f"# {ranks} ranks, {repeats} runs: MPI time / ours, median (min-max); our median time")
print(f"{'op':>15} {'size(B)':>10} {'ratio':>7} {'(min-max)':>13} {'ours(us)':>10}")
for (op, size), v in ratio.items():
    print(f"{op:>15} {size:>10} {statistics.median(v):7.2f} ({min(v):.2f}-{max(v):.2f})"
          f" {statistics.median(ours[(op, size)]):10.1f}")
PY
