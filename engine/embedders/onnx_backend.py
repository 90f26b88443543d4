"""ONNX Runtime encoders for the packaged sentence-transformers models (MiniLM, MPNet): faster CPU ingestion.

The model folder a package ships (or the assembled MPNet folder) is exported once to ONNX with
``torch.onnx.export`` (the transformer only: token embeddings out), optionally quantised to int8 with ONNX
Runtime's dynamic quantisation (per-channel weights; activations quantised on the fly), and cached under
``<cache>/onnx/<model key>/``; nothing is downloaded. Pooling and normalisation follow the folder's own
sentence-transformers configuration (``1_Pooling/config.json``, a ``Normalize`` module in ``modules.json``),
so the vectors are the sentence-transformers vectors up to the export's (fp32: ~1e-7) or the quantisation's
error (int8: cosine ≈ 0.99 to the PyTorch vector on BioASQ snippets). Texts are tokenised once, sorted by
token length and encoded in small batches (16: least padding; measured fastest on 2 cores).

``bench/bench_encoders.py`` measures the speed-up against the PyTorch encoder and the top-5 agreement and ASR@2
that decide whether a backend may replace it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ModelUnavailableError
from ..paths import cache_dir

_sessions: dict[tuple, "OnnxEncoder"] = {}
_lock = threading.Lock()


def _needs() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise ModelUnavailableError(
            "the ONNX backend needs onnxruntime and onnx (pip install -r requirements.txt)"
        ) from None


def export_onnx(model_dir: Path, out_dir: Path, quantize: bool) -> Path:
    """Export the transformer of the sentence-transformers folder ``model_dir`` to ``out_dir`` (fp32, and int8
    when ``quantize``); returns the model file to load. Written under temporary names and renamed, so two
    processes exporting at once never read a half-written file."""
    _needs()
    import warnings

    import torch
    from transformers import AutoModel, AutoTokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    fp32 = out_dir / "model.onnx"
    if not fp32.is_file():
        tok = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
        names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tok.model_input_names]

        class Wrapped(torch.nn.Module):
            def __init__(self, m: Any) -> None:
                super().__init__()
                self.m = m

            def forward(self, *args: Any) -> Any:
                return self.m(**dict(zip(names, args))).last_hidden_state

        sample = tok(
            ["a short sentence", "another, somewhat longer sentence for the trace"], padding=True, return_tensors="pt"
        )
        tmp = out_dir / f"model.onnx.{os.getpid()}.tmp"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Wrapped(model),
                tuple(sample[n] for n in names),
                str(tmp),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, fp32)
    if not quantize:
        return fp32
    int8 = out_dir / "model.int8.onnx"
    if not int8.is_file():
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = out_dir / f"model.int8.onnx.{os.getpid()}.tmp"
        root = logging.getLogger()
        level = root.level
        root.setLevel(max(level, logging.ERROR))  # quiet its pre-processing hint, for this call only
        try:
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            root.setLevel(level)
        os.replace(tmp, int8)
    return int8


class _OrtRunner:
    """ONNX Runtime on the CPU."""

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, feeds)[0]


class _OpenVinoRunner:
    """OpenVINO on the CPU, reading the same exported ONNX file; ``precision`` is its inference precision
    hint (``f32``: the float32 vectors; ``bf16``: bfloat16 matrix products where the CPU has AVX-512 BF16 or
    AMX)."""

    def __init__(self, path: Path, threads: int, precision: str) -> None:
        try:
            import openvino as ov
        except ImportError:
            raise ModelUnavailableError("the OpenVINO backend needs openvino (pip install openvino)") from None
        core = ov.Core()
        model = core.read_model(str(path))
        self.inputs = [i.get_any_name() for i in model.inputs]
        self.compiled = core.compile_model(
            model,
            "CPU",
            {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"},
        )
        self.request = self.compiled.create_infer_request()
        self.lock = threading.Lock()  # one infer request: one batch at a time

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        with self.lock:
            return np.array(self.request.infer(feeds)[0], copy=True)


RUNTIMES = {
    "onnx": ("ort", False, ""),
    "onnx-int8": ("ort", True, ""),
    "openvino": ("openvino", False, "f32"),
    "openvino-bf16": ("openvino", False, "bf16"),
}


class OnnxEncoder:
    """A sentence-transformers folder exported to ONNX and run by ONNX Runtime or OpenVINO: tokenise,
    transformer, pooling, normalisation."""

    def __init__(
        self,
        model_dir: Path,
        key: str,
        quantize: bool,
        threads: int | None = None,
        runtime: str = "ort",
        precision: str = "f32",
    ) -> None:
        _needs()
        from transformers import AutoTokenizer

        self.model_dir = Path(model_dir)
        path = export_onnx(self.model_dir, cache_dir("onnx") / key, quantize)
        n = int(threads or min(os.cpu_count() or 1, 8))
        self.runner = _OpenVinoRunner(path, n, precision) if runtime == "openvino" else _OrtRunner(path, n)
        self.inputs = self.runner.inputs
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        st = _read_json(self.model_dir / "sentence_bert_config.json")
        self.max_length = int(st.get("max_seq_length") or self.tokenizer.model_max_length or 512)
        pool = _read_json(self.model_dir / "1_Pooling" / "config.json")
        self.pooling = "cls" if pool.get("pooling_mode_cls_token") else "mean"
        modules = (
            json.loads((self.model_dir / "modules.json").read_text())
            if (self.model_dir / "modules.json").is_file()
            else []
        )
        self.normalize = any(str(m.get("type", "")).endswith("Normalize") for m in modules)

    def encode(self, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """One float32 vector per text, in order."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        ids = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        order = np.argsort([-len(x) for x in ids], kind="stable")
        out: np.ndarray | None = None
        pad = self.tokenizer.pad_token_id or 0
        for i in range(0, len(texts), batch_size):
            idx = order[i : i + batch_size]
            width = max(len(ids[j]) for j in idx)
            input_ids = np.full((len(idx), width), pad, dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, j in enumerate(idx):
                input_ids[r, : len(ids[j])] = ids[j]
                mask[r, : len(ids[j])] = 1
            feeds = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(input_ids)
            hidden = self.runner({k: v for k, v in feeds.items() if k in self.inputs})
            if self.pooling == "cls":
                vec = hidden[:, 0]
            else:
                m = mask[..., None].astype(np.float32)
                vec = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
            if self.normalize:
                vec = vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
            if out is None:
                out = np.zeros((len(texts), vec.shape[1]), dtype=np.float32)
            out[idx] = vec
        assert out is not None
        return out


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def onnx_encoder(model_dir: Path, key: str, backend: str) -> OnnxEncoder:
    """The process-wide encoder of one exported model for ``backend`` (one of :data:`RUNTIMES`; exported on
    first use, then loaded from the cache)."""
    runtime, quantize, precision = RUNTIMES[backend]
    k = (str(model_dir), key, backend)
    with _lock:
        if k not in _sessions:
            _sessions[k] = OnnxEncoder(model_dir, key, quantize, runtime=runtime, precision=precision)
        return _sessions[k]
