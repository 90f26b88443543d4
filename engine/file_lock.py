"""A blocking, cross-process lock on a file: what processes sharing a cache folder hold while one of them builds
something the others then use (an embedded Chroma store's tables and base collections, a model assembled from its
packages). An exclusive ``flock``: the kernel releases it when its holder dies, so no stale lock is ever left. Where
``fcntl`` is missing (Windows) nothing is locked: one process per cache there."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[bool]:
    """Hold ``path`` (created with its folder if missing) exclusively until the block ends; waits for a holder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on the platforms tested
        yield True
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
