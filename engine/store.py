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

import contextlib
import hashlib
import os
import shutil
import sqlite3
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .corpora import Corpus
from .embedders import BM25Index, Retriever
from .errors import ConfigError, EngineError
from .params import Params, param
from .paths import cache_dir
from .progress import Progress
from .file_lock import exclusive
from .types import TENANT_KEY, Document, Hit

_TIE_TOL = 1e-5
SCORE_BLOCK_BYTES = 256 * 2**20  # exact scoring holds at most this much of a queries × documents score matrix


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
                    raise EngineError(
                        f"cannot reach the Chroma server at {settings.host}:{settings.port} "
                        f"({type(e).__name__}); start it with 'chroma run --host {settings.host} "
                        f"--port {settings.port}'"
                    ) from None
            else:
                path = settings.path or str(cache_dir("chroma"))
                # a fresh store's first open creates its tables: two processes opening it at once both ran
                # the migrations and the second failed ("table collections already exists")
                with _store_file_lock(Path(path), "open"):
                    _clients[key] = chromadb.PersistentClient(path=path, settings=cs)
        return _clients[key]


def _vector_segment_dirs(settings: StoreSettings | None, collection_id: str) -> list[Path]:
    """Folders of a collection's vector segments in an embedded store (none for a server)."""
    settings = settings or StoreSettings()
    if settings.mode != "persistent":
        return []
    root = Path(settings.path or str(cache_dir("chroma")))
    try:
        with contextlib.closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'", (collection_id,)
                )
            ]
    except sqlite3.Error:
        return []
    return [root / i for i in ids if (root / i).is_dir()]


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
    vectors: np.ndarray | None  # native embeddings (None for sparse retrievers)
    collection: Any = None  # Chroma collection (dense only)
    bm25: BM25Index | None = None
    n_encoded: int = 0  # how many texts had to be embedded for this build
    id_to_row: dict[str, int] = field(default_factory=dict)

    @property
    def dense(self) -> bool:
        """Whether the index holds vectors (False for sparse BM25 indexes)."""
        return self.vectors is not None

    def tenant_mask(self, tenant: str) -> np.ndarray:
        """Rows of the base that belong to ``tenant`` (a boolean mask in corpus order; cached per tenant)."""
        masks = self.__dict__.setdefault("_tenant_masks", {})
        if tenant not in masks:
            masks[tenant] = np.array([d.tenant == tenant for d in self.corpus.documents], dtype=bool)
        return masks[tenant]

    def search_matrix(self) -> np.ndarray:
        """The document vectors as searched: float32, unit-normalised under cosine; computed once and kept."""
        if not hasattr(self, "_search"):
            v = self.vectors
            if self.retriever.similarity == "cosine":
                v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
            self._search = np.ascontiguousarray(v, dtype=np.float32)
        return self._search

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        retriever: Retriever,
        *,
        settings: StoreSettings | None = None,
        progress: Progress | None = None,
    ) -> "BaseIndex":
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
        vecs, n_new = retriever.encode_documents(corpus.texts, progress=progress)
        name = (
            "base-"
            + hashlib.sha256(
                f"{retriever.model_id}|{_space(retriever.similarity)}|{corpus.fingerprint}".encode()
            ).hexdigest()[:40]
        )
        col = _filled_collection(name, corpus, vecs, retriever, settings, progress)
        return cls(
            corpus, retriever, vecs, collection=col, n_encoded=n_new, id_to_row={d: i for i, d in enumerate(ids)}
        )

    @classmethod
    def from_vectors(
        cls,
        corpus: Corpus,
        retriever: Retriever,
        vectors: np.ndarray,
        key: str,
        *,
        settings: StoreSettings | None = None,
        progress: Progress | None = None,
    ) -> "BaseIndex":
        """An index whose document vectors come from elsewhere (e.g. a re-trained document encoder,
        RAGFort's reindexing) while queries are still encoded by ``retriever``; ``key`` names them."""
        if len(corpus) == 0:
            raise EngineError("cannot index an empty corpus")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(corpus):
            raise EngineError(f"{vectors.shape[0]} vectors for {len(corpus)} documents")
        name = (
            "base-"
            + hashlib.sha256(f"{key}|{_space(retriever.similarity)}|{corpus.fingerprint}".encode()).hexdigest()[:40]
        )
        col = _filled_collection(name, corpus, vectors, retriever, settings, progress)
        return cls(corpus, retriever, vectors, collection=col, id_to_row={d: i for i, d in enumerate(corpus.ids)})


BUILD_LOCK_STALE_S = 1800.0  # a server build lock older than this is taken to be left by a dead builder
fills = 0  # base collections this process filled (tests read it)


def _complete(col: Any, n: int) -> bool:
    return bool((col.metadata or {}).get("complete")) and col.count() == n


@contextlib.contextmanager
def _server_build_lock(client: Any, name: str, ready: Callable[[], bool], poll: float = 0.5) -> Iterator[bool]:
    """Many processes (Ray workers on several machines) sharing one Chroma server: the first to create the
    collection ``lock-<name>`` builds (yields True) and deletes it after; the others wait until it is gone
    (yield False once the base is ready, else they try to take the lock themselves). Creating a collection is
    atomic on the server, so exactly one process holds the lock; a lock older than BUILD_LOCK_STALE_S (its
    builder died) is removed."""
    lock = "lock-" + name[5:] if name.startswith("base-") else "lock-" + name
    while True:
        if ready():
            yield False
            return
        try:
            client.create_collection(lock, embedding_function=None, metadata={"since": time.time(), "pid": os.getpid()})
        except Exception:  # noqa: BLE001 - it exists: someone else is building (chromadb's error types vary)
            try:
                since = float((client.get_collection(lock).metadata or {}).get("since", time.time()))
                if time.time() - since > BUILD_LOCK_STALE_S:
                    client.delete_collection(lock)
            except Exception:  # noqa: BLE001 - gone meanwhile: look again
                pass
            time.sleep(poll)
            continue
        try:
            yield True
        finally:
            try:
                client.delete_collection(lock)
            except Exception:  # noqa: BLE001 - already removed as stale: nothing to release
                pass
        return


def _store_file_lock(root: Path, name: str) -> contextlib.AbstractContextManager[bool]:
    """An exclusive lock on ``<store>/locks/<name>.lock``, for processes sharing one embedded store."""
    return exclusive(root / "locks" / f"{name}.lock")


def _file_build_lock(settings: StoreSettings | None, name: str) -> contextlib.AbstractContextManager[bool]:
    """Many processes sharing one embedded store (the app, a CLI run and an example service started at once on a
    fresh cache; test workers): one fills a base collection while the others wait, then find it complete. Without
    it a second process took the half-filled collection for an interrupted build and deleted it under the first
    one's inserts."""
    return _store_file_lock(Path((settings or StoreSettings()).path or str(cache_dir("chroma"))), name)


def _metadatas(docs: Sequence[Document]) -> list[dict[str, Any]]:
    """Chroma metadata of base chunks: not a poison, and the chunk's tenant where it has one (what an
    ``inside`` tenant filter searches with)."""
    return [{"poison": False} if d.tenant is None else {"poison": False, TENANT_KEY: d.tenant} for d in docs]


def _filled_collection(
    name: str,
    corpus: Corpus,
    vecs: np.ndarray,
    retriever: Retriever,
    settings: StoreSettings | None,
    progress: Progress | None,
) -> Any:
    """The Chroma collection ``name`` holding ``vecs`` for the corpus ids; filled once, then reused. Many
    processes may ask at once: one fills it (under a lock held on the Chroma server, or a file lock beside an
    embedded store), the others wait and reuse it."""
    global fills
    client = chroma_client(settings)
    space = _space(retriever.similarity)
    ids = corpus.ids
    with _clients_lock:
        lock = _build_locks.setdefault(name, threading.Lock())
    remote = (settings or StoreSettings()).mode == "http"

    def ready() -> bool:
        try:
            return _complete(client.get_collection(name), len(corpus))
        except Exception:  # noqa: BLE001 - no such collection yet
            return False

    guard = _server_build_lock(client, name, ready) if remote else _file_build_lock(settings, name)
    with lock, guard as mine:
        col = client.get_or_create_collection(name, embedding_function=None, configuration={"hnsw": {"space": space}})
        if mine and not _complete(col, len(corpus)):
            fills += 1
            if col.count():  # an interrupted build: start over
                client.delete_collection(name)
                col = client.create_collection(name, embedding_function=None, configuration={"hnsw": {"space": space}})
            step = min(client.get_max_batch_size(), 4096)
            for a, b in _batches(len(corpus), step):
                # texts stay in the corpus (memory); storing them in Chroma would build its
                # full-text index too and cost ~5% of ingest for nothing we query
                col.add(ids=ids[a:b], embeddings=vecs[a:b], metadatas=_metadatas(corpus.documents[a:b]))
                if progress:
                    progress("indexing", b, len(corpus))
            col.modify(
                metadata={"complete": True, "corpus": corpus.name, "model": retriever.model_id[:200], "n": len(corpus)}
            )
    return col


@dataclass(frozen=True)
class SearchResult:
    """Top-K hits for one query (exact), whether Chroma agreed, and exact ranks of requested injected docs."""

    hits: tuple[Hit, ...]
    store_agreed: bool
    injected_ranks: dict[str, int]


class RunStore:
    """One run's view: the shared base plus this run's own overlay of injected documents.

    Injected documents can carry a *group* (e.g. the query they target); a search may make only
    one group visible per query. That is how "one poison at a time" runs: every poison lives in
    the run's overlay, and each query sees the base plus its own poison only (a Chroma metadata
    filter, and the same mask in exact scoring) — equivalent to injecting it alone.
    """

    def __init__(
        self,
        base: BaseIndex,
        *,
        settings: StoreSettings | None = None,
        run_id: str | None = None,
        use_chroma: bool = True,
    ) -> None:
        self.base = base
        self.run_id = run_id or uuid.uuid4().hex
        self.settings = settings
        self.use_chroma = use_chroma and base.dense
        self.injected: dict[str, Document] = {}
        self._group: dict[str, str] = {}
        self._vecs: dict[str, np.ndarray] = {}
        self._counts: dict[str, Counter] = {}
        self._overlay = None
        self._over_cache: tuple | None = None
        self.fallbacks = 0
        self.searches = 0

    # ---------------------------------------------------------------- lifecycle
    def _overlay_collection(self) -> Any:
        if self._overlay is None:
            client = chroma_client(self.settings)
            self._overlay = client.create_collection(
                f"run-{self.run_id}",
                embedding_function=None,
                configuration={"hnsw": {"space": _space(self.base.retriever.similarity)}},
            )
        return self._overlay

    def close(self) -> None:
        """Drop the overlay collection (the base is untouched), and its HNSW folder on disk: an embedded
        Chroma deletes the collection's rows but leaves the vector segment's folder behind."""
        if self._overlay is not None:
            folders = _vector_segment_dirs(self.settings, str(self._overlay.id))
            try:
                chroma_client(self.settings).delete_collection(self._overlay.name)
            except Exception:
                folders = []
            for f in folders:
                shutil.rmtree(f, ignore_errors=True)
            self._overlay = None

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- mutation
    def inject(
        self, docs: Sequence[Document], vectors: np.ndarray | None = None, groups: Sequence[str] | None = None
    ) -> np.ndarray | None:
        """Add documents to this run only; returns their native embeddings (dense)."""
        docs = list(docs)
        if not docs:
            return None
        groups = list(groups) if groups is not None else [""] * len(docs)
        seen = set()
        for d in docs:
            if d.id in self.base.id_to_row or d.id in self.injected or d.id in seen:
                raise ConfigError(f"document id {d.id!r} already exists in this run")
            seen.add(d.id)
        self._over_cache = None
        if not self.base.dense:
            for d, g in zip(docs, groups):
                self.injected[d.id] = d
                self._group[d.id] = g
                self._counts[d.id] = Counter(self.base.retriever.tokenize(d.text))
            return None
        if vectors is None:
            vectors, _ = self.base.retriever.encode_documents([d.text for d in docs])
        vectors = np.asarray(vectors, dtype=np.float32)
        for d, v, g in zip(docs, vectors, groups):
            self.injected[d.id] = d
            self._group[d.id] = g
            self._vecs[d.id] = v
        if self.use_chroma:
            col = self._overlay_collection()
            step = 4096
            for a, b in _batches(len(docs), step):
                col.add(
                    ids=[d.id for d in docs[a:b]],
                    embeddings=vectors[a:b],
                    documents=[d.text for d in docs[a:b]],
                    metadatas=[{"poison": True, "group": g} for g in groups[a:b]],
                )
        return vectors

    def remove(self, ids: Sequence[str]) -> None:
        """Take injected documents out of the run's overlay (ids that were never injected are ignored)."""
        ids = [i for i in ids if i in self.injected]
        for i in ids:
            self.injected.pop(i)
            self._group.pop(i, None)
            self._vecs.pop(i, None)
            self._counts.pop(i, None)
        self._over_cache = None
        if ids and self.use_chroma and self._overlay is not None:
            self._overlay.delete(ids=ids)

    # ---------------------------------------------------------------- lookup
    def __len__(self) -> int:
        return len(self.base.corpus) + len(self.injected)

    def text_of(self, doc_id: str) -> str:
        """Text of a base or injected document by id."""
        if doc_id in self.injected:
            return self.injected[doc_id].text
        return self.base.corpus.documents[self.base.id_to_row[doc_id]].text

    def embedding_of(self, doc_id: str) -> np.ndarray:
        """Native (unnormalised) embedding of a base or injected document by id (dense indexes only)."""
        if doc_id in self._vecs:
            return self._vecs[doc_id]
        return self.base.vectors[self.base.id_to_row[doc_id]]

    def _overlay_arrays(self) -> tuple[list[str], np.ndarray, np.ndarray, dict[str, int], Counter]:
        """Injected ids, their search-space vectors, group labels, id → column and group sizes
        (cached until the overlay changes)."""
        if self._over_cache is None:
            ids = list(self.injected)
            groups = np.asarray([self._group[i] for i in ids], dtype=object)
            if self.base.dense and ids:
                V = np.vstack([self._vecs[i] for i in ids])
                if self.base.retriever.similarity == "cosine":
                    V = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
            else:
                V = np.zeros((0, self.base.vectors.shape[1] if self.base.dense else 0), dtype=np.float32)
            self._over_cache = (ids, V, groups, {d: j for j, d in enumerate(ids)}, Counter(groups.tolist()))
        return self._over_cache

    # ---------------------------------------------------------------- search
    def search(
        self,
        queries: Sequence[str],
        k: int,
        query_vecs: np.ndarray | None = None,
        *,
        groups: Sequence[str] | None = None,
        rank_ids: Sequence[Sequence[str]] | None = None,
        tenant: str | None = None,
    ) -> list[SearchResult]:
        """Exact top-``k`` per query, and Chroma's answer checked against it.

        ``groups``: per query, the only group of injected documents it can see (None: all).
        ``rank_ids``: per query, injected ids whose exact rank among all visible documents to report.
        ``tenant``: only the base chunks of this tenant are searched (the filter inside the vector search:
        Chroma's ``where``, and the same mask in exact scoring); fewer than ``k`` hits when it owns fewer.
        """
        queries = list(queries)
        block = max(1, SCORE_BLOCK_BYTES // (4 * max(1, len(self.base.corpus) + len(self.injected))))
        if len(queries) > block:  # a large corpus: score the queries in blocks, memory stays bounded
            out: list[SearchResult] = []
            for a in range(0, len(queries), block):
                out += self.search(
                    queries[a : a + block],
                    k,
                    None if query_vecs is None else query_vecs[a : a + block],
                    groups=None if groups is None else groups[a : a + block],
                    rank_ids=None if rank_ids is None else rank_ids[a : a + block],
                    tenant=tenant,
                )
            return out
        inj_ids, V, inj_groups, col_of, group_size = self._overlay_arrays()
        n_docs = len(self.base.corpus) + (
            len(self.injected) if groups is None else min((group_size.get(g, 0) for g in groups), default=0)
        )
        if k < 1:
            raise ConfigError(f"top-k must be at least 1, got {k}")
        if k > n_docs:
            raise ConfigError(f"top-k ({k}) is larger than the corpus ({n_docs} documents)")
        if not queries:
            return []
        if groups is not None:
            visible = np.asarray(inj_groups)[None, :] == np.asarray(list(groups), dtype=object)[:, None]
        else:
            visible = np.ones((len(queries), len(inj_ids)), dtype=bool)
        if self.base.dense:
            if query_vecs is None:
                query_vecs = self.base.retriever.encode_queries(queries)
            Q = np.asarray(query_vecs, dtype=np.float32)
            Qs = (
                Q / np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-12)
                if self.base.retriever.similarity == "cosine"
                else Q
            )
            S_base = Qs @ self.base.search_matrix().T
            S_over = Qs @ V.T if len(inj_ids) else np.zeros((len(queries), 0), dtype=np.float32)
        else:
            S_base = np.zeros((len(queries), len(self.base.corpus)), dtype=np.float32)
            S_over = np.zeros((len(queries), len(inj_ids)), dtype=np.float32)
            for i, q in enumerate(queries):
                vis = [inj_ids[j] for j in np.flatnonzero(visible[i])]
                b, o = self.base.bm25.scores(q, [self._counts[d] for d in vis])
                S_base[i] = b
                S_over[i, np.flatnonzero(visible[i])] = o
        S_over = np.where(visible, S_over, -np.inf).astype(np.float32)
        if tenant is not None:  # other tenants' chunks cannot be found at all
            S_base = np.where(self.base.tenant_mask(tenant)[None, :], S_base, -np.inf).astype(np.float32)
        kb = min(k, S_base.shape[1])
        top_base = (
            np.argpartition(-S_base, kb - 1, axis=1)[:, :kb]
            if kb < S_base.shape[1]
            else np.tile(np.arange(S_base.shape[1]), (len(queries), 1))
        )
        chroma = self._chroma_topk(Q, k, groups, group_size, tenant) if self.use_chroma else None
        ids_of = self.base.corpus.ids
        out = []
        for i in range(len(queries)):
            cand = [(ids_of[r], float(S_base[i, r]), False) for r in top_base[i] if S_base[i, r] > -np.inf]
            for j in np.flatnonzero(visible[i]):
                cand.append((inj_ids[j], float(S_over[i, j]), True))
            cand.sort(key=lambda t: -t[1])
            exact = cand[:k]
            agreed = True
            if chroma is not None:
                ch = chroma[i]
                agreed = (
                    len(ch) == len(exact)
                    and {d for d, _ in ch} == {d for d, _, _ in exact}
                    and all(abs(a[1] - b[1]) <= 1e-3 for a, b in zip(ch, exact))
                )
                if not agreed:  # tied scores may legitimately order differently: accept equal score multisets
                    kth = exact[-1][1]
                    agreed = len(ch) == len(exact) and all(
                        abs(sc - self._exact_score(i, d, S_base, S_over, col_of)) <= 1e-3 and sc >= kth - _TIE_TOL
                        for d, sc in ch
                    )
                if not agreed:
                    self.fallbacks += 1
            hits = tuple(Hit(d, sc, r, p) for r, (d, sc, p) in enumerate(exact, 1))
            ranks = {}
            for did in rank_ids[i] if rank_ids is not None else ():
                sc = S_over[i, col_of[did]]
                above = int(np.count_nonzero(S_base[i] > sc + _TIE_TOL) + np.count_nonzero(S_over[i] > sc + _TIE_TOL))
                tied = (
                    int(
                        np.count_nonzero(np.abs(S_base[i] - sc) <= _TIE_TOL)
                        + np.count_nonzero(np.abs(S_over[i] - sc) <= _TIE_TOL)
                    )
                    - 1
                )
                # ties count against the injected document (a conservative attack success) unless
                # it is already listed in the exact top-k at a better position
                pos = next((h.rank for h in hits if h.doc_id == did), None)
                ranks[did] = min(1 + above + tied, pos) if pos is not None else 1 + above + tied
            out.append(SearchResult(hits, agreed, ranks))
        self.searches += len(queries)
        return out

    def _exact_score(self, i: int, did: str, S_base: np.ndarray, S_over: np.ndarray, col_of: dict[str, int]) -> float:
        if did in col_of:
            return float(S_over[i, col_of[did]])
        row = self.base.id_to_row.get(did)
        return float(S_base[i, row]) if row is not None else float("nan")

    def _chroma_topk(
        self,
        Q: np.ndarray,
        k: int,
        groups: Sequence[str] | None,
        group_size: Counter | None = None,
        tenant: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Chroma's answer: the base collection (only ``tenant``'s chunks when given: a ``where`` filter inside
        the search) and this run's overlay, merged by score."""
        n_base = len(self.base.corpus) if tenant is None else int(self.base.tenant_mask(tenant).sum())
        if n_base:
            res = self.base.collection.query(
                query_embeddings=Q,
                n_results=min(k, n_base),
                include=["distances"],
                **({"where": {TENANT_KEY: tenant}} if tenant is not None else {}),
            )
        else:
            res = {"ids": [[] for _ in range(len(Q))], "distances": [[] for _ in range(len(Q))]}
        merged = [
            list(zip(ids, (1.0 - np.asarray(d, dtype=np.float64)).tolist()))
            for ids, d in zip(res["ids"], res["distances"])
        ]
        if self.injected and self._overlay is not None:
            if groups is None:
                r = self._overlay.query(query_embeddings=Q, n_results=min(k, len(self.injected)), include=["distances"])
                for m, ids, d in zip(merged, r["ids"], r["distances"]):
                    m.extend(zip(ids, (1.0 - np.asarray(d, dtype=np.float64)).tolist()))
            else:
                sizes = group_size if group_size is not None else Counter(self._group.values())
                for i, g in enumerate(groups):
                    n_g = sizes.get(g, 0)
                    if not n_g:
                        continue
                    r = self._overlay.query(
                        query_embeddings=Q[i : i + 1], n_results=min(k, n_g), where={"group": g}, include=["distances"]
                    )
                    merged[i].extend(zip(r["ids"][0], (1.0 - np.asarray(r["distances"][0], dtype=np.float64)).tolist()))
        return [sorted(m, key=lambda t: -t[1])[:k] for m in merged]


_index_cache: "dict[tuple, BaseIndex]" = {}
_index_cache_lock = threading.Lock()
_INDEX_CACHE_SIZE = 6


def shared_base_index(
    corpus: Corpus, retriever: Retriever, *, settings: StoreSettings | None = None, progress: Progress | None = None
) -> BaseIndex:
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
