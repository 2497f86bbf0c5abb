#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The spread behind test_mixed_precision's bound, measured on this machine: for each seed, the
# statistic the test uses (the largest relative difference of the trailing 10-step mean loss)
# between a bf16 run and the fp32 run of the same seed, for every GEMM path this CPU has, and
# between two fp32 runs that differ only in their seed (the spread the test measures and bounds
# bf16 by) or only in OpenBLAS's kernel (a summation order).
#   scripts/bf16_spread.py [BUILD_DIR] [--seeds 5] [--steps 200] [--ranks 1]
import argparse
import json
import os
import subprocess
import sys
import tempfile

WINDOW = 10


def curve_gap(a, b):
    """Largest |mean_w(b) - mean_w(a)| / mean_w(a) over trailing windows of WINDOW steps."""
    worst = 0.0
    for end in range(WINDOW, len(a) + 1):
        ma = sum(a[end - WINDOW:end]) / WINDOW
        mb = sum(b[end - WINDOW:end]) / WINDOW
        worst = max(worst, abs(mb - ma) / ma)
    return worst


def run(build, ranks, steps, seed, env_extra, sets, tmp):
    metrics = os.path.join(tmp, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = ["mpirun", "-np", str(ranks), os.path.join(build, "fsdp-train"),
           "--config", "inputs/default.toml", "--set", f"train.steps={steps}",
           "--set", "train.batch_size=24", "--set", "train.micro_batch_size=2",
           "--set", "train.peak_tflops=1", "--set", "eval.every=0", "--set", "eval.sequences=0",
           "--set", f"train.seed={seed}", "--metrics", metrics]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    for k, v in env_extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        return [json.loads(l)["loss"] for l in f if '"loss"' in l]


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":")[1].split())
    return set()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build", nargs="?", default="build")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--ranks", type=int, default=1)
    a = p.parse_args()
    flags = cpu_flags()
    bf16 = ["fsdp.mixed_precision=bf16", "fsdp.reduce_dtype=bf16", "fsdp.gemm_dtype=bf16"]
    fp32_paths = {"fp32 Haswell": {"OPENBLAS_CORETYPE": "Haswell"}}
    if "avx512f" in flags and "avx512bw" in flags:
        fp32_paths["fp32 SkylakeX"] = {"OPENBLAS_CORETYPE": "SkylakeX"}
    bf16_paths = {"bf16 GEMMs": {"OPENBLAS_CORETYPE": "Haswell"}}
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        bf16_paths["bf16 GEMMs, bf16 units"] = bf16_paths.pop("bf16 GEMMs")
        bf16_paths["bf16 GEMMs, AVX512_CORE"] = {"OPENBLAS_CORETYPE": "Haswell",
                                                 "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = {}
        for seed in range(1, a.seeds + 2):  # one more: the last seed's pair
            base[seed] = run(a.build, a.ranks, a.steps, seed, fp32_paths["fp32 Haswell"], [], tmp)
        for seed in range(1, a.seeds + 1):
            row = {"seed": seed, "fp32 next seed": curve_gap(base[seed], base[seed + 1])}
            if "fp32 SkylakeX" in fp32_paths:
                row["fp32 SkylakeX"] = curve_gap(
                    base[seed], run(a.build, a.ranks, a.steps, seed, fp32_paths["fp32 SkylakeX"],
                                    [], tmp))
            for name, env in bf16_paths.items():
                row[name] = curve_gap(base[seed], run(a.build, a.ranks, a.steps, seed, env, bf16, tmp))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    cols = [c for c in rows[0] if c != "seed"]
    print(f"# {a.steps} steps, {a.ranks} rank(s), default deck (batch 24, micro 2); each cell the "
          f"largest relative gap of the {WINDOW}-step mean loss against fp32 Haswell, same seed")
    print("| seed | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for r in rows:
        print(f"| {r['seed']} | " + " | ".join(f"{100 * r[c]:.2f}%" for c in cols) + " |")
    for c in cols:
        v = sorted(r[c] for r in rows)
        print(f"# {c}: min {100 * v[0]:.2f}%, median {100 * v[len(v) // 2]:.2f}%, "
              f"max {100 * v[-1]:.2f}%")
    for c in cols:
        if c.startswith("bf16"):
            ratio = sorted(r[c] / r["fp32 next seed"] for r in rows)
            print(f"# {c} / fp32 next seed: min {ratio[0]:.2f}, median {ratio[len(ratio) // 2]:.2f}, "
                  f"max {ratio[-1]:.2f}")


if __name__ == "__main__":
    main()
