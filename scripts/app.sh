#!/usr/bin/env bash
# Quick start 1: install into .venv/ and start the app on the bundled clinic handbook.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh requirements.txt
# benchmark corpora (bioasq, healthcaremagic, enron, MIRAGE) when the data lies beside the repo
if [ -z "${RAG_PLAYGROUND_DATA_DIR:-}" ] && [ -d ../shared/corpora ]; then
  export RAG_PLAYGROUND_DATA_DIR="$(cd ../shared/corpora && pwd)"
fi
exec .venv/bin/streamlit run app.py "$@"
