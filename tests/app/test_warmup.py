"""The server's warm-up: the default retriever's model loads in a background thread on the first visit, once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# one fresh process (nothing loaded yet) tries the three cases in turn; each prints what it saw
_PROBE = r"""
import logging, os, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
from components import warmup
from engine.embedders import make_retriever, sentence_transformer as st_models

def case(name, retriever, enabled):
    os.environ["RAG_PLAYGROUND_WARMUP"] = enabled
    warmup._started.clear()  # a fresh server process for each case
    before = len(st_models._models)
    thread = warmup.start_warmup(retriever)
    if thread is not None:
        thread.join(300)
    print(name, "thread", None if thread is None else thread.is_alive(), "loaded", len(st_models._models) - before)
    print(name, "second", warmup.start_warmup(retriever))

case("off", "minilm", "0")
case("broken", "no-such-retriever", "1")
case("on", "minilm", "1")
n = len(st_models._models)
make_retriever("minilm").window()
print("run reloaded", len(st_models._models) - n)
"""


@pytest.fixture(scope="module")
def probe() -> str:
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_the_first_visit_loads_the_default_retriever_once_and_a_run_finds_it_loaded(probe):
    assert "on thread False loaded 1" in probe  # the warm-up thread loaded the model and ended
    assert "on second None" in probe  # once per process: a second visit starts nothing
    assert "run reloaded 0" in probe  # the run's retriever finds that model: no second load


def test_warmup_switched_off_loads_nothing(probe):
    assert "off thread None loaded 0" in probe


def test_a_warmup_that_fails_is_a_logged_line_and_the_server_goes_on(probe):
    assert "broken thread False loaded 0" in probe
    assert "warming up retriever 'no-such-retriever' failed: " in probe
