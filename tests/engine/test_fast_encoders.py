"""The faster backends of the packaged encoders: bfloat16 autocast, and ONNX Runtime (exported once from the
package folder and cached): the PyTorch vectors (ONNX fp32) or close to them (bf16, int8), each its own
embedding-cache key, usable in a run; no onnxruntime is one clear error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def texts(handbook):
    return handbook.texts[:60]


def _cos(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_onnx_gives_the_pytorch_vectors_and_int8_stays_close(texts):
    from engine.embedders import make_retriever

    torch_v = make_retriever("minilm")._encode_documents(texts)
    fp32 = make_retriever("minilm", {"backend": "onnx"})._encode_documents(texts)
    int8 = make_retriever("minilm", {"backend": "onnx-int8"})._encode_documents(texts)
    bf16 = make_retriever("minilm", {"backend": "torch-bf16"})._encode_documents(texts)
    assert fp32.shape == int8.shape == bf16.shape == torch_v.shape and bf16.dtype == np.float32
    assert _cos(bf16, torch_v).min() > 0.99
    assert _cos(fp32, torch_v).min() > 0.9999
    assert _cos(int8, torch_v).min() > 0.97 and _cos(int8, torch_v).mean() > 0.99
    assert np.allclose(np.linalg.norm(int8, axis=1), 1, atol=1e-4)  # the model's Normalize module is applied


def test_openvino_runs_the_same_export_to_the_pytorch_vectors(texts):
    pytest.importorskip("openvino")
    from engine.embedders import make_retriever

    torch_v = make_retriever("minilm")._encode_documents(texts)
    f32 = make_retriever("minilm", {"backend": "openvino"})._encode_documents(texts)
    bf16 = make_retriever("minilm", {"backend": "openvino-bf16"})._encode_documents(texts)
    assert f32.shape == bf16.shape == torch_v.shape and f32.dtype == np.float32
    assert _cos(f32, torch_v).min() > 0.9999
    assert _cos(bf16, torch_v).min() > 0.98 and _cos(bf16, torch_v).mean() > 0.99


def test_each_backend_has_its_own_cache_key_and_the_export_is_reused(texts):
    from engine.embedders import make_retriever
    from engine.paths import cache_dir
    from engine.embedders.packaged import BACKENDS

    ids = {make_retriever("minilm", {"backend": b}).model_id for b in BACKENDS}
    assert len(ids) == len(BACKENDS)
    files = list((cache_dir("onnx")).glob("minilm*/model.int8.onnx"))
    assert files, "the int8 export is cached"
    before = files[0].stat().st_mtime
    make_retriever("minilm", {"backend": "onnx-int8"})._encode_documents(texts[:2])
    assert files[0].stat().st_mtime == before


def test_a_poisoning_run_on_the_int8_backend_ranks_as_pytorch_does():
    from engine.config import PoisonConfig
    from engine.metrics import asr
    from engine.runs.poisoning import PoisoningRun

    got = {}
    for backend in ("torch", "onnx-int8"):
        run = PoisoningRun(PoisonConfig(limit=12, retriever_params={"backend": backend}))
        run.run()
        run.close()
        got[backend] = (asr(run.events, 2).value, asr(run.events, 5).value)
    assert abs(got["torch"][0] - got["onnx-int8"][0]) <= 1 / 12 and got["torch"][1] == got["onnx-int8"][1]


def test_without_onnxruntime_the_backend_is_one_clear_error():
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from engine.embedders import make_retriever\n"
        "from engine.errors import EngineError\n"
        "try:\n"
        "    make_retriever('minilm', {'backend': 'onnx-int8'})._encode_documents(['x'])\n"
        "except EngineError as e:\n"
        "    print('ERR', e)\n"
    )
    from engine.paths import REPO_ROOT

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert "ERR" in r.stdout and "onnxruntime" in r.stdout
