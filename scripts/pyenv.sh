#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The pinned Python environment of the reference tests and the peer benchmarks (transformers,
# tokenizers, tiktoken, PEFT, PyTorch 2, DeepSpeed): scripts/requirements-reference.txt installed
# from PyPI into a virtual environment outside the clone, made once and reused; remade only
# when the requirements file changes (its hash is stamped into the environment).
#   scripts/pyenv.sh          make or update it; print its python (exit 1 if it cannot be made)
#   scripts/pyenv.sh --check  print its python if it is complete and current, else exit 1
# $FSDP_PYENV chooses the folder (default ~/.cache/fsdp/pyenv). A test that needs it and finds
# none says SKIPPED with the reason (tests/e2e/lib.sh, ref_python).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REQ="$ROOT/scripts/requirements-reference.txt"
DIR=${FSDP_PYENV:-${HOME:-/root}/.cache/fsdp/pyenv}
STAMP="$DIR/.fsdp-requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)

current() { [ -x "$DIR/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; }

if [ "${1:-}" = --check ]; then
  current && { echo "$DIR/bin/python"; exit 0; }
  exit 1
fi
current && { echo "$DIR/bin/python"; exit 0; }

# python3.11 (the PyPI wheels' interpreter): the pyenv one on PATH, else Debian's with its venv
# module (python3-venv).
PY=${FSDP_PYENV_PYTHON:-$(command -v python3.11 || command -v python3)}
log="$DIR.log"
mkdir -p "$(dirname "$DIR")"
start=$(date +%s)
echo "fsdp: installing the reference environment into $DIR (PyPI, about 2 minutes and 5.6 GB once)" >&2
rm -f "$STAMP"
if ! { [ -x "$DIR/bin/python" ] || "$PY" -m venv "$DIR"; } >"$log" 2>&1 ||
  ! "$DIR/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" >>"$log" 2>&1; then
  echo "fsdp: the reference environment could not be installed: $(tail -1 "$log") (full log: $log)" >&2
  exit 1
fi
echo "$want" >"$STAMP"
echo "fsdp: reference environment ready in $(($(date +%s) - start)) s" >&2
echo "$DIR/bin/python"
