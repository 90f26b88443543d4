"""Dense retrievers backed by sentence-transformers (any model name or local path)."""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from ..devices import DEVICE_HELP, check_device, resolve_device
from ..errors import ConfigError, ModelUnavailableError
from ..params import Params, param
from .base import Retriever

_models: dict[tuple, Any] = {}
_models_lock = threading.Lock()


_hub: dict[str, bool] = {}


def hub_reachable(timeout: float = 3.0) -> bool:
    """Can this machine reach the Hugging Face hub at all? (once per process; offline settings say no)."""
    import os
    import socket

    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "") not in (
        "",
        "0",
    ):
        return False
    if "ok" not in _hub:
        try:
            with socket.create_connection(("huggingface.co", 443), timeout=timeout):
                _hub["ok"] = True
        except OSError:
            _hub["ok"] = False
    return _hub["ok"]


def load_sentence_transformer(name_or_path: str, pooling: str = "auto", device: str = "cpu") -> Any:
    """Load (once per process and device) a SentenceTransformer; a clear error if it is not available.

    ``pooling`` = ``cls`` or ``mean`` builds the model from a plain transformer checkpoint with
    that pooling (MedCPT uses [CLS]); ``auto`` uses the checkpoint's own configuration. ``device`` is a
    resolved torch device (:func:`engine.devices.resolve_device`).
    """
    key = (name_or_path, pooling, device)
    with _models_lock:
        if key in _models:
            return _models[key]
        from pathlib import Path

        if not Path(name_or_path).expanduser().exists() and not _in_hf_cache(name_or_path) and not hub_reachable():
            # fail now: the hub client would spend a minute in retries before saying the same thing
            raise ModelUnavailableError(
                f"model {name_or_path!r} could not be loaded: it is not a local sentence-transformers folder and "
                f"the Hugging Face hub cannot be reached from here (offline); with internet any model name works, "
                f"or give a local path"
            )
        try:
            from sentence_transformers import SentenceTransformer

            if pooling == "auto":
                model = SentenceTransformer(name_or_path, device=device)
            else:
                from sentence_transformers.sentence_transformer import modules as models

                word = models.Transformer(name_or_path)
                pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode=pooling)
                model = SentenceTransformer(modules=[word, pool], device=device)
        except Exception as e:  # OSError / HF errors when offline or the name is wrong
            raise ModelUnavailableError(
                f"model {name_or_path!r} could not be loaded ({type(e).__name__}): it is not a local "
                f"sentence-transformers folder and could not be fetched from the Hugging Face hub "
                f"(offline here; with internet any model name works)"
            ) from None
        _models[key] = model
        return model


def _in_hf_cache(name: str) -> bool:
    """Whether the hub cache already holds this model (then it loads offline)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - an odd name or an old hub client: just not cached
        return False


class SentenceTransformerRetriever(Retriever):
    """Any sentence-transformers model: name or path, optional separate query encoder, prefixes.

    Source: Reimers & Gurevych, "Sentence-BERT", EMNLP 2019 (sentence-transformers).
    Asymmetric retrievers (a separate query encoder, as MedCPT; or query/passage prefixes, as
    E5) are expressed with ``query_model`` and the two prefix fields.
    """

    class Params(Params):
        model: str = param("sentence-transformers/all-MiniLM-L6-v2", help="Document encoder: model name or local path")
        query_model: str = param("", help="Separate query encoder (asymmetric retrievers); empty = same as model")
        query_prefix: str = param("", help="Text prepended to every query (e.g. 'query: ' for E5)")
        document_prefix: str = param("", help="Text prepended to every document (e.g. 'passage: ')")
        similarity: str = param(
            "auto", choices=("auto", "ip", "cosine"), help="Native geometry; auto = the model's configured similarity"
        )
        pooling: str = param("auto", choices=("auto", "cls", "mean"), help="Pooling for plain transformer checkpoints")
        batch_size: int = param(64, min=1, max=1024, help="Encoding batch size")
        device: str = param("auto", help=f"Where the encoder runs: {DEVICE_HELP}")

        def validate(self) -> None:
            if not self.model.strip():
                raise ConfigError("model: give a sentence-transformers model name or a local path")
            check_device(self.device)

    def _model_path(self) -> str:
        return self.params.model

    def _device(self) -> str:
        return resolve_device(getattr(self.params, "device", "auto"))

    def _doc_model(self) -> Any:
        return load_sentence_transformer(self._model_path(), self.params.pooling, self._device())

    def _query_model(self) -> Any:
        if self.params.query_model:
            return load_sentence_transformer(self.params.query_model, self.params.pooling, self._device())
        return self._doc_model()

    @property
    def model_id(self) -> str:
        """Weights, query model, prefixes and pooling: whatever changes a vector changes the cache key."""
        p = self.params
        return f"st:{self._weights_id()}|q={p.query_model}|qp={p.query_prefix}|dp={p.document_prefix}|pool={p.pooling}"

    def _weights_id(self) -> str:
        return self.params.model

    @property
    def similarity(self) -> str:
        """The configured geometry; with ``auto``, the model's own (dot product → ``ip``, else ``cosine``)."""
        if self.params.similarity != "auto":
            return self.params.similarity
        fn = getattr(self._doc_model(), "similarity_fn_name", None) or "cosine"
        return "ip" if str(fn) in ("dot", "dot_product", "SimilarityFunction.DOT_PRODUCT") else "cosine"

    def window(self) -> int | None:
        """The model's ``max_seq_length`` minus the special tokens its tokenizer adds (None: no limit); loads the
        model."""
        model = self._doc_model()
        n = int(getattr(model, "max_seq_length", 0) or 0)
        if n <= 0:
            return None
        tok = getattr(model, "tokenizer", None)
        specials = tok.num_special_tokens_to_add(pair=False) if tok is not None else 2
        return max(1, n - specials)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Document tokens per text in the model's tokenizer, ``document_prefix`` included and specials not (a word
        count when the model has no tokenizer)."""
        if not hasattr(self, "_tokenizer"):  # looked up once: chunking a long document counts thousands of times
            self._tokenizer = getattr(self._doc_model(), "tokenizer", None)
        tok = self._tokenizer
        if tok is None:
            return super().count_tokens(texts)
        prefix = getattr(self.params, "document_prefix", "")
        texts = [prefix + t for t in texts] if prefix else list(texts)
        with self._lock:  # a fast tokenizer is shared by every session
            ids = tok(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        return [len(x) for x in ids]

    def _encode(self, model: Any, texts: list[str], prefix: str) -> np.ndarray:
        texts = [prefix + t for t in texts] if prefix else texts
        return model.encode(
            texts,
            batch_size=self.params.batch_size,
            convert_to_numpy=True,
            show_progress_bar=False,
            normalize_embeddings=False,
        )

    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(self._query_model(), texts, self.params.query_prefix)

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        return self._encode(self._doc_model(), texts, self.params.document_prefix)
