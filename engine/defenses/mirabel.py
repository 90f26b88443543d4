"""Mirabel's detect-and-hide: a question too close to exactly one document is answered as if it were absent."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext

EULER_GAMMA = 0.5772156649015329


def gumbel_threshold(maxima: Sequence[float], alpha: float) -> tuple[float, float, float]:
    """(the (1 − α) quantile, μ, β) of a Gumbel law fitted by moments to ``maxima`` (β = s·√6/π, μ = m − γβ)."""
    arr = np.asarray(maxima, dtype=float)
    beta = max(float(arr.std(ddof=1)) if len(arr) > 1 else 0.0, 1e-6) * math.sqrt(6) / math.pi
    mu = float(arr.mean()) - EULER_GAMMA * beta
    return mu - beta * math.log(-math.log1p(-alpha)), mu, beta


class DetectAndHide(Defense):
    """Hide the one document a question is suspiciously close to (membership-inference queries), keep the rest.

    Source: Choi, Park, Byun, Lee and Park, *Safeguarding Privacy of Retrieval Data against Membership Inference
    Attacks: Is This Query Too Close to Home?* (Mirabel; arXiv 2505.22061, 2025): a membership query is built from
    its target document, so its maximum similarity to the knowledge base is far above what genuine questions
    reach; the maximum similarity of genuine questions is modelled with a Gumbel (extreme-value) law, a question
    above its (1 − α) quantile is flagged, and the document it is closest to is hidden from the context, so a
    member's answer looks like a non-member's. Here the law is fitted by moments to the maxima of the
    ``calibration_queries`` (genuine questions, a query-set spec) against this knowledge base, once, with the
    retriever's own embeddings; ``threshold`` sets the cut directly instead. By construction about α of genuine
    questions lose their best passage too: the utility cost to measure. Needs a dense retriever; with BM25 it
    passes every context on, saying so.
    """

    stage = "retrieval"

    class Params(Params):
        alpha: float = param(
            0.05, min=1e-6, max=0.5, help="Share of genuine questions allowed above the threshold (Gumbel tail)"
        )
        calibration_queries: str = param(
            "clinic_handbook",
            help="Genuine questions the Gumbel law is fitted to (a query-set spec: bundled, mirage:…, or a file)",
        )
        threshold: Optional[float] = param(
            None, min=-1.0, max=1.0, help="Similarity above which a question is flagged (None: from the Gumbel fit)"
        )

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._vectors: Any = None
        self._ids: list[str] = []
        self.calibration: dict[str, float] = {}

    def _prepare(self, ctx: DefenseContext) -> None:
        r = ctx.retriever
        self._vectors, _ = r.encode_documents(ctx.corpus.texts)  # the embedding cache: no re-encoding
        self._ids = [d.id for d in ctx.corpus.documents]
        if self.params.threshold is not None:
            self.calibration = {"threshold": float(self.params.threshold)}
            return
        from ..queries import load_queries

        questions = [q.text for q in load_queries(self.params.calibration_queries)]
        maxima = r.score(r.encode_queries(questions), self._vectors).max(axis=1)
        tau, mu, beta = gumbel_threshold(maxima, self.params.alpha)
        self.calibration = {"threshold": round(tau, 4), "mu": round(mu, 4), "beta": round(beta, 4), "n": len(maxima)}

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Hides the retrieved document the question singles out (its id, the similarity and the threshold in the
        action)."""
        r = ctx.retriever
        if not getattr(r, "dense", False):
            return list(chunks), self.action("passed", reason="needs a dense retriever")
        if self._vectors is None or len(self._ids) != len(ctx.corpus):
            self._prepare(ctx)
        sims = r.score(r.encode_queries([query]), self._vectors)[0]
        best = int(np.argmax(sims))
        top, tau = float(sims[best]), self.calibration["threshold"]
        detail = {"top_similarity": round(top, 4), "threshold": tau}
        if top < tau:
            return list(chunks), self.action("passed", **detail)
        hidden = self._ids[best]
        return [c for c in chunks if c.doc_id != hidden], self.action("hidden", hidden=hidden, **detail)
