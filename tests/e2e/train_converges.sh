#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The default deck, shortened, learns: validation loss ends below 60% of ln(vocab_size).
# Also: the same seed twice gives bit-identical per-step losses.
source "$(dirname "$0")/lib.sh"
ARGS=(--config inputs/default.toml --set train.steps=80 --set train.warmup_steps=10 --set eval.every=40)
"$TRAIN" "${ARGS[@]}" --metrics "$WORK/a.jsonl" >"$WORK/a.log" 2>&1 || bad "run a failed: $(tail -3 "$WORK/a.log")"
tail -4 "$WORK/a.log"
python3 - "$WORK/a.jsonl" <<'PY' && ok "validation loss below 60% of ln(256)" || bad "validation loss too high"
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
evals = [r["eval_loss"] for r in recs if "eval_loss" in r]
steps = [r for r in recs if "loss" in r]
for key in ("step", "loss", "lr", "grad_norm", "tokens_per_s", "step_time_s"):
    assert all(key in r for r in steps), key
print("eval losses:", evals, "bound:", 0.6 * math.log(256))
sys.exit(0 if evals and evals[-1] < 0.6 * math.log(256) else 1)
PY
"$TRAIN" "${ARGS[@]}" --set train.steps=10 --metrics "$WORK/b.jsonl" >/dev/null 2>&1
"$TRAIN" "${ARGS[@]}" --set train.steps=10 --metrics "$WORK/c.jsonl" >/dev/null 2>&1
python3 - "$WORK/b.jsonl" "$WORK/c.jsonl" <<'PY' && ok "same seed, bit-identical losses" || bad "same seed gave different losses"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:3])
print("losses:", a[:3], "...")
sys.exit(0 if a == b and len(a) == 10 else 1)
PY
finish
