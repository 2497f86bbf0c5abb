#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Plots a scaling study (results.jsonl from jobscripts/scaling_study.sh): speedup and parallel
# efficiency vs N with the ideal line, per-rank memory by category vs N per strategy, and the
# step-time breakdown (compute, exposed communication, optimizer) stacked.
#   /usr/bin/python3 jobscripts/plot_scaling.py RESULTS.jsonl OUT_DIR
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CATEGORIES = ["param_shard", "gathered_params", "grads", "optimizer_state", "activations",
              "comm_buffers"]


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def series(rows, mode, strategy):
    return sorted((r for r in rows if r["mode"] == mode and r["strategy"] == strategy),
                  key=lambda r: r["ranks"])


def plot_speedup(rows, mode, out, machine):
    strategies = sorted({r["strategy"] for r in rows})
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for s in strategies:
        pts = series(rows, mode, s)
        if not pts:
            continue
        n = [p["ranks"] for p in pts]
        base = pts[0]
        if mode == "strong":  # same work: speedup is the time ratio
            speedup = [base["step_time_s"] / p["step_time_s"] for p in pts]
        else:  # N times the work: speedup is the throughput ratio
            speedup = [p["tokens_per_s"] / base["tokens_per_s"] for p in pts]
        ax1.plot(n, speedup, "o-", label=s)
        ax2.plot(n, [sp / (k / n[0]) for sp, k in zip(speedup, n)], "o-", label=s)
    nmax = max(r["ranks"] for r in rows)
    ax1.plot([1, nmax], [1, nmax], "k--", label="ideal")
    ax2.axhline(1.0, color="k", linestyle="--", label="ideal")
    ax1.set(xlabel="ranks N", ylabel="speedup", title=f"{mode} scaling: speedup")
    ax2.set(xlabel="ranks N", ylabel="parallel efficiency", ylim=(0, 1.2),
            title=f"{mode} scaling: efficiency")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.suptitle(machine, fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{mode}_speedup.png"), dpi=110)
    plt.close(fig)


def plot_memory(rows, out, machine):
    strategies = sorted({r["strategy"] for r in rows})
    fig, axes = plt.subplots(1, len(strategies), figsize=(3.2 * len(strategies), 4), sharey=True)
    for ax, s in zip(axes, strategies):
        pts = series(rows, "strong", s)
        n = [str(p["ranks"]) for p in pts]
        bottom = [0.0] * len(pts)
        for c in CATEGORIES:
            mib = [p["mem_peak_by_category"].get(c, 0) / 2**20 for p in pts]
            ax.bar(n, mib, bottom=bottom, label=c)
            bottom = [b + m for b, m in zip(bottom, mib)]
        ax.set(title=s, xlabel="ranks N")
    axes[0].set_ylabel("per-rank peak by category (MiB)")
    axes[-1].legend(fontsize=7)
    fig.suptitle(f"strong scaling, per-rank memory — {machine}", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "memory_by_category.png"), dpi=110)
    plt.close(fig)


def plot_breakdown(rows, out, machine):
    pts = sorted((r for r in rows if r["mode"] == "strong"),
                 key=lambda r: (r["strategy"], r["ranks"]))
    labels = [f'{p["strategy"]}\nN={p["ranks"]}' for p in pts]
    compute = [p["compute_s"] for p in pts]
    exposed = [p["comm_exposed_s"] for p in pts]
    opt = [p["optimizer_s"] for p in pts]
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(pts)), 4))
    ax.bar(labels, compute, label="compute")
    ax.bar(labels, exposed, bottom=compute, label="exposed communication")
    ax.bar(labels, opt, bottom=[a + b for a, b in zip(compute, exposed)], label="optimizer")
    ax.set(ylabel="seconds per step", title=f"step-time breakdown (strong scaling) — {machine}")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "step_breakdown.png"), dpi=110)
    plt.close(fig)


def main():
    rows = load(sys.argv[1])
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    machine = rows[0].get("machine", "")
    for mode in ("strong", "weak"):
        if any(r["mode"] == mode for r in rows):
            plot_speedup(rows, mode, out, machine)
    plot_memory(rows, out, machine)
    plot_breakdown(rows, out, machine)
    print("plots in", out)


if __name__ == "__main__":
    main()
