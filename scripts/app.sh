#!/usr/bin/env bash
# Quick start 1: install into .venv/ and start the app on the bundled clinic handbook.
set -euo pipefail
cd "$(dirname "$0")/.."
# local generation (llama.cpp, compiled once: ~5 min) is built in the background on a first start, so the
# first page does not wait for it; the pages that need it say how far along it is
LLAMA_IN_BACKGROUND=1 bash scripts/install.sh requirements.txt
# benchmark corpora (bioasq, healthcaremagic, enron, MIRAGE) when the data lies beside the repo
if [ -z "${RAG_PLAYGROUND_DATA_DIR:-}" ] && [ -d ../shared/corpora ]; then
  export RAG_PLAYGROUND_DATA_DIR="$(cd ../shared/corpora && pwd)"
fi
exec .venv/bin/streamlit run app.py "$@"
