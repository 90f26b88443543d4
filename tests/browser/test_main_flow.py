"""End-to-end browser test: a real `streamlit run` driven by headless Debian chromium through Playwright.

Flow: home -> Pipeline (build index) -> Poisoning lab (prepare 8 questions with answers, Step x5) -> Detectors tab
(re-score Mahalanobis with a fixed shrinkage β). Screenshots go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers import streamlit_server

pytestmark = pytest.mark.slow  # a whole user flow in a real browser: long work, run by CI

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LONG = 300_000  # ms: model loading / index building on a small CPU box beside the other test worker
SHORT = 30_000
T0 = time.monotonic()


@pytest.fixture(scope="module")
def streamlit_url():
    try:
        with streamlit_server(REPO, ARTIFACTS / "streamlit.log") as url:
            print(f"[{time.monotonic() - T0:6.1f}s] streamlit healthy")
            yield url
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def page(streamlit_url):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian chromium (apt-get install chromium) for the browser test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = context.new_page()
            pg.set_default_timeout(SHORT)
            pg.goto(streamlit_url, wait_until="domcontentloaded")
            yield pg
        finally:
            browser.close()


RUNNING = "() => !!document.querySelector('[data-testid=\"stStatusWidget\"]')"


def settle(page, timeout: int = LONG, quiet_ms: int = 1200) -> None:
    """Wait until Streamlit's "Running..." status widget has been gone for ``quiet_ms`` in a row (it shows up
    a moment after a rerun starts, and one rerun can trigger another), then check for exception boxes."""
    deadline = time.monotonic() + timeout / 1000
    quiet_since = None
    while True:
        if page.evaluate(RUNNING):
            quiet_since = None
            left = max(1, int((deadline - time.monotonic()) * 1000))
            page.wait_for_function(f"() => !({RUNNING})()", timeout=left)
        now = time.monotonic()
        quiet_since = quiet_since or now
        if now - quiet_since >= quiet_ms / 1000:
            break
        if now > deadline:
            raise AssertionError(f"Streamlit still running after {timeout / 1000:.0f} s")
        page.wait_for_timeout(100)
    assert_no_exception(page)


EXCEPTION = '[data-testid="stException"]'


def assert_no_exception(page) -> None:
    """No Streamlit exception box and no traceback text on the page (the message carries what was shown)."""
    boxes = page.locator(EXCEPTION)
    tracebacks = page.get_by_text("Traceback")
    if boxes.count() or tracebacks.count():
        shown = [t[:1500] for t in (boxes.all_inner_texts() or tracebacks.all_inner_texts())]
        raise AssertionError("Streamlit shows an exception:\n" + "\n---\n".join(shown))


def shot(page, name: str) -> None:
    """Full-page screenshot. Streamlit scrolls inside its own container, not the document, so
    full_page alone stops at the viewport: grow the viewport to the content height first."""
    size = page.viewport_size
    height = page.evaluate("""() => Math.max(...['[data-testid="stMain"]', '[data-testid="stAppViewContainer"]',
        '[data-testid="stSidebarContent"]'].map(s => document.querySelector(s)?.scrollHeight || 0))""")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height), 8000))})
    page.wait_for_timeout(500)  # let charts re-layout
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    page.set_viewport_size(size)
    print(f"[{time.monotonic() - T0:6.1f}s] {name}")


def test_main_flow(page):
    (ARTIFACTS / "99_failure.png").unlink(missing_ok=True)
    try:
        main_flow(page)
    except BaseException:
        try:
            page.screenshot(path=str(ARTIFACTS / "99_failure.png"), full_page=True)
        except Exception:  # noqa: BLE001 - keep the original failure
            pass
        raise


def main_flow(page):
    from playwright.sync_api import expect

    main = page.locator('[data-testid="stMain"]')
    sidebar = page.locator('[data-testid="stSidebar"]')

    # Home
    expect(page.get_by_role("heading", name="RAG Attack & Defense Playground")).to_be_visible(timeout=LONG)
    expect(page.get_by_text("Guided tour (4 steps)")).to_be_visible()
    settle(page)
    shot(page, "01_home.png")

    # Pipeline: build the index
    sidebar.get_by_role("link", name="Pipeline").click()
    expect(main.get_by_role("heading", name="Pipeline")).to_be_visible(timeout=LONG)
    settle(page)
    page.get_by_role("button", name="Build index").click()
    expect(page.get_by_text("Index ready")).to_be_visible(timeout=LONG)
    settle(page)
    shot(page, "02_pipeline.png")

    # Poisoning lab: prepare an attack on the first 8 questions
    sidebar.get_by_role("link", name="Poisoning lab").click()
    expect(main.get_by_role("heading", name="Poisoning lab")).to_be_visible(timeout=LONG)
    settle(page)
    form = page.locator('[data-testid="stForm"]')
    expect(form).to_be_visible()
    expect(page.get_by_text("Attack setup")).to_be_visible()
    how_many = page.get_by_label("How many (first N; 0 = all)", exact=True)  # not its help button
    how_many.fill("8")
    how_many.press("Tab")
    # the assistant answers each attacked question: the punchline is the answer that repeats the poison
    page.get_by_text("Answer each question").click()
    page.get_by_role("button", name="Prepare attack").click()
    step = page.get_by_role("button", name="Step", exact=True)
    expect(step).to_be_visible(timeout=LONG)
    expect(page.get_by_text("0/8 questions attacked")).to_be_visible(timeout=LONG)
    settle(page)
    shot(page, "03_lab_prepared.png")

    # Step through five questions
    for n in range(1, 6):
        expect(step).to_be_enabled(timeout=LONG)
        step.click()
        caption = page.get_by_text(f"{n}/8 questions attacked")
        expect(caption.or_(page.locator(EXCEPTION)).first).to_be_visible(timeout=LONG)
        assert_no_exception(page)
        expect(caption).to_be_visible()
        settle(page)
    expect(page.get_by_text("ASR@2").first).to_be_visible()
    expect(page.get_by_text("poison's exact rank")).to_be_visible()
    expect(page.get_by_text("Assistant's answer").first).to_be_visible()
    expect(page.get_by_text("ASR (answers)").first).to_be_visible()
    expect(page.get_by_text("95% Wilson intervals after 5 questions")).to_be_visible()
    expect(sidebar.get_by_text("5/8 queries"), "sidebar's Run summary does not follow the steps").to_be_visible()
    shot(page, "04_after_5_steps.png")

    # Detectors tab: mahalanobis, TPR; re-score it with a fixed shrinkage β
    page.get_by_role("tab", name="Detectors").click()
    panel = page.get_by_role("tabpanel", name="Detectors")
    # the tabs sit outside the live-panel fragment: they must still follow the steps
    expect(
        panel.get_by_text("Attack some questions first"),
        "Detectors tab is stale after Step: it still says 'Attack some questions first' although 5/8 "
        "questions were attacked",
    ).to_have_count(0, timeout=SHORT)
    expect(panel.get_by_text("mahalanobis", exact=True).first).to_be_visible(timeout=LONG)
    expect(panel.get_by_text("TPR", exact=True).first).to_be_visible()
    # re-score the Mahalanobis detector with a fixed β, from its own parameter form
    panel.get_by_text("Re-score with other parameters").last.click()
    beta = panel.get_by_role("spinbutton", name="Shrinkage β (0 = cross-validated)")
    expect(beta).to_be_visible()
    beta.fill("0.001")
    beta.press("Enter")
    settle(page)
    expect(panel.get_by_text("TPR", exact=True).first).to_be_visible(timeout=LONG)
    expect(panel.get_by_text("0.001").first).to_be_visible()
    assert_no_exception(page)
    shot(page, "05_detectors.png")
