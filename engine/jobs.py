"""Background jobs: run a long engine task in a thread with progress, a stop flag and its result.

UI-agnostic: the app polls ``progress`` and calls ``stop()``; the CLI does not need it.
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
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "Job":
        """Start ``fn`` in a daemon thread; returns the job, so ``Job(...).start()`` chains."""
        self._thread = threading.Thread(target=self._run, name=f"job-{self.name}", daemon=True)
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
