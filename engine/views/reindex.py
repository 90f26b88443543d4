"""The cluster view of RAGFort contrastive reindexing, outside a run.

The reindex defense keeps its :class:`~engine.defenses.supcon.ReindexResult` only on the live
defense object; a comparison keeps rows. :func:`reindex_view` recomputes the result for the same
knowledge-base chunks, retriever and parameters — :func:`contrastive_reindex` caches it on disk,
so after a run that used the defense this is a cache hit.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ..progress import Progress


def reindex_view(
    kb: str,
    retriever: str = "minilm",
    params: Optional[Mapping[str, Any]] = None,
    *,
    data_dir: str = "",
    chunk_size: Optional[int] = 512,
    chunk_overlap: int = 0,
    retriever_params: Optional[Mapping[str, Any]] = None,
    progress: Progress | None = None,
):
    """ReindexResult (labels, 2-D projections, separation before/after) for ``kb`` under the reindex defense."""
    from ..corpora import load_corpus, retriever_window
    from ..defenses.reindex import ContrastiveReindex
    from ..defenses.supcon import contrastive_reindex
    from ..embedders import make_retriever

    p = ContrastiveReindex.Params.from_dict(dict(params or {}), where="reindex")
    ret = make_retriever(retriever, dict(retriever_params or {}))
    corpus = load_corpus(
        kb, data_dir=data_dir or None, chunk_size=chunk_size, chunk_overlap=chunk_overlap, window=retriever_window(ret)
    )
    return contrastive_reindex(
        corpus.texts,
        ret,
        min_cluster_size=p.min_cluster_size,
        noise=p.noise,
        epochs=p.epochs,
        temperature=p.temperature,
        batch_size=p.batch_size,
        lr=p.lr,
        max_steps=p.max_steps,
        seed=p.seed,
        progress=progress,
    )


def reindex_view_for(base: Mapping[str, Any], progress: Progress | None = None):
    """The same, from an ExtractionConfig-shaped mapping (a comparison's ``base``)."""
    from ..config import ExtractionConfig

    c = ExtractionConfig.from_dict(dict(base or {}), where="base")
    return reindex_view(
        c.kb,
        c.retriever,
        dict(c.defense_params or {}).get("reindex"),
        data_dir=c.data_dir,
        chunk_size=c.chunk_size,
        chunk_overlap=c.chunk_overlap,
        retriever_params=c.retriever_params,
        progress=progress,
    )
