"""One writer per output folder: a resumable sweep, comparison, audit or run holds its folder while it runs.

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
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import EngineError

LOCK_NAME = ".running.lock"
_held: set[str] = set()
_guard = threading.Lock()
COLLECT_EVERY_S = 30.0  # is_busy collects garbage at most this often (~0.3 s with the models loaded)
_collected_at = 0.0


class FolderBusyError(EngineError):
    """Another run is writing the same output folder."""


class FolderLock:
    """The lock of one folder, held from :meth:`acquire` to :meth:`release` (see the module docstring);
    ``busy`` is the message of the :class:`FolderBusyError` a second writer gets."""

    def __init__(self, folder: str | Path, busy: str) -> None:
        self.folder = Path(folder)
        self.busy = busy
        self._file = None
        self._key = ""

    def acquire(self) -> Path:
        """Take the folder (created if missing), or raise :class:`FolderBusyError` when another writer, in this
        process or another, holds it."""
        from .paths import writable_dir

        path = writable_dir(self.folder).resolve()  # a file in the way or a read-only place: one clear error first
        key = str(path)
        busy = self.busy.format(path=path)
        with _guard:
            held = key in _held
        if held:  # perhaps by a writer nobody references any more (a closed browser session): collect it
            import gc

            gc.collect()
        with _guard:
            if key in _held:
                raise FolderBusyError(busy)
            _held.add(key)
        self._key = key
        try:
            f = self._file = open(path / LOCK_NAME, "a+")
            try:
                import fcntl
            except ImportError:  # pragma: no cover - Windows: the in-process check only
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
        except BaseException:
            self.release()
            raise
        return path

    def __del__(self) -> None:
        self.release()

    def release(self) -> None:
        """Let the folder go (safe to call again; also when the holder is garbage-collected)."""
        if self._file is not None:
            self._file.close()  # releases the flock
            self._file = None
        if self._key:
            with _guard:
                _held.discard(self._key)
            self._key = ""


def is_busy(folder: str | Path) -> bool:
    """Whether a writer holds ``folder`` now (a live or resumed run in this process, e.g. another browser
    session's, or a run of another process), without taking it: a saved-runs list tells a run still being
    written from one that stopped. Where ``fcntl`` does not exist only this process's writers are seen."""
    global _collected_at
    path = Path(folder).resolve()
    with _guard:
        held = str(path) in _held
    if held and time.monotonic() - _collected_at > COLLECT_EVERY_S:
        # perhaps by a run nobody references any more (a closed browser session's, in a reference cycle): collect,
        # at most every COLLECT_EVERY_S (pages list runs on every rerun), outside the guard its release takes
        import gc

        _collected_at = time.monotonic()
        gc.collect()
        with _guard:
            held = str(path) in _held
    if held:
        return True
    if not (path / LOCK_NAME).is_file():
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    try:
        with open(path / LOCK_NAME, "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)  # released when the file closes
    except OSError:
        return True
    return False


@contextmanager
def exclusive_folder(folder: str | Path, what: str) -> Iterator[Path]:
    """Hold ``folder`` (created if missing) for one sweep, comparison or audit; raises :class:`FolderBusyError`
    naming ``what`` (e.g. "this sweep") when another writer, in this process or another, holds it."""
    lock = FolderLock(
        folder,
        f"{what} is already running into {{path}} (another session or process started it); "
        f"wait for it to finish or stop it there, then start again: it resumes from the cells "
        f"that one saved",
    )
    path = lock.acquire()
    try:
        yield path
    finally:
        lock.release()


def run_lock(folder: str | Path, run_id: str) -> FolderLock:
    """The lock of one run's folder (a live run, or a resume): a second writer stops at once with one line."""
    return FolderLock(
        folder,
        f"run {run_id} is already being written (a resume or a live run in another session "
        f"or process holds {{path}}); wait for it to stop, then resume it",
    )
