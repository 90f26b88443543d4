"""One writer per output folder: a resumable sweep or comparison holds its folder while it runs.

Two runs that resume into the same folder (two browser sessions starting the same grid, or the app and
the CLI on the same ``--out``) would each rewrite the folder's files from their own rows and lose the
other's cells. The second one now stops at once with a clear error instead. The lock is an ``flock`` on
``<folder>/.running.lock`` (released by the operating system when the process ends, so a killed run
leaves nothing stale) plus an in-process set, since Streamlit sessions are threads of one process.
Where ``fcntl`` does not exist (Windows) only the in-process check applies.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import EngineError

LOCK_NAME = ".running.lock"
_held: set[str] = set()
_guard = threading.Lock()


class FolderBusyError(EngineError):
    """Another run is writing the same output folder."""


@contextmanager
def exclusive_folder(folder: str | Path, what: str) -> Iterator[Path]:
    """Hold ``folder`` (created if missing) for one run; raises :class:`FolderBusyError` naming ``what``
    (e.g. "this sweep") when another run, in this process or another, holds it."""
    from .paths import writable_dir
    path = writable_dir(folder).resolve()      # a file in the way or a read-only place: one clear error first
    key = str(path)
    busy = (f"{what} is already running into {path} (another session or process started it); wait for it to "
            f"finish or stop it there, then start again: it resumes from the cells that one saved")
    with _guard:
        if key in _held:
            raise FolderBusyError(busy)
        _held.add(key)
    f = None
    try:
        f = open(path / LOCK_NAME, "a+")
        try:
            import fcntl
        except ImportError:       # pragma: no cover - Windows: the in-process check only
            fcntl = None
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise FolderBusyError(busy) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield path
    finally:
        if f is not None:
            f.close()             # releases the flock
        with _guard:
            _held.discard(key)
