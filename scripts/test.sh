#!/usr/bin/env bash
# Quick start 2: install into .venv/ and run the test suite (real models, real Chroma). Without options: every test
# but the long end-to-end ones (marked slow); --all runs those too (what CI runs). Other arguments go to pytest.
set -euo pipefail
if [ "${1:-}" = "--all" ]; then
  export RAG_PLAYGROUND_TESTS=all
  shift
fi
cd "$(dirname "$0")/.."
# LLAMA_FALLBACK: the tests compare the portable AVX2 build with the installed one
LLAMA_FALLBACK=1 bash scripts/install.sh requirements-dev.txt
# the real-browser test drives Debian's chromium (no browser download)
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: install Debian's chromium (sudo apt-get install chromium) for the browser test" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# the benchmark data lies beside the repo (../shared/corpora) unless told otherwise
if [ -z "${RAG_PLAYGROUND_DATA_DIR:-}" ] && [ -d ../shared/corpora ]; then
  export RAG_PLAYGROUND_DATA_DIR="$(cd ../shared/corpora && pwd)"
fi
# two test processes (pytest-xdist, each file whole in one of them): one process leaves about a quarter of two
# cores idle (imports, subprocess start-ups, a browser's waits), and the local models take one thread per free core
# (engine/cpu_share.py), so two share the machine without the spinning slowdown. RAG_PLAYGROUND_TEST_WORKERS=1 runs
# them in one process; more workers only help on more cores. The files go out longest first, as tests/conftest.py
# orders them from tests/file_times.json (xdist's own order, most tests first, left a long file for the end).
WORKERS="${RAG_PLAYGROUND_TEST_WORKERS:-2}"
case "$WORKERS" in
  ''|*[!0-9]*) echo "RAG_PLAYGROUND_TEST_WORKERS must be a whole number of processes (got '$WORKERS')" >&2; exit 2 ;;
esac
if [ "$WORKERS" -gt 1 ]; then
  set -- -n "$WORKERS" --dist loadfile --no-loadscope-reorder "$@"
else
  set -- -p no:xdist "$@"
fi
exec .venv/bin/python -m pytest -q "$@"
