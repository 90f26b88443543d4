"""One convention for long work: a progress callback and a stop token.

Three progress shapes, one per kind of work, all named here (nothing else in the engine declares one):

* :data:`Progress` ``(stage, done, total)`` — one operation advancing (embedding batches, indexing, rounds);
* :data:`ItemProgress` ``(done, total, last)`` — a job finishing items one after another (a background
  :class:`~engine.jobs.Job`, a sweep's finished cells): ``last`` is the item just finished (a row, a result);
* :data:`CellProgress` ``(index, stage, done, total)`` — work inside cell ``index`` of a grid whose cells may run
  at once (:func:`engine.executors.run_cells`: each cell's own ``Progress``, tagged with its index).

``Progress(stage, done, total)`` is called as work advances (a CLI prints it, the app draws a bar), by every
long operation (embedding batches, indexing, rounds, cells: a Ray cell's reporter has the same ``progress``, and
is the cell's stop token). Every long operation takes
its stop token as ``stop=``: anything with ``is_set()`` (a ``threading.Event``, a background job's flag); None
never stops. Work checks it between steps (:func:`stopped`) and ends cleanly, keeping what it finished.
:func:`stop_flag` adapts a plain callable for code that has one.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

Progress = Callable[[str, int, int], None]
ItemProgress = Callable[[int, int, Any], None]
CellProgress = Callable[[int, str, int, int], None]


class StopToken(Protocol):
    """Anything that says whether to stop (``threading.Event`` is one)."""

    def is_set(self) -> bool:
        """Whether to stop now."""


class StopFlag:
    """A stop token over a ``should_stop()`` callable (None: never stop)."""

    def __init__(self, should_stop: Optional[Callable[[], bool]] = None) -> None:
        self._fn = should_stop or (lambda: False)

    def is_set(self) -> bool:
        """Whether the callable asks to stop now."""
        return bool(self._fn())


def stop_flag(should_stop: Optional[Callable[[], bool]]) -> StopFlag:
    """The stop token of a ``should_stop()`` callable."""
    return StopFlag(should_stop)


def stopped(stop: Optional[StopToken]) -> bool:
    """Whether the stop token (None: never) asks to stop now."""
    return stop is not None and bool(stop.is_set())
