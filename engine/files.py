"""File helpers: checksums for the model loaders, and writes that never leave half a file behind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write(path: str | os.PathLike, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``: a full disk or a crash
    mid-write leaves the previous file whole (and the temporary one is removed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode(encoding) if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def replace_block(path: str | os.PathLike, begin: str, end: str, text: str) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` in the text file ``path`` with ``text`` (a
    generated table in the README); ValueError naming the markers when the file lacks them."""
    p = Path(path)
    doc = p.read_text(encoding="utf-8")
    if begin not in doc or end not in doc:
        raise ValueError(f"{p}: no {begin} … {end} block to write into")
    head, rest = doc.split(begin, 1)
    atomic_write(p, f"{head}{begin}\n{text}\n{end}{rest.split(end, 1)[1]}")
