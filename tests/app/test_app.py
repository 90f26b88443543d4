"""Streamlit AppTest over every page: renders, main controls exist, the demo runs."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "pages").glob("*.py"))


def test_home_renders_and_runs_the_demo():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    assert not at.exception
    assert at.selectbox[0].value == "quick-demo"
    at.button[0].click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    labels = [m.label for m in at.metric]
    assert {"ASR@1", "ASR@2", "ASR@5"} <= set(labels)
    assert float(at.metric[1].value) >= 0.9


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_page_renders(page):
    at = AppTest.from_file(str(page), default_timeout=120)
    at.run()
    assert not at.exception
    assert len(at.selectbox) >= 3


def test_lab_bad_config_shows_an_error_not_a_traceback():
    at = AppTest.from_file(str(REPO / "pages" / "1_Poisoning_lab.py"), default_timeout=300)
    at.run()
    sb = {s.label: s for s in at.selectbox}
    sb["Target information"].set_value("custom")
    at.number_input[0].set_value(3)
    at.button[0].click().run()
    assert not at.exception
    assert any("needs target text" in e.value for e in at.error)
