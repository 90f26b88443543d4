#!/usr/bin/env bash
# Create .venv/ in the repo root and install the pinned dependencies (idempotent, cached by pip).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip wheel
# torch first and alone: the CPU wheel on disk, never a multi-GB CUDA build
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -r "${1:-requirements.txt}"
