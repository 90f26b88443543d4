"""Test setup: offline Hugging Face, the benchmark data dir beside the repo, a shared cache."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # tests/helpers.py

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_shared = REPO.parent / "shared" / "corpora"
if "RAG_PLAYGROUND_DATA_DIR" not in os.environ and _shared.is_dir():
    os.environ["RAG_PLAYGROUND_DATA_DIR"] = str(_shared)

DATA_DIR = os.environ.get("RAG_PLAYGROUND_DATA_DIR")


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
