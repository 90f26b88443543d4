"""Test setup: offline Hugging Face, the benchmark data dir beside the repo, a shared cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # tests/helpers.py

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the app run in this process (AppTest) loads models when a test's run asks, not in a thread of its own; the real
# servers of the browser tests warm up as a user's server does (tests/helpers.py)
os.environ.setdefault("RAG_PLAYGROUND_WARMUP", "0")
_shared = REPO.parent / "shared" / "corpora"
if "RAG_PLAYGROUND_DATA_DIR" not in os.environ and _shared.is_dir():
    os.environ["RAG_PLAYGROUND_DATA_DIR"] = str(_shared)

DATA_DIR = os.environ.get("RAG_PLAYGROUND_DATA_DIR")
# the long end-to-end tests (marked slow, see pytest.ini) run when RAG_PLAYGROUND_TESTS=all:
# `bash scripts/test.sh --all`, which CI runs
ALL_TESTS = os.environ.get("RAG_PLAYGROUND_TESTS", "") == "all"


def pytest_addoption(parser):
    parser.addoption(
        "--record-file-times",
        metavar="PATH",
        help="write each test file's seconds (setup, call, teardown) to PATH (tests/file_times.json orders the files)",
    )


def pytest_configure(config):
    path = config.getoption("--record-file-times")
    # under xdist the controller sees every worker's reports: record there only
    if path and not hasattr(config, "workerinput"):
        from file_times import FileTimeRecorder

        config.pluginmanager.register(FileTimeRecorder(Path(path)), "file-time-recorder")


def pytest_collection_modifyitems(config, items):
    """The longest test files first (tests/file_times.py: the two workers finish together); skip the tests marked
    slow unless the whole suite was asked for (they are reported as skipped, with how to run them)."""
    from file_times import load_times, longest_files_first

    items[:] = longest_files_first(items, load_times())
    if ALL_TESTS:
        return
    skip = pytest.mark.skip(reason="long end-to-end test: bash scripts/test.sh --all runs it (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def no_job_outlives_its_test():
    """A background job a test leaves running (a page test that moved on) is stopped and waited for after it, so
    that no later test's page follows it as its own (pages follow a running job of theirs: engine.jobs)."""
    yield
    from engine.jobs import running_jobs

    for job in running_jobs(any_owner=True):
        job.stop()
        job.wait(300)


@pytest.fixture(scope="session")
def data_dir() -> str:
    if not DATA_DIR or not Path(DATA_DIR).is_dir():
        pytest.fail("benchmark data dir missing: set RAG_PLAYGROUND_DATA_DIR (CI has ../shared/corpora)")
    return DATA_DIR


@pytest.fixture(scope="session")
def minilm():
    from engine.embedders import make_retriever

    return make_retriever("minilm")


@pytest.fixture(scope="session")
def handbook():
    from engine.corpora import load_corpus

    return load_corpus("clinic_handbook")


@pytest.fixture(scope="session")
def llama_server():
    """A real llama.cpp OpenAI-compatible server on loopback serving SmolLM2-135M as ``smol``."""
    from engine.generators import resolve_model
    from helpers import free_port, wait_for_port

    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(resolve_model("smollm2-135m")),
            "--model_alias",
            "smol",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            "2",
            "--n_ctx",
            "2048",
            "--logits_all",
            "true",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if not wait_for_port(port, proc, 120):
        proc.kill()
        pytest.fail("llama_cpp.server did not start")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=30)


# A short-answer copy of the extraction demo's system (fixed 48-token answers) that the audit tests serve and
# attack: the same retriever, generator and knowledge base, rounds of seconds instead of tens of seconds.
AUDIT_TEST_PRESET = """kind: extract
kb: clinic_records
generator: local
generator_params: {model: qwen2.5-0.5b}
attacker_llm: ""
retriever: minilm
top_k: 2
template: rag-privacy
max_tokens: 48
answer_budget: fixed
"""


@pytest.fixture(scope="session")
def audit_preset(tmp_path_factory) -> str:
    """The path of :data:`AUDIT_TEST_PRESET` as a YAML preset."""
    path = tmp_path_factory.mktemp("audit-preset") / "audit-test-system.yaml"
    path.write_text(AUDIT_TEST_PRESET)
    return str(path)


@pytest.fixture(scope="session")
def rag_service(audit_preset):
    """The example RAG service (FastAPI + uvicorn over the engine's pipeline, Chroma, Qwen2.5-0.5B) serving the
    audit test preset on loopback; yields its base URL."""
    from helpers import free_port, start_rag_service, stop

    port = free_port()
    try:
        proc = start_rag_service(port, "--preset", audit_preset)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield f"http://127.0.0.1:{port}"
    stop(proc)
