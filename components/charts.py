"""Plotly charts in narrow columns: a short toolbar, so it does not cover the chart's title."""

from __future__ import annotations

from typing import Any

# Plotly's toolbar sits over the top right of a chart; in a column a third or half of the page wide its nine buttons
# reach across the title. A narrow chart keeps saving a picture and resetting the view (Streamlit adds full screen).
NARROW_TOOLBAR: dict[str, Any] = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["zoom2d", "pan2d", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"],
}


def narrow_chart(container: Any, fig: Any, key: str) -> None:
    """``fig`` in ``container`` (a column) at its full width, with the short toolbar."""
    container.plotly_chart(fig, width="stretch", key=key, config=NARROW_TOOLBAR)
