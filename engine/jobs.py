"""Background jobs: run a long engine task in a thread with progress, a stop flag and its result.

UI-agnostic: the app polls ``progress`` and calls ``stop()``; the CLI does not need it. A job outlives the browser
session that started it (a closed tab, a reload), so the process keeps a list of the jobs still running:
:func:`running_jobs` finds them by name and owner, and a page opened later follows one as its own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .progress import ItemProgress


@dataclass
class Job:
    """A task ``fn(progress, stop) -> result`` running in a daemon thread: ``progress(done, total, last)`` records
    how far it is, ``stop`` is the job's stop token (:mod:`engine.progress`), set by :meth:`stop`."""

    name: str
    fn: Callable[[ItemProgress, threading.Event], Any]
    done_count: int = 0
    total: int = 0
    last: Any = None
    result: Any = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    finished: float | None = None
    owner: str | None = None  # whose job on a shared deployment (None: the single user's)
    state: dict[str, Any] = field(default_factory=dict)  # what a page needs beside the job to follow it
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "Job":
        """Start ``fn`` in a daemon thread; returns the job, so ``Job(...).start()`` chains."""
        self._thread = threading.Thread(target=self._run, name=f"job-{self.name}", daemon=True)
        with _LIVE_LOCK:
            _LIVE[id(self)] = self
        self._thread.start()
        return self

    def _progress(self, done: int, total: int, last: Any = None) -> None:
        self.done_count, self.total, self.last = done, total, last

    def _run(self) -> None:
        try:
            self.result = self.fn(self._progress, self._stop)
        except Exception as e:  # reported to the caller, never raised in the thread
            from .errors import EngineError
            from .secrets import scrub

            self.error = scrub(str(e) if isinstance(e, EngineError) else f"{type(e).__name__}: {e}")
        finally:
            self.finished = time.time()
            with _LIVE_LOCK:
                _LIVE.pop(id(self), None)

    def stop(self) -> None:
        """Ask the task to stop: sets its stop token (cooperative; the thread is not killed)."""
        self._stop.set()

    @property
    def running(self) -> bool:
        """Whether the thread has started and not yet ended."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has been called (the task may still be winding down)."""
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the task ends, or for at most ``timeout`` seconds."""
        if self._thread is not None:
            self._thread.join(timeout)


_LIVE: dict[int, Job] = {}  # the jobs of this process still running (each leaves when its task ends)
_LIVE_LOCK = threading.Lock()


def running_jobs(name: str | None = None, owner: str | None = None, *, any_owner: bool = False) -> list[Job]:
    """The jobs still running in this process, oldest first: those called ``name`` (every name when None) of
    ``owner`` (every owner with ``any_owner``)."""
    with _LIVE_LOCK:
        jobs = list(_LIVE.values())
    return sorted(
        (j for j in jobs if j.running and (name is None or j.name == name) and (any_owner or j.owner == owner)),
        key=lambda j: j.started,
    )
