"""The Audit page in a real browser: `streamlit run app.py` driven by headless chromium through Playwright.

Flow, as a practitioner: Audit your RAG -> target http, pointed at the example RAG service (the audit test
system) with its sources and its document API -> a smaller battery chosen in the form (zeng and ikea, one query
each; universal poisoning, one question) -> Test connection (the parsed answer and contexts) -> Run audit (the
findings so far while it runs) -> the report: severity counts, the findings table, a finding's evidence -> the
downloaded report.html opened on its own, offline. Screenshots: tests/artifacts/audit_*.png; the audit's seconds
in tests/artifacts/audit_flow.json (measured, never asserted).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

import pytest

from helpers import streamlit_server
from test_extraction_flow import ARGS, ARTIFACTS, CHROMIUM, ERRORS, QUICK, SLOW, idle, snap

pytestmark = pytest.mark.slow  # a whole user flow in a real browser: long work, run by CI

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cache():
    return tempfile.mkdtemp(prefix="audit-flow-")


@pytest.fixture(scope="module")
def server(cache):
    try:
        with streamlit_server(REPO, ARTIFACTS / "audit_streamlit.log", {"RAG_PLAYGROUND_CACHE": cache}) as url:
            yield url
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def browser(server):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def test_audit_flow(browser, server, rag_service, cache):
    pg = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    pg.set_default_timeout(QUICK)
    (ARTIFACTS / "audit_failure.png").unlink(missing_ok=True)
    try:
        flow(pg, server, rag_service, Path(cache), browser)
    except BaseException:
        try:
            pg.screenshot(path=str(ARTIFACTS / "audit_failure.png"), full_page=True)
        except Exception:  # noqa: BLE001 - keep the real failure
            pass
        raise


def flow(pg, server: str, service: str, cache: Path, browser) -> None:
    from playwright.sync_api import expect

    main = pg.locator('[data-testid="stMain"]')
    pg.goto(server + "/audit", wait_until="domcontentloaded")
    expect(main.get_by_role("heading", name="Audit your own RAG")).to_be_visible(timeout=SLOW)
    idle(pg)
    pg.locator('[data-testid="stSelectbox"]', has_text="Target").first.click()
    pg.get_by_role("option", name=re.compile(r"^http — ")).click()
    idle(pg)
    expect(pg.get_by_label("URL", exact=True)).to_be_visible()
    pg.get_by_label("URL", exact=True).fill(f"{service}/query")
    pg.get_by_label("Contexts path", exact=True).fill("sources")
    main.get_by_text("Knowledge-base write surface (poisoning)").click()
    pg.get_by_label("Ingest URL", exact=True).fill(f"{service}/documents")
    pg.get_by_label("Delete URL", exact=True).fill(service + "/documents/{id}")
    pg.get_by_label("Exists URL", exact=True).fill(service + "/documents/{id}")
    pg.get_by_label("Reference knowledge base", exact=True).fill("clinic_records")
    pg.get_by_label("Queries per extraction attack", exact=True).fill("1")
    pg.get_by_label("Questions per poisoning attack", exact=True).fill("1")
    for name in ("rag-thief", "code-claim", "trigger", "jamming"):  # a smaller battery (the engine tests run it all)
        main.get_by_role("button", name=f"Remove {name}", exact=True).click()  # chips carry the names only
    for name in ("zeng", "ikea", "universal"):
        expect(main.get_by_role("button", name=f"Remove {name}", exact=True)).to_be_visible()
    snap(pg, "audit_01_target.png")

    pg.get_by_role("button", name="Test connection").click()
    expect(main.get_by_text("answered in", exact=False).first.or_(pg.locator(ERRORS)).first).to_be_visible(timeout=SLOW)
    idle(pg)
    expect(main.get_by_text("2 context(s) reported", exact=False)).to_be_visible()
    snap(pg, "audit_02_connection.png")

    t0 = time.monotonic()
    pg.get_by_role("button", name="Run audit").click()
    # while it runs: from the second cell on, the findings of the cells finished so far (above them the cell under
    # way with its latest round, once that cell has answered)
    expect(main.get_by_text("Findings so far:", exact=False).or_(pg.locator(ERRORS)).first).to_be_visible(timeout=SLOW)
    snap(pg, "audit_03_live.png")
    report = main.get_by_role("heading", name="Report")
    expect(report.or_(pg.locator(ERRORS)).first).to_be_visible(timeout=SLOW * 2)
    seconds = round(time.monotonic() - t0, 1)
    idle(pg)
    expect(report).to_be_visible()
    table = main.locator('[data-testid="stDataFrame"]').first
    expect(table).to_be_visible()
    for label in ("critical", "high", "medium", "low", "info"):
        expect(main.locator('[data-testid="stMetric"]', has_text=label).first).to_be_visible()
    snap(pg, "audit_04_report.png")
    main.get_by_text(re.compile(r"· extraction:zeng — ")).first.click()
    expect(main.get_by_text("Why this severity:", exact=False).first).to_be_visible()
    expect(main.get_by_text("OWASP LLM Top 10 2025:", exact=False).first).to_be_visible()
    snap(pg, "audit_05_finding.png")
    expect(main.get_by_role("button", name="Download report.html")).to_be_visible()

    html = next((cache / "audits").glob("*/report.html"))
    doc = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    doc.goto(html.as_uri())
    expect(doc.get_by_role("heading", name="RAG audit report")).to_be_visible()
    expect(doc.locator("svg.chart").first).to_be_visible()
    doc.screenshot(path=str(ARTIFACTS / "audit_06_report_html.png"))
    assert doc.locator("section.finding").count() >= 3
    rep = json.loads(html.with_name("report.json").read_text())
    assert rep["status"] == "complete" and rep["cleanup"]["outstanding"] == 0
    (ARTIFACTS / "audit_flow.json").write_text(
        json.dumps({"audit_seconds": seconds, "severity_counts": rep["severity_counts"]})
    )
