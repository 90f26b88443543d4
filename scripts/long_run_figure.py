"""The results page's CRR-vs-rounds figure of a long comparison, as a PNG (a developer script; needs Playwright and a
Chromium, which the test requirements install):

    .venv/bin/python scripts/long_run_figure.py results/ragfort-paper-scale-hcm

writes ``<folder>/crr_vs_rounds.png`` from the runs under ``<folder>/runs`` (finished or not): the same figure
the Defense comparison page draws for a results folder (``engine.plots.defenses.crr_with_intervals``), rendered by
plotly.js in headless Chromium and screenshotted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analysis.scale_report import read_runs  # noqa: E402
from engine.plots.defenses import crr_with_intervals  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--png", help="output file (default: <folder>/crr_vs_rounds.png)")
    ap.add_argument("--width", type=int, default=1000)
    args = ap.parse_args(argv)
    fig = crr_with_intervals(read_runs(args.folder))
    fig.update_layout(width=args.width, template="plotly_white")
    out = Path(args.png or Path(args.folder) / "crr_vs_rounds.png")
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(headless=True, args=ARGS, **({"executable_path": chromium} if chromium else {}))
        page = browser.new_page(viewport={"width": args.width + 40, "height": 600}, device_scale_factor=1.5)
        page.set_content(fig.to_html(include_plotlyjs=True, full_html=True, config={"staticPlot": True}))
        page.wait_for_selector(".main-svg")
        page.locator(".plotly-graph-div").screenshot(path=str(out))
        browser.close()
    print(out)


if __name__ == "__main__":
    main()
