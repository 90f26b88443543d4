"""Bounded numbers in forms, without Streamlit's silent refusal.

Streamlit's ``number_input`` with ``min_value``/``max_value`` answers a typed value outside its bounds with a red
icon only, and the form's submit button then does nothing at all — the user presses *Start* and nothing happens.
So the widgets here take no bounds: the help says the allowed range, and a value outside it is named in one line
when the form is submitted (:meth:`NumberFields.check`), before anything starts.
"""

from __future__ import annotations

from typing import Any

from engine.errors import ConfigError
from engine.params import out_of_range


def with_bounds(text: str | None, lo: Any, hi: Any) -> str | None:
    """``text`` with the allowed range appended: "… (allowed: from 1 to 500)" (``None`` when there is neither)."""
    if lo is None and hi is None:
        return text or None
    bound = f"from {lo} to {hi}" if lo is not None and hi is not None else (f"≥ {lo}" if hi is None else f"≤ {hi}")
    return f"{text or ''} (allowed: {bound})".strip()


class NumberFields:
    """Number inputs of one form: ``fields(box, label, lo, hi, value, …)`` draws one (whole numbers when ``value``
    is an int) and remembers a value outside its range; ``check()`` after the submit raises them in one line."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(
        self, box: Any, label: str, lo: Any, hi: Any, value: Any, *, help: str | None = None, **kw: Any
    ) -> Any:
        whole = isinstance(value, int) and not isinstance(value, bool)
        if whole:
            kw.setdefault("step", 1)
        got = box.number_input(label, value=value, help=with_bounds(help, lo, hi), **kw)
        got = int(got) if whole else got
        problem = out_of_range(label, got, lo, hi)
        if problem:
            self.problems.append(problem)
        return got

    def check(self) -> None:
        """Raise a :class:`ConfigError` naming every value outside its range (nothing when all are inside)."""
        if self.problems:
            raise ConfigError("; ".join(self.problems))
