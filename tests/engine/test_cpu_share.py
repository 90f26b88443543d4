"""Thread counts from the cores other programs leave free (engine.cpu_share), on the real /proc counters, a
real busy process and the real GGUF generator: the measure sees the busy process, the generator drops to the
free cores under it, and the thread count never changes a greedy answer."""

import os
import subprocess
import sys
import time

import pytest

from engine import cpu_share
from engine.generators import GENERATORS
from engine.generators.llama_local import threads_now

pytestmark = pytest.mark.skipif(cpu_share.sample() is None, reason="needs /proc (Linux)")
CORES = len(os.sched_getaffinity(0))
PROMPT = [
    {
        "role": "system",
        "content": "Answer from the context only. Context: The clinic opens at 8 am and "
        "closes at 6 pm; blood tests need an appointment.",
    },
    {"role": "user", "content": "When does the clinic open, and what needs an appointment?"},
]


@pytest.fixture
def busy_core():
    """One CPU-bound process beside the tests, for as long as the test runs."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.3)
    yield hog
    hog.kill()
    hog.wait()


def _answer(n_threads: int, monkeypatch, policy: str) -> tuple[str, object]:
    monkeypatch.setenv("RAG_PLAYGROUND_THREADS", policy)
    gen = GENERATORS.create("local", {"model": "smollm2-135m", "n_threads": n_threads, "max_tokens": 40})
    return gen.chat(PROMPT).text, gen._llm()


def test_the_meter_sees_another_process_busy(busy_core):
    a = cpu_share.sample()
    time.sleep(0.5)
    b = cpu_share.sample()
    assert cpu_share.others_busy(a, b) >= 0.6  # a whole core, less what the scheduler gave us
    assert cpu_share.CoreMeter().free() <= max(1, CORES - 1)


def test_the_policy_switch_and_its_bounds(monkeypatch):
    monkeypatch.setenv("RAG_PLAYGROUND_THREADS", "fixed")
    assert cpu_share.policy() == "fixed" and cpu_share.threads_for(3) == 3
    monkeypatch.setenv("RAG_PLAYGROUND_THREADS", "nonsense")
    assert cpu_share.policy() == "adaptive"
    assert 1 <= cpu_share.threads_for(2) <= 2 and cpu_share.threads_for(1) == 1


@pytest.mark.skipif(CORES < 2, reason="needs two cores")
def test_under_a_busy_core_the_generator_uses_the_free_one_and_answers_the_same(monkeypatch, busy_core):
    monkeypatch.setattr(cpu_share, "_meter", cpu_share.CoreMeter())  # no window from before the busy process
    one, _ = _answer(1, monkeypatch, "fixed")
    two, llm = _answer(2, monkeypatch, "fixed")
    assert threads_now(llm) == 2
    assert one == two and one.strip()  # each dot product is one thread's: same tokens
    adapted, llm = _answer(2, monkeypatch, "adaptive")
    assert threads_now(llm) == min(2, max(1, CORES - 1)) and adapted == two
    assert cpu_share.last_others_busy() >= 0.5


def test_a_second_caller_is_told_its_place_then_served(monkeypatch):
    """Two sessions stepping the same local model at once: one generates, the other is told it waits (the app
    shows it), then gets the same answer it would have got alone."""
    import threading

    from engine.generators.llama_local import locked, on_model_wait

    alone, llm = _answer(2, monkeypatch, "fixed")
    gen = GENERATORS.create("local", {"model": "smollm2-135m", "n_threads": 2, "max_tokens": 40})
    holding, release = threading.Event(), threading.Event()

    def other_session():
        with locked(llm):
            holding.set()
            release.wait(30)

    t = threading.Thread(target=other_session)
    t.start()
    assert holding.wait(30)
    told, got = [], {}

    def waiter():
        with on_model_wait(told.append):
            got["text"] = gen.chat(PROMPT).text

    w = threading.Thread(target=waiter)
    w.start()
    deadline = time.monotonic() + 30
    while not told and time.monotonic() < deadline:
        time.sleep(0.02)
    assert told == [1] and "text" not in got  # told before it waits, and it does wait
    release.set()
    t.join(30)
    w.join(120)
    assert got["text"] == alone
    with on_model_wait(told.append):  # a free model: nobody is told anything
        gen.chat(PROMPT)
    assert told == [1]
