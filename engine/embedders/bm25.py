"""Okapi BM25, a sparse lexical retriever with exact, incrementally updatable statistics."""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

import numpy as np
from scipy import sparse

from ..params import Params, param
from .base import Retriever

_TOKEN = re.compile(r"[a-z0-9]+")


class BM25Retriever(Retriever):
    """Okapi BM25 over lowercased word tokens (a genuinely different, sparse retriever family).

    Source: Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009.
    idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)) (the non-negative Lucene variant);
    score(q, d) = Σ_t qtf·idf(t)·tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)).
    Injected documents update N, df and avgdl exactly, so poison ranks are exact.
    """

    dense = False
    offline = True  # no weights at all

    class Params(Params):
        k1: float = param(1.5, min=0.0, max=5.0, help="Term-frequency saturation")
        b: float = param(0.75, min=0.0, max=1.0, help="Length normalisation")
        stopwords: bool = param(True, help="Drop English stop words")

    @property
    def model_id(self) -> str:
        """k1, b and the stop-word switch: indexes built with different settings are never shared."""
        p = self.params
        return f"bm25:k1={p.k1}:b={p.b}:sw={p.stopwords}"

    @property
    def similarity(self) -> str:
        """``bm25``: no vector geometry; scores come from :class:`BM25Index`."""
        return "bm25"

    def tokenize(self, text: str) -> list[str]:
        """Lower-cased alphanumeric tokens of ``text``, without scikit-learn's English stop words if ``stopwords``."""
        toks = _TOKEN.findall(text.lower())
        if self.params.stopwords:
            from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

            toks = [t for t in toks if t not in ENGLISH_STOP_WORDS]
        return toks

    def build_index(self, texts: Sequence[str]) -> "BM25Index":
        """A :class:`BM25Index` over the base corpus ``texts`` (injected documents are scored later as an overlay)."""
        return BM25Index(self, [Counter(self.tokenize(t)) for t in texts])


class BM25Index:
    """Term-frequency matrix of a base corpus plus an overlay of injected documents."""

    def __init__(self, retriever: BM25Retriever, counts: list[Counter]) -> None:
        self.r = retriever
        vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        for i, c in enumerate(counts):
            for term, tf in c.items():
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
                vals.append(tf)
        self.vocab = vocab
        self.n = len(counts)
        self.tf = sparse.csc_matrix(
            (np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(self.n, max(len(vocab), 1))
        )
        self.dl = np.asarray([sum(c.values()) for c in counts], dtype=np.float32)
        self.df = np.diff(self.tf.indptr).astype(np.float64)

    def scores(self, query: str, overlay: Sequence[Counter] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Exact BM25 scores of base docs and overlay docs, with statistics over both."""
        k1, b = self.r.params.k1, self.r.params.b
        qtf = Counter(self.r.tokenize(query))
        n_total = self.n + len(overlay)
        odl = np.asarray([sum(c.values()) for c in overlay], dtype=np.float32)
        avgdl = float((self.dl.sum() + odl.sum()) / max(n_total, 1)) or 1.0
        base = np.zeros(self.n, dtype=np.float32)
        over = np.zeros(len(overlay), dtype=np.float32)
        for term, qn in qtf.items():
            col = self.vocab.get(term)
            df = (self.df[col] if col is not None else 0.0) + sum(1 for c in overlay if term in c)
            if df == 0:
                continue
            idf = np.log(1.0 + (n_total - df + 0.5) / (df + 0.5))
            if col is not None:
                start, end = self.tf.indptr[col], self.tf.indptr[col + 1]
                rows = self.tf.indices[start:end]
                tf = self.tf.data[start:end]
                base[rows] += qn * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.dl[rows] / avgdl))
            for j, c in enumerate(overlay):
                tf = c.get(term, 0)
                if tf:
                    over[j] += qn * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * odl[j] / avgdl))
        return base, over
