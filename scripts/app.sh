#!/usr/bin/env bash
# Quick start 1: install into .venv/ and start the app on the bundled clinic handbook.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh requirements.txt
exec .venv/bin/streamlit run app.py "$@"
