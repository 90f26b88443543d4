"""Accelerators: ``device`` (auto: CUDA, then MPS, then CPU) on the encoders, the re-ranker and the SupCon
fine-tuning; ``n_gpu_layers`` on local generation; a comparison whose generator is an OpenAI-compatible
server (the path to a GPU server) through litellm, against the real llama.cpp server."""

from __future__ import annotations

import json
import warnings

import pytest

from helpers import run_cli


def test_auto_picks_what_is_there_and_a_missing_device_is_a_clear_error():
    import torch

    from engine.devices import resolve_device
    from engine.errors import ConfigError

    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert resolve_device("auto") == expected and resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA GPU"):
            resolve_device("cuda:0")
    with pytest.raises(ConfigError, match="is not one of"):
        resolve_device("tpu")


def test_every_neural_encoder_and_defense_takes_a_device():
    from engine.defenses import DEFENSES
    from engine.embedders import RETRIEVERS, make_retriever
    from engine.errors import ConfigError

    for name in ("minilm", "mpnet", "sentence-transformers"):
        assert RETRIEVERS.get(name).Params().device == "auto"
    for name in ("reindex", "rerank"):
        assert DEFENSES.get(name).Params().device == "auto"
    with pytest.raises(ConfigError, match="device"):
        make_retriever("minilm", {"device": "gpu0"})
    cpu = make_retriever("minilm", {"device": "cpu"})
    auto = make_retriever("minilm")
    assert cpu.model_id == auto.model_id  # the device is not part of the embedding-cache key
    a, b = cpu._encode_documents(["a short text"]), auto._encode_documents(["a short text"])
    assert abs(a - b).max() < 1e-4


def test_the_reranker_passes_its_device_to_a_neural_reranker_only(minilm):
    from engine.defenses import DEFENSES
    from engine.defenses.base import Chunk

    cut = DEFENSES.create("rerank", {"reranker": "bm25", "keep": 1, "min_score": -1e9, "device": "cpu"})
    chunks = [Chunk("a", "blood pressure at home", 0.5, 0), Chunk("b", "parking", 0.4, 1)]
    assert list(cut._scores("blood pressure", chunks)) != [0.0, 0.0]
    neural = DEFENSES.create("rerank", {"reranker": "minilm", "device": "cpu"})
    s = neural._scores("blood pressure", chunks)
    assert s[0] > s[1]


def test_n_gpu_layers_on_a_cpu_build_is_ignored_with_a_warning():
    from engine.generators import GENERATORS
    from engine.generators.llama_local import gpu_offload_supported

    gen = GENERATORS.create("local", {"model": "smollm2-135m", "max_tokens": 4, "n_gpu_layers": -1})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = gen.chat([{"role": "user", "content": "Say hi."}])
    assert out.text.strip()
    if not gpu_offload_supported():
        assert any("n_gpu_layers is ignored" in str(w.message) for w in caught)


@pytest.mark.slow
def test_a_comparison_can_generate_on_an_openai_compatible_server(tmp_path, llama_server):
    """The path to a GPU server (vLLM, llama.cpp server): provider/model + --api-base, here the real local
    llama.cpp server; the leakage and utility figures come back as with in-process generation."""
    r = run_cli(
        "compare",
        "--generator",
        "openai/smol",
        "--api-base",
        llama_server,
        "--attacks",
        "zeng",
        "--configurations",
        "none",
        "--rounds",
        "1",
        "--utility-limit",
        "1",
        "--out",
        str(tmp_path),
        "--json",
        "-q",
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.strip().splitlines()[-1])["rows"][0]
    assert row["rounds"] == 1 and row["utility_n"] == 1 and row["crr"] is not None
    saved = json.loads((tmp_path / "comparison.json").read_text())
    assert saved["config"]["base"]["generator"] == "litellm"
    assert saved["config"]["base"]["generator_params"]["api_base"] == llama_server
