# SPDX-License-Identifier: MIT
"""Training and validation loss of two fsdp-train --metrics files (AdamW, Muon) into one PNG."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    steps, loss, vsteps, vloss = [], [], [], []
    for line in open(path):
        j = json.loads(line)
        if "eval_loss" in j:
            vsteps.append(j["step"])
            vloss.append(j["eval_loss"])
        elif "loss" in j:
            steps.append(j["step"])
            loss.append(j["loss"])
    return steps, loss, vsteps, vloss


def main(adamw, muon, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for path, name, color in ((adamw, "AdamW", "tab:blue"), (muon, "Muon (+AdamW)", "tab:red")):
        s, l, vs, vl = read(path)
        ax.plot(s, l, color=color, alpha=0.35, lw=1, label=f"{name}: training loss")
        ax.plot(vs, vl, color=color, marker="o", lw=2, label=f"{name}: validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_ylim(1.2, 4.0)
    ax.set_title("inputs/default.toml, 200 steps, np 2 (zero3)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
