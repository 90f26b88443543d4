"""On-disk embedding cache keyed by (model id, role, sha256 of the text).

One SQLite file (WAL mode, safe for several processes and threads); vectors are stored as
float32 bytes. Nothing is embedded twice across runs: a rebuilt index reads every vector
it has seen before and encodes only the new texts.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..paths import cache_dir

_BATCH = 900  # SQLite's default host-parameter limit is 999


def text_key(text: str) -> bytes:
    """sha256 digest (raw bytes) of the UTF-8 text: the cache's per-text key."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """A persistent map (model key, text) -> float32 vector."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "embeddings.sqlite"
        self._local = threading.local()
        con = self._con()
        con.execute(
            "CREATE TABLE IF NOT EXISTS emb (model TEXT NOT NULL, h BLOB NOT NULL, "
            "vec BLOB NOT NULL, PRIMARY KEY (model, h)) WITHOUT ROWID"
        )
        con.commit()

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            self._local.con = con
        return con

    def get_many(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Cached vectors of ``texts`` under the ``model`` key, in order; None for a text never embedded."""
        keys = [text_key(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        con = self._con()
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), _BATCH):
            chunk = uniq[i : i + _BATCH]
            marks = ",".join("?" * len(chunk))
            for h, vec in con.execute(f"SELECT h, vec FROM emb WHERE model=? AND h IN ({marks})", [model, *chunk]):
                found[bytes(h)] = np.frombuffer(vec, dtype=np.float32)
        return [found.get(k) for k in keys]

    def put_many(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text under ``model`` (replacing any old one) and commit."""
        rows = [(model, text_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        con = self._con()
        con.executemany("INSERT OR REPLACE INTO emb (model, h, vec) VALUES (?, ?, ?)", rows)
        con.commit()

    def count(self, model: str | None = None) -> int:
        """How many vectors are stored under one model key, or in total when ``model`` is None."""
        sql, args = ("SELECT COUNT(*) FROM emb WHERE model=?", [model]) if model else ("SELECT COUNT(*) FROM emb", [])
        return int(self._con().execute(sql, args).fetchone()[0])

    def encode(
        self,
        model: str,
        texts: Sequence[str],
        encode_fn: Callable[[list[str]], np.ndarray],
        progress: Callable[[int, int], None] | None = None,
        batch_size: int = 32,  # progress moves every 32 texts (at 128 a cold index sat at 0 for its longest batch);
        # measured: 361 handbook chunks with MiniLM took as long at 32 as at 128 (5.1–5.9 s); first tick 1.2 s, not 5
    ) -> tuple[np.ndarray, int]:
        """Vectors for ``texts``, encoding only the missing ones; returns (matrix, n_encoded)."""
        cached = self.get_many(model, texts)
        # longest first, so each batch holds texts of similar length (little padding), as a single
        # sorted encode call would, while progress is still reported batch by batch
        missing = sorted(dict.fromkeys(t for t, v in zip(texts, cached) if v is None), key=len, reverse=True)
        new: dict[str, np.ndarray] = {}
        done = len(texts) - len(missing)
        if progress:
            progress(done, len(texts))
        for i in range(0, len(missing), batch_size):
            batch = missing[i : i + batch_size]
            vecs = np.asarray(encode_fn(batch), dtype=np.float32)
            self.put_many(model, batch, vecs)
            new.update(zip(batch, vecs))
            done += len(batch)
            if progress:
                progress(min(done, len(texts)), len(texts))
        rows = [v if v is not None else new[t] for t, v in zip(texts, cached)]
        if not rows:
            return np.zeros((0, 0), dtype=np.float32), 0
        return np.vstack(rows).astype(np.float32, copy=False), len(missing)


_shared: dict[str, EmbeddingCache] = {}
_lock = threading.Lock()


def shared_cache() -> EmbeddingCache:
    """The process-wide cache at ``<cache>/embeddings.sqlite`` (one instance per path; a connection per thread)."""
    path = str(cache_dir() / "embeddings.sqlite")
    with _lock:
        if path not in _shared:
            _shared[path] = EmbeddingCache(Path(path))
        return _shared[path]
