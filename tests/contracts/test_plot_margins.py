"""Every chart of engine.plots sets its top margin or has a title: plotly keeps 100 px for a title by default, which
is blank space above an untitled chart in the app (seen on the saved-runs comparison)."""

import ast
from pathlib import Path

PLOTS = Path(__file__).resolve().parents[2] / "engine" / "plots"


def _layout_keywords(fn: ast.FunctionDef) -> set[str] | None:
    """The keywords of the function's ``update_layout`` calls (None when it calls none)."""
    calls = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update_layout"
    ]
    if not calls:
        return None
    return {k.arg for c in calls for k in c.keywords if k.arg}


def test_every_chart_sets_its_top_margin_or_has_a_title():
    missing = []
    for path in sorted(PLOTS.glob("*.py")):
        for fn in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                continue
            keywords = _layout_keywords(fn)
            if keywords is not None and not keywords & {"margin", "title"}:
                missing.append(f"{path.name}:{fn.name}")
    assert not missing, f"charts left with plotly's 100 px title margin: {missing}"
