"""A deep link as the very first request to a fresh server (a bookmark after a restart) opens the page inside
app.py's navigation: the app's page titles in the sidebar, its wide layout and its sidebar sections — not the
page file alone with the pages folder's file names as the menu (Streamlit's older pages-folder mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import streamlit_server

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def test_a_deep_link_first_opens_the_page_inside_the_apps_navigation():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian chromium for the browser tests")
    from playwright.sync_api import sync_playwright

    with streamlit_server(REPO, ARTIFACTS / "deep_link_streamlit.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            pg = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            pg.set_default_timeout(120_000)
            pg.goto(url.rstrip("/") + "/sweeps")  # nothing else has run on this server yet
            pg.wait_for_selector("text=Start sweep")
            nav = pg.locator("[data-testid='stSidebarNav']")
            nav.get_by_text("Saved runs").wait_for()  # app.py's page titles, not the file names
            labels = nav.inner_text()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(ARTIFACTS / "deep_link_sweeps.png"))
            assert "Teaching mode" in labels and "Defense comparison" in labels, labels
            assert "defense comparison" not in labels and "\napp\n" not in f"\n{labels}\n", labels
            pg.get_by_role("button", name="Start sweep").wait_for()
            assert pg.get_by_text("LLM API key (litellm)").count() == 0, "the lab's key box only on the lab"
            assert pg.locator("[data-testid='stException']").count() == 0
        finally:
            browser.close()
