"""Axes of counts (rounds, queries, ranks): whole-number ticks only.

Plotly's automatic ticks on a short integer axis fall on halves; with ``tickformat="d"`` those are printed rounded,
and the axis reads "1 1 2 2 3" under points at 1, 2, 3. A fixed step from 1, 2, 5, 10, 20, 50… (at most
``most`` ticks) keeps every label on a whole number.
"""

from __future__ import annotations

from typing import Any


def whole_ticks(largest: float, most: int = 10) -> dict[str, Any]:
    """Layout settings of an axis that counts up to ``largest``: integer labels at a 1-2-5 step."""
    magnitude = 1
    while True:
        for m in (1, 2, 5):
            if max(largest, 1) / (m * magnitude) <= most:
                return {"tickformat": "d", "tick0": 0, "dtick": m * magnitude}
        magnitude *= 10
