"""TrustRAG's first stage: remove the tight cluster that several poisons for one question form in the top-K."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..metrics.overlap import rouge_l, stemmed_tokens
from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


def _mean_pairwise_cosine(vecs: np.ndarray) -> float | None:
    if len(vecs) < 2:
        return None
    v = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    sims = v @ v.T
    iu = np.triu_indices(len(v), 1)
    return float(sims[iu].mean())


class ClusterFilter(Defense):
    """TrustRAG-style clustering filter over the retrieved top-K.

    Source: Zhou et al., "TrustRAG: Enhancing Robustness and Trustworthiness in RAG", 2025, §3.2 (clean
    retrieval: K-means filtering). Poisons written for one question resemble each other, so they form a
    tight cluster among the top-K. Steps, as the paper describes them: (1) a ROUGE-L self-consistency
    check — if no two retrieved chunks share a ROUGE-L F1 above ``rouge_threshold``, nothing looks
    duplicated and all are kept; (2) K-means with two clusters over the standardised, L2-normalised
    embeddings; a cluster whose mean pairwise cosine (of the retriever's embeddings) exceeds
    ``cosine_threshold`` is removed; (3) inside what is left, chunks that overlap another by ROUGE-L F1 above
    ``rouge_threshold`` are removed as a group. The paper's second stage (the LLM's own knowledge against
    the context) is not part of this filter. Expected weakness, shown in the lab: one poison per question
    (universal poisoning one at a time) forms no cluster.
    """

    stage = "retrieval"

    class Params(Params):
        cosine_threshold: float = param(
            0.88, min=0.0, max=1.0, help="A cluster with a higher mean pairwise cosine is removed (paper: 0.88)"
        )
        rouge_threshold: float = param(
            0.25, min=0.0, max=1.0, help="ROUGE-L F1 above which two chunks count as near-duplicates (paper: 0.25)"
        )
        seed: int = param(0, min=0, help="K-means initialisation seed")

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Drops the tight cluster and near-duplicate groups; the action lists the dropped ids and each
        cluster's mean cosine."""
        chunks = list(chunks)
        if len(chunks) < 3 or not getattr(ctx.retriever, "dense", False):
            return chunks, self.action("passed", reason="needs ≥ 3 chunks and a dense retriever", kept=len(chunks))
        p = self.params
        toks = [stemmed_tokens(c.text) for c in chunks]
        pair = {(i, j): rouge_l(toks[i], toks[j])[2] for i in range(len(chunks)) for j in range(i + 1, len(chunks))}
        if not any(v > p.rouge_threshold for v in pair.values()):
            return chunks, self.action("passed", reason="no near-duplicate chunks", kept=len(chunks))
        from sklearn.cluster import KMeans
        from sklearn.preprocessing import StandardScaler

        vecs = ctx.retriever.encode_documents([c.text for c in chunks])[0].astype(np.float64)
        z = StandardScaler().fit_transform(vecs)
        z = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
        labels = KMeans(n_clusters=2, n_init=10, max_iter=500, random_state=p.seed).fit(z).labels_
        drop: set[int] = set()
        tightness = {}
        for lab in (0, 1):
            members = [i for i in range(len(chunks)) if labels[i] == lab]
            t = _mean_pairwise_cosine(vecs[members])
            tightness[str(lab)] = None if t is None else round(t, 4)
            if t is not None and t > p.cosine_threshold:
                drop.update(members)
        for (i, j), v in pair.items():  # near-duplicate groups among what is left
            if v > p.rouge_threshold and i not in drop and j not in drop:
                drop.update((i, j))
        kept = [c for i, c in enumerate(chunks) if i not in drop]
        dropped = tuple(chunks[i].doc_id for i in sorted(drop))
        return kept, self.action(
            "dropped" if dropped else "passed", dropped=dropped, kept=len(kept), cluster_cosine=tightness
        )
