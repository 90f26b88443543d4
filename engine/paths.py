"""Where the engine keeps caches and finds benchmark data.

* Cache: ``$RAG_PLAYGROUND_CACHE`` or ``~/.cache/rag-playground`` (embeddings, assembled
  models, the Chroma store of base indexes).
* Data dir: the ``--data-dir`` option, else ``$RAG_PLAYGROUND_DATA_DIR``. It holds the
  benchmark data laid out as in ``shared/corpora`` (``medical/``, ``queries/``, ``kb/``,
  ``targets/``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CORPORA = REPO_ROOT / "corpora"
PRESETS_DIR = REPO_ROOT / "presets"
DATA_DIR_ENV = "RAG_PLAYGROUND_DATA_DIR"
CACHE_ENV = "RAG_PLAYGROUND_CACHE"


def cache_dir(sub: str | None = None) -> Path:
    """The cache folder (``$RAG_PLAYGROUND_CACHE`` or ``~/.cache/rag-playground``), or its subfolder ``sub``;
    created if missing."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rag-playground")
    path = root / sub if sub else root
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve_data_dir(
    data_dir: str | os.PathLike | None = None, *, required: bool = False, what: str = "this dataset"
) -> Path | None:
    """The data dir from the option or the environment; checks that it exists."""
    raw = data_dir if data_dir not in (None, "") else os.environ.get(DATA_DIR_ENV)
    if not raw:
        if required:
            raise ConfigError(
                f"{what} needs the benchmark data dir: pass --data-dir DIR or set "
                f"{DATA_DIR_ENV} (e.g. to ../shared/corpora)"
            )
        return None
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ConfigError(f"data dir {str(path)!r} does not exist or is not a folder")
    return path


def data_file(rel: str, data_dir: str | os.PathLike | None = None, *, what: str) -> Path:
    """The file ``rel`` inside the benchmark data dir; a missing data dir or file is a ConfigError naming ``what``."""
    root = resolve_data_dir(data_dir, required=True, what=what)
    path = root / rel
    if not path.is_file():
        raise ConfigError(f"{what}: {rel} not found in data dir {str(root)!r}")
    return path


def writable_dir(path: str | os.PathLike, what: str = "output folder") -> Path:
    """``path`` as a folder that exists and can be written (created if needed), checked before any work
    starts; a file in the way or a read-only place is one clear error."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{what} {str(p)!r} is a file, not a folder: choose a folder (it is created if needed)")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"{what} {str(p)!r} cannot be written ({e.strerror or type(e).__name__})") from None
    return p


def writable_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """``path`` as a file that can be written: not a folder, in a folder that exists or can be made and written
    (checked before any work, so a long computation never ends on a path error)."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise ConfigError(f"{what} {str(p)!r} is a folder: give a file name (e.g. {str(p / 'tables.json')!r})")
    writable_dir(p.parent if str(p.parent) else ".", f"{what}'s folder")
    return p


def owner_dir(kind: str, owner: str | None = None) -> Path:
    """``<cache>/<kind>``, or one owner's ``<cache>/<kind>/owners/<owner>`` on a shared deployment."""
    if not owner:
        return cache_dir(kind)
    import re

    if not re.fullmatch(r"[0-9a-f]{8,64}", owner):
        raise ValueError("an owner id is a hex digest")
    return cache_dir(f"{kind}/owners/{owner}")
