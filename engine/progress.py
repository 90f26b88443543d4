"""One convention for long work: a progress callback and a stop token.

``Progress(stage, done, total)`` is called as work advances (a CLI prints it, the app draws a bar), by every
long operation (embedding batches, indexing, rounds, cells: a Ray cell's reporter has the same ``progress``, and
is the cell's stop token). Every long operation takes
its stop token as ``stop=``: anything with ``is_set()`` (a ``threading.Event``, a background job's flag); None
never stops. Work checks it between steps (:func:`stopped`) and ends cleanly, keeping what it finished.
:func:`stop_flag` adapts a plain callable for code that has one.
"""

from __future__ import annotations

from typing import Callable, Optional, Protocol

Progress = Callable[[str, int, int], None]


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
