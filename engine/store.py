"""Indexes and per-run stores over Chroma, with exact ranks.

* :class:`BaseIndex` — a corpus embedded by one retriever: the document vectors (from the
  on-disk embedding cache) and a Chroma collection holding them with their text. Built once
  per (corpus fingerprint, retriever, geometry) and **never mutated** after it is complete, so
  every session and run can share it.
* :class:`RunStore` — what one run sees: the shared base plus the run's own overlay
  collection of injected documents. Injecting into one run is invisible to every other run.
  Searches ask Chroma (base and overlay, merged by score) and verify the answer against exact
  numpy scoring over all vectors; where Chroma's approximate (HNSW) answer differs from the
  exact top-K, the exact one is used and the disagreement is reported.

Chroma always receives explicit embeddings; no embedding function is ever attached. The
sparse BM25 retriever has no vectors: its runs score exactly in-process.
"""
from __future__ import annotations

import hashlib
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .corpora import Corpus
from .embedders import BM25Index, Retriever
from .errors import ConfigError, EngineError
from .params import Params, param
from .paths import cache_dir
from .types import Document, Hit

Progress = Callable[[str, int, int], None]
_TIE_TOL = 1e-5


class StoreSettings(Params):
    """Where Chroma lives: an embedded persistent client or a server over HTTP."""

    mode: str = param("persistent", choices=("persistent", "http"), help="Embedded store or a Chroma server")
    path: str = param("", help="Folder of the embedded store (default: the cache folder)")
    host: str = param("127.0.0.1", help="Chroma server host (http mode)")
    port: int = param(8000, min=1, max=65535, help="Chroma server port (http mode)")


_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()
_build_locks: dict[str, threading.Lock] = {}


def chroma_client(settings: StoreSettings | None = None) -> Any:
    """One Chroma client per settings per process (clients are thread-safe and shared)."""
    settings = settings or StoreSettings()
    key = tuple(sorted(settings.to_dict().items()))
    with _clients_lock:
        if key not in _clients:
            import chromadb
            from chromadb.config import Settings

            cs = Settings(anonymized_telemetry=False, allow_reset=False)
            if settings.mode == "http":
                try:
                    _clients[key] = chromadb.HttpClient(host=settings.host, port=settings.port, settings=cs)
                    _clients[key].heartbeat()
                except Exception as e:
                    _clients.pop(key, None)
                    raise EngineError(f"cannot reach the Chroma server at {settings.host}:{settings.port} "
                                      f"({type(e).__name__}); start it with 'chroma run --host {settings.host} "
                                      f"--port {settings.port}'") from None
            else:
                path = settings.path or str(cache_dir("chroma"))
                _clients[key] = chromadb.PersistentClient(path=path, settings=cs)
        return _clients[key]


def _space(similarity: str) -> str:
    return {"ip": "ip", "cosine": "cosine"}[similarity]


def _batches(n: int, size: int):
    for i in range(0, n, size):
        yield i, min(i + size, n)


@dataclass
class BaseIndex:
    """An immutable, shareable index of one corpus under one retriever."""

    corpus: Corpus
    retriever: Retriever
    vectors: np.ndarray | None          # native embeddings (None for sparse retrievers)
    collection: Any = None              # Chroma collection (dense only)
    bm25: BM25Index | None = None
    n_encoded: int = 0                  # how many texts had to be embedded for this build
    id_to_row: dict[str, int] = field(default_factory=dict)

    @property
    def dense(self) -> bool:
        return self.vectors is not None

    def search_matrix(self) -> np.ndarray:
        if not hasattr(self, "_search"):
            v = self.vectors
            if self.retriever.similarity == "cosine":
                v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            self._search = np.ascontiguousarray(v, dtype=np.float32)
        return self._search

    @classmethod
    def build(cls, corpus: Corpus, retriever: Retriever, *, settings: StoreSettings | None = None,
              progress: Progress | None = None) -> "BaseIndex":
        """Embed (cached) and load into Chroma once; later builds reuse both."""
        if len(corpus) == 0:
            raise EngineError("cannot index an empty corpus")
        ids = corpus.ids
        if not retriever.dense:
            if progress:
                progress("tokenizing", 0, len(corpus))
            bm25 = retriever.build_index(corpus.texts)
            if progress:
                progress("tokenizing", len(corpus), len(corpus))
            return cls(corpus, retriever, None, bm25=bm25, id_to_row={d: i for i, d in enumerate(ids)})
        vecs, n_new = retriever.encode_documents(corpus.texts, progress=(lambda d, t: progress("embedding", d, t))
                                                 if progress else None)
        client = chroma_client(settings)
        space = _space(retriever.similarity)
        name = "base-" + hashlib.sha256(f"{retriever.model_id}|{space}|{corpus.fingerprint}".encode()).hexdigest()[:40]
        with _clients_lock:
            lock = _build_locks.setdefault(name, threading.Lock())
        with lock:
            col = client.get_or_create_collection(name, embedding_function=None,
                                                  configuration={"hnsw": {"space": space}})
            meta = col.metadata or {}
            if not meta.get("complete") or col.count() != len(corpus):
                existing = col.count()
                if existing:  # an interrupted build: start over
                    client.delete_collection(name)
                    col = client.create_collection(name, embedding_function=None,
                                                   configuration={"hnsw": {"space": space}})
                step = min(client.get_max_batch_size(), 4096)
                for a, b in _batches(len(corpus), step):
                    col.add(ids=ids[a:b], embeddings=vecs[a:b], documents=corpus.texts[a:b],
                            metadatas=[{"poison": False}] * (b - a))
                    if progress:
                        progress("indexing", b, len(corpus))
                col.modify(metadata={"complete": True, "corpus": corpus.name, "model": retriever.model_id[:200],
                                     "n": len(corpus)})
        return cls(corpus, retriever, vecs, collection=col, n_encoded=n_new,
                   id_to_row={d: i for i, d in enumerate(ids)})


@dataclass(frozen=True)
class SearchResult:
    """Top-K hits for one query (exact), whether Chroma agreed, and exact ranks of injected docs."""

    hits: tuple[Hit, ...]
    store_agreed: bool
    injected_ranks: dict[str, int]


class RunStore:
    """One run's view: the shared base plus this run's own overlay of injected documents."""

    def __init__(self, base: BaseIndex, *, settings: StoreSettings | None = None, run_id: str | None = None,
                 use_chroma: bool = True) -> None:
        self.base = base
        self.run_id = run_id or uuid.uuid4().hex
        self.settings = settings
        self.use_chroma = use_chroma and base.dense
        self.injected: dict[str, Document] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._counts: dict[str, Counter] = {}
        self._overlay = None
        self.fallbacks = 0
        self.searches = 0

    # ---------------------------------------------------------------- lifecycle
    def _overlay_collection(self) -> Any:
        if self._overlay is None:
            client = chroma_client(self.settings)
            self._overlay = client.create_collection(
                f"run-{self.run_id}", embedding_function=None,
                configuration={"hnsw": {"space": _space(self.base.retriever.similarity)}})
        return self._overlay

    def close(self) -> None:
        """Drop the overlay collection (the base is untouched)."""
        if self._overlay is not None:
            try:
                chroma_client(self.settings).delete_collection(self._overlay.name)
            except Exception:
                pass
            self._overlay = None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- mutation
    def inject(self, docs: Sequence[Document], vectors: np.ndarray | None = None) -> np.ndarray | None:
        """Add documents to this run only; returns their native embeddings (dense)."""
        docs = list(docs)
        if not docs:
            return None
        for d in docs:
            if d.id in self.base.id_to_row or d.id in self.injected:
                raise ConfigError(f"document id {d.id!r} already exists in this run")
        if not self.base.dense:
            for d in docs:
                self.injected[d.id] = d
                self._counts[d.id] = Counter(self.base.retriever.tokenize(d.text))
            return None
        if vectors is None:
            vectors, _ = self.base.retriever.encode_documents([d.text for d in docs])
        for d, v in zip(docs, vectors):
            self.injected[d.id] = d
            self._vecs[d.id] = np.asarray(v, dtype=np.float32)
        if self.use_chroma:
            self._overlay_collection().add(ids=[d.id for d in docs], embeddings=np.asarray(vectors),
                                           documents=[d.text for d in docs],
                                           metadatas=[{"poison": True} for _ in docs])
        return vectors

    def remove(self, ids: Sequence[str]) -> None:
        ids = [i for i in ids if i in self.injected]
        for i in ids:
            self.injected.pop(i)
            self._vecs.pop(i, None)
            self._counts.pop(i, None)
        if ids and self.use_chroma and self._overlay is not None:
            self._overlay.delete(ids=ids)

    # ---------------------------------------------------------------- search
    def __len__(self) -> int:
        return len(self.base.corpus) + len(self.injected)

    def text_of(self, doc_id: str) -> str:
        if doc_id in self.injected:
            return self.injected[doc_id].text
        return self.base.corpus.documents[self.base.id_to_row[doc_id]].text

    def embedding_of(self, doc_id: str) -> np.ndarray:
        if doc_id in self._vecs:
            return self._vecs[doc_id]
        return self.base.vectors[self.base.id_to_row[doc_id]]

    def exact_scores(self, query: str, query_vec: np.ndarray | None = None) -> tuple[np.ndarray, list[str], np.ndarray]:
        """Exact scores of every base doc, and (ids, scores) of the injected docs."""
        inj_ids = list(self.injected)
        if not self.base.dense:
            base, over = self.base.bm25.scores(query, [self._counts[i] for i in inj_ids])
            return base, inj_ids, over
        q = np.asarray(query_vec, dtype=np.float32).reshape(1, -1)
        if self.base.retriever.similarity == "cosine":
            q = q / max(float(np.linalg.norm(q)), 1e-12)
        base = (self.base.search_matrix() @ q[0])
        over = self.base.retriever.score(q, np.vstack([self._vecs[i] for i in inj_ids]))[0] if inj_ids \
            else np.zeros(0, dtype=np.float32)
        return base, inj_ids, over

    def search(self, queries: Sequence[str], k: int, query_vecs: np.ndarray | None = None) -> list[SearchResult]:
        """Top-``k`` per query, exact; Chroma is asked first and checked against exact scores."""
        n = len(self)
        if k < 1:
            raise ConfigError(f"top-k must be at least 1, got {k}")
        if k > n:
            raise ConfigError(f"top-k ({k}) is larger than the corpus ({n} documents)")
        queries = list(queries)
        if self.base.dense and query_vecs is None:
            query_vecs = self.base.retriever.encode_queries(queries)
        chroma = self._chroma_topk(query_vecs, k) if self.use_chroma else [None] * len(queries)
        out = []
        for i, q in enumerate(queries):
            base, inj_ids, over = self.exact_scores(q, None if query_vecs is None else query_vecs[i])
            out.append(self._resolve(base, inj_ids, over, k, chroma[i]))
        self.searches += len(queries)
        return out

    def _chroma_topk(self, query_vecs: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        res_base = self.base.collection.query(query_embeddings=np.asarray(query_vecs, dtype=np.float32),
                                              n_results=min(k, len(self.base.corpus)), include=["distances"])
        merged = [list(zip(ids, (1.0 - np.asarray(d)).tolist())) for ids, d in
                  zip(res_base["ids"], res_base["distances"])]
        if self.injected and self._overlay is not None:
            res_o = self._overlay.query(query_embeddings=np.asarray(query_vecs, dtype=np.float32),
                                        n_results=min(k, len(self.injected)), include=["distances"])
            for m, ids, d in zip(merged, res_o["ids"], res_o["distances"]):
                m.extend(zip(ids, (1.0 - np.asarray(d)).tolist()))
        return [sorted(m, key=lambda t: -t[1])[:k] for m in merged]

    def _resolve(self, base: np.ndarray, inj_ids: list[str], over: np.ndarray, k: int,
                 chroma: list[tuple[str, float]] | None) -> SearchResult:
        all_scores = np.concatenate([base, over]) if len(over) else base
        ids_of = self.base.corpus.ids
        # exact rank of an injected doc: 1 + the documents scoring higher, + the other documents tied
        # with it within float tolerance (ties count against the attacker: conservative success)
        inj_ranks = {}
        for j, did in enumerate(inj_ids):
            s = over[j]
            above = np.count_nonzero(all_scores > s + _TIE_TOL)
            tied_others = np.count_nonzero(np.abs(all_scores - s) <= _TIE_TOL) - 1
            inj_ranks[did] = int(1 + above + tied_others)
        agreed = True
        if chroma is not None:
            # Chroma's top-k is exact iff it returned k hits, fewer than k documents score strictly
            # above its k-th score, and the scores it reports match the exact ones
            kth = chroma[-1][1] if len(chroma) == k else -np.inf
            agreed = len(chroma) == k and int(np.count_nonzero(all_scores > kth + _TIE_TOL)) < k
            if agreed:
                for did, sc in chroma:
                    exact = over[inj_ids.index(did)] if did in self.injected else base[self.base.id_to_row[did]]
                    if abs(float(exact) - sc) > 1e-3:
                        agreed = False
                        break
        if chroma is not None and agreed:
            order = [(did, over[inj_ids.index(did)] if did in self.injected else base[self.base.id_to_row[did]])
                     for did, _ in chroma]
            order.sort(key=lambda t: -t[1])
        else:
            if chroma is not None:
                self.fallbacks += 1
            top = np.argpartition(-all_scores, k - 1)[:k] if k < len(all_scores) else np.arange(len(all_scores))
            top = top[np.argsort(-all_scores[top], kind="stable")]
            order = [((ids_of[t] if t < len(base) else inj_ids[t - len(base)]), all_scores[t]) for t in top]
        hits = tuple(Hit(did, float(sc), r, did in self.injected) for r, (did, sc) in enumerate(order, 1))
        # the exact rank of an injected doc inside the top-k equals its position there
        for h in hits:
            if h.is_poison:
                inj_ranks[h.doc_id] = min(inj_ranks[h.doc_id], h.rank)
        return SearchResult(hits, agreed, inj_ranks)


_index_cache: "dict[tuple, BaseIndex]" = {}
_index_cache_lock = threading.Lock()
_INDEX_CACHE_SIZE = 6


def shared_base_index(corpus: Corpus, retriever: Retriever, *, settings: StoreSettings | None = None,
                      progress: Progress | None = None) -> BaseIndex:
    """A process-wide, read-only BaseIndex per (corpus, retriever, store); built on first use."""
    key = (corpus.fingerprint, retriever.model_id, tuple(sorted((settings or StoreSettings()).to_dict().items())))
    with _index_cache_lock:
        hit = _index_cache.get(key)
    if hit is not None:
        if progress:
            progress("indexing", len(corpus), len(corpus))
        return hit
    index = BaseIndex.build(corpus, retriever, settings=settings, progress=progress)
    with _index_cache_lock:
        _index_cache[key] = index
        while len(_index_cache) > _INDEX_CACHE_SIZE:
            _index_cache.pop(next(iter(_index_cache)))
    return index
