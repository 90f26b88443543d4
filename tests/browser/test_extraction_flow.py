"""Extraction lab in a real browser: `streamlit run app.py` driven by headless chromium through Playwright.

Flow: Extraction lab -> load the quick-extraction-demo preset (3 rounds, SmolLM2-135M; answers and
reflections shortened for a small shared CPU) -> switch the system-prompt defense on -> prepare ->
Step x3 -> the CRR metric, the coverage map and the leakage curves render. Screenshots:
tests/artifacts/extraction_*.png.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

from helpers import streamlit_server

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
SLOW = 300_000  # ms: a round of generation on a busy 2-core box
QUICK = 30_000
BUSY = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"
ERRORS = '[data-testid="stException"]'


@pytest.fixture(scope="module")
def server():
    cache = tempfile.mkdtemp(prefix="extraction-flow-")
    try:
        with streamlit_server(REPO, ARTIFACTS / "extraction_streamlit.log", {"RAG_PLAYGROUND_CACHE": cache}) as url:
            yield url
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def browser_page(server):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            pg = b.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            pg.set_default_timeout(QUICK)
            pg.goto(server, wait_until="domcontentloaded")
            yield pg
        finally:
            b.close()


def idle(pg, timeout: int = SLOW, quiet: float = 1.2) -> None:
    """Wait until the app has not been running for ``quiet`` seconds, then fail on any exception box."""
    end = time.monotonic() + timeout / 1000
    calm = None
    while True:
        if pg.evaluate(BUSY):
            calm = None
            pg.wait_for_function(f"() => !({BUSY})()", timeout=max(1, int((end - time.monotonic()) * 1000)))
        calm = calm or time.monotonic()
        if time.monotonic() - calm >= quiet:
            break
        if time.monotonic() > end:
            raise AssertionError("app still running")
        pg.wait_for_timeout(100)
    boxes = pg.locator(ERRORS)
    assert boxes.count() == 0, "exception shown:\n" + "\n".join(boxes.all_inner_texts())


def snap(pg, name: str) -> None:
    """Full-height screenshot (Streamlit scrolls inside its own container: grow the viewport first)."""
    size = pg.viewport_size
    h = pg.evaluate("() => Math.max(...['[data-testid=\"stMain\"]', '[data-testid=\"stAppViewContainer\"]']"
                    ".map(s => document.querySelector(s)?.scrollHeight || 0))")
    pg.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(h), 8000))})
    pg.wait_for_timeout(500)
    pg.screenshot(path=str(ARTIFACTS / name), full_page=True)
    pg.set_viewport_size(size)


def test_extraction_flow(browser_page):
    pg = browser_page
    (ARTIFACTS / "extraction_failure.png").unlink(missing_ok=True)
    try:
        flow(pg)
    except BaseException:
        try:
            pg.screenshot(path=str(ARTIFACTS / "extraction_failure.png"), full_page=True)
        except Exception:  # noqa: BLE001 - keep the real failure
            pass
        raise


def flow(pg) -> None:
    from playwright.sync_api import expect

    main = pg.locator('[data-testid="stMain"]')
    side = pg.locator('[data-testid="stSidebar"]')
    # the app's own navigation replaces Streamlit's pages/ listing once app.py has run
    expect(pg.get_by_role("heading", name="RAG Attack & Defense Playground")).to_be_visible(timeout=SLOW)
    idle(pg)
    link = side.get_by_role("link", name="Extraction lab", exact=True)
    expect(link).to_be_visible(timeout=SLOW)
    link.click()
    expect(main.get_by_role("heading", name="Extraction lab")).to_be_visible(timeout=SLOW)
    idle(pg)
    expect(side.get_by_label("LLM API key (litellm)", exact=True)).to_be_visible(timeout=QUICK)

    # preset: quick-extraction-demo (rag-thief, 3 rounds, SmolLM2-135M); shorter answers for a busy CPU
    pg.get_by_role("button", name="Load preset").click()
    idle(pg)
    tokens = pg.get_by_label("Tokens per answer", exact=True)
    expect(tokens).to_have_value("160")
    expect(pg.get_by_label("Rounds (query budget)", exact=True)).to_have_value("3")
    tokens.fill("24")
    tokens.press("Tab")
    reflect = pg.get_by_label("Reflect tokens", exact=True)
    reflect.fill("16")
    reflect.press("Tab")
    pg.get_by_text("system-prompt", exact=True).click()
    expect(pg.get_by_role("switch", name="system-prompt")).to_be_checked()
    snap(pg, "extraction_01_setup.png")

    pg.get_by_role("button", name="Prepare attack").click()
    step = pg.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_visible(timeout=SLOW)
    expect(main.get_by_text("0/3 rounds")).to_be_visible(timeout=SLOW)
    expect(pg.get_by_text("vs system-prompt").first).to_be_visible()
    idle(pg)
    snap(pg, "extraction_02_prepared.png")

    for n in range(1, 4):
        expect(step).to_be_enabled(timeout=SLOW)
        step.click()
        done = pg.get_by_text(f"{n}/3 rounds")
        expect(done.first.or_(pg.locator(ERRORS)).first).to_be_visible(timeout=SLOW)
        idle(pg)
        expect(done.first).to_be_visible()
    expect(pg.get_by_text("run complete")).to_be_visible()
    expect(main.get_by_text("CRR", exact=True).first).to_be_visible()
    crr = main.locator('[data-testid="stMetric"]', has_text="CRR").locator('[data-testid="stMetricValue"]')
    assert 0.0 <= float(crr.inner_text()) <= 1.0
    expect(pg.locator(".gtitle", has_text="Knowledge base coverage")).to_be_visible()
    assert pg.locator('[data-testid="stPlotlyChart"]').count() >= 2  # coverage map + leakage curves
    expect(pg.get_by_text("Attacker — round 3/3")).to_be_visible()
    expect(side.get_by_text("3/3 rounds")).to_be_visible()
    snap(pg, "extraction_03_after_3_rounds.png")

    pg.get_by_role("tab", name="Attacker internals").click()
    expect(pg.get_by_text("Long-term memory")).to_be_visible()
    snap(pg, "extraction_04_internals.png")
