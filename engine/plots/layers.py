"""Lines that may coincide, drawn so that each stays visible.

Overlaid curves often share their points — ASR@2 equals ASR@5 once every poison ranks second, two runs of the same
attack leak the same chunks in their first rounds — and a line drawn later hides an earlier one of the same shape
entirely (Streamlit's palette starts with two blues, which makes it worse). Each line here is thinner than the one
drawn before it, with its own dash and an open marker that rings the markers under it: where lines coincide, every
one of them still shows around the next.
"""

from __future__ import annotations

from typing import Any

DASHES = ("solid", "dash", "dot", "dashdot")
SYMBOLS = ("circle-open", "diamond-open", "square-open", "triangle-up-open")


def layer_style(i: int, n: int) -> dict[str, Any]:
    """``line`` and ``marker`` settings of line ``i`` of ``n`` drawn in order: the first widest and largest."""
    width = 1.5 + 1.5 * (n - 1 - i)
    return {
        "line": {"dash": DASHES[i % len(DASHES)], "width": width},
        "marker": {"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 6 + 3 * (n - 1 - i), "line": {"width": 2}},
    }
