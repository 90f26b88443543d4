"""Re-ranking with a cut: a second retriever re-scores the retrieved chunks; only the best survive."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..devices import DEVICE_HELP, check_device
from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


class RerankCut(Defense):
    """Re-score the top-K with a second model and keep at most ``keep`` chunks scoring ≥ ``min_score``.

    Source: re-ranking as a retrieval-stage mitigation (Zeng et al. 2024, §5 discusses re-ranking
    and summarization). No cross-encoder ships offline, so the re-ranker is any registered
    retriever (a different bi-encoder such as ``mpnet``, or ``bm25``); its scores decide the order
    and the cut. Fewer, more relevant chunks means less context for an extraction prompt to copy.
    """

    stage = "retrieval"

    class Params(Params):
        reranker: str = param("mpnet", help="Registered retriever used to re-score (mpnet, minilm, bm25, ...)")
        keep: int = param(2, min=1, max=100, help="Chunks kept after re-ranking")
        min_score: float = param(0.3, min=-1e9, max=1e9, help="Smallest re-ranker score kept")
        device: str = param("auto", help=f"Where a neural re-ranker runs: {DEVICE_HELP}")

        def validate(self) -> None:
            check_device(self.device)

    def _scores(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray:
        from dataclasses import fields

        from ..embedders import RETRIEVERS, make_retriever

        name = self.params.reranker  # a registered retriever, or a sentence-transformers model (takes a device)
        takes_device = name not in RETRIEVERS or "device" in {f.name for f in fields(RETRIEVERS.get(name).Params)}
        rr = make_retriever(self.params.reranker, {"device": self.params.device} if takes_device else None)
        if not rr.dense:
            index = rr.build_index([c.text for c in chunks])
            return np.asarray(index.scores(query)[0], dtype=float)
        q = rr.encode_queries([query])
        d, _ = rr.encode_documents([c.text for c in chunks])
        return np.asarray(rr.score(q, d)[0], dtype=float)

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Re-scores the chunks with ``reranker`` and keeps at most ``keep`` scoring ≥ ``min_score``, best first;
        the action records every re-ranker score."""
        if not chunks:
            return [], self.action("passed", kept=0)
        s = self._scores(query, chunks)
        order = [i for i in np.argsort(-s, kind="stable") if s[i] >= self.params.min_score][: self.params.keep]
        kept = [chunks[i] for i in order]
        dropped = tuple(c.doc_id for c in chunks if c not in kept)
        return kept, self.action(
            "dropped" if dropped else "passed",
            dropped=dropped,
            rerank_scores={chunks[i].doc_id: round(float(s[i]), 4) for i in range(len(chunks))},
        )
