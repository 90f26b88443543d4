"""Extraction lab in a real browser: `streamlit run app.py` driven by headless chromium through Playwright.

Flow, as a new user: Home -> "Open the extraction demo" (the quick-extraction-demo preset: RAG-Thief vs
Qwen2.5-0.5B on the clinic records) -> Prepare attack -> Step x3, the answer streaming into the round panel
-> records and personal data leak: PII count, the leaked chunk beside its source, the coverage map and the
curves; then the attacker's internals. Screenshots: tests/artifacts/extraction_*.png; the seconds each
round took are written to tests/artifacts/extraction_rounds.json (measured, never asserted).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest

from helpers import streamlit_server

pytestmark = pytest.mark.slow  # a whole user flow in a real browser: long work, run by CI

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
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
    h = pg.evaluate(
        "() => Math.max(...['[data-testid=\"stMain\"]', '[data-testid=\"stAppViewContainer\"]']"
        ".map(s => document.querySelector(s)?.scrollHeight || 0))"
    )
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
    expect(pg.get_by_role("heading", name="RAG Attack & Defense Playground")).to_be_visible(timeout=SLOW)
    idle(pg)
    pg.get_by_role("button", name="Open the extraction demo").click()
    expect(main.get_by_role("heading", name="Extraction lab")).to_be_visible(timeout=SLOW)
    idle(pg)
    expect(side.get_by_label("LLM API key (litellm)", exact=True)).to_be_visible(timeout=QUICK)
    # the demo's configuration, loaded from the preset
    expect(pg.get_by_label("Rounds (query budget)", exact=True)).to_have_value("10")
    expect(pg.get_by_label("Top-k", exact=True)).to_have_value("2")
    snap(pg, "extraction_01_setup.png")

    pg.get_by_role("button", name="Prepare attack").click()
    step = pg.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_visible(timeout=SLOW)
    expect(main.get_by_text("0/10 rounds")).to_be_visible(timeout=SLOW)
    # the configuration in words, under the controls
    expect(main.get_by_text("rule-based continuation", exact=False).first).to_be_visible()
    expect(main.get_by_text("qwen2.5-0.5b", exact=False).first).to_be_visible()
    idle(pg)
    snap(pg, "extraction_02_prepared.png")

    seconds = []
    streamed = []
    for n in range(1, 4):
        expect(step).to_be_enabled(timeout=SLOW)
        t0 = time.monotonic()
        step.click()
        done = pg.get_by_text(f"{n}/10 rounds")
        live = pg.get_by_text("Answer (streaming):", exact=False)
        first = live.first.or_(done.first).or_(pg.locator(ERRORS)).first
        expect(first).to_be_visible(timeout=SLOW)
        streamed.append(live.count() > 0)
        if n == 1 and live.count():
            snap(pg, "extraction_03_streaming.png")
        expect(done.first.or_(pg.locator(ERRORS)).first).to_be_visible(timeout=SLOW)
        seconds.append(round(time.monotonic() - t0, 2))
        idle(pg)
        expect(done.first).to_be_visible()
    (ARTIFACTS / "extraction_rounds.json").write_text(json.dumps({"round_seconds": seconds, "streamed": streamed}))
    assert any(streamed), "the answer never streamed into the round panel"

    # after three rounds the demo has leaked: personal data and whole records, shown beside their source
    pii = main.locator('[data-testid="stMetric"]', has_text="PII leaked").locator('[data-testid="stMetricValue"]')
    leaked, total = (int(x) for x in pii.inner_text().split("/"))
    crr = main.locator('[data-testid="stMetric"]', has_text="CRR").locator('[data-testid="stMetricValue"]')
    assert leaked > 0 and total > 1000 and float(crr.inner_text()) > 0, (pii.inner_text(), crr.inner_text())
    expect(pg.locator(".gtitle", has_text="Knowledge base coverage")).to_be_visible()
    assert pg.locator('[data-testid="stPlotlyChart"]').count() >= 2  # coverage map + leakage curves
    expect(pg.get_by_text("Attacker — round 3/3")).to_be_visible()
    expect(side.get_by_text("3/10 rounds")).to_be_visible()
    expect(main.get_by_text("In context:", exact=False).first).to_be_visible()
    snap(pg, "extraction_04_after_3_rounds.png")
    # a round that leaked shows the chunk beside its source (the slider goes back through the rounds)
    for r in (3, 2, 1):
        if main.get_by_text("Chunks this answer reproduces", exact=False).count():
            break
        slider = main.get_by_role("slider").last
        slider.focus()
        slider.press("ArrowLeft")
        idle(pg)
    expect(main.get_by_text("Chunks this answer reproduces", exact=False).first).to_be_visible()
    expect(main.get_by_text("Source chunk").first).to_be_visible()
    snap(pg, "extraction_05_leaked_chunk.png")
    # the leaked records' e-mail addresses read as text, never as live links (attacker-controlled text)
    assert "@" in main.inner_text()
    assert main.locator('a[href^="mailto:"]').count() == 0

    pg.get_by_role("tab", name="Attacker internals").click()
    expect(pg.get_by_text("Long-term memory")).to_be_visible()
    snap(pg, "extraction_06_internals.png")
