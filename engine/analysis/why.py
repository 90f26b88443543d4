""" "Why does it work?" for a configuration: Tables 3 and 4 of the paper (§4) side by side."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..attacks.poisoning import make_attack
from ..config import PoisonConfig
from ..corpora import load_corpus, retriever_window
from ..embedders import make_retriever
from ..errors import ConfigError
from ..queries import load_queries
from ..progress import Progress
from ..store import StoreSettings, shared_base_index
from .orthogonal import clean_retrieval_similarity, clean_similarity_table, orthogonal_augmentation_table


def why_it_works(
    cfg: PoisonConfig, *, progress: Optional[Progress] = None, table4_sets: Sequence[str] = ()
) -> dict[str, pd.DataFrame]:
    """Table 3 for three document sets P_j — the run's target information, the top-1 clean
    document of each query (semantically related), another query of the set (same domain) —
    and Table 4 (clean top-5 similarity) for the configured query set and any ``table4_sets`` (one column
    each, the first ``cfg.limit`` questions of each, as the paper's Table 4 has one column per query set)."""
    retriever = make_retriever(cfg.retriever, dict(cfg.retriever_params or {}))
    if not retriever.dense:
        raise ConfigError(f"'why does it work' needs a dense retriever; {cfg.retriever} is sparse")
    corpus = load_corpus(
        cfg.corpus,
        data_dir=cfg.data_dir or None,
        chunk_size=cfg.chunk_size,
        chunk_overlap=cfg.chunk_overlap,
        window=retriever_window(retriever),
    )
    queries = load_queries(cfg.queries, data_dir=cfg.data_dir or None, limit=cfg.limit)
    base = shared_base_index(
        corpus,
        retriever,
        settings=StoreSettings(mode=cfg.store, host=cfg.chroma_host, port=cfg.chroma_port),
        progress=progress,
    )
    texts = [q.text for q in queries]
    qv = retriever.encode_queries(texts)
    attack = make_attack(
        "universal",
        {"target": cfg.target if cfg.target != "poisonedrag" else "pii", "target_text": cfg.target_text},
        seed=cfg.seed,
        data_dir=cfg.data_dir or None,
    )
    sims = retriever.score(qv, base.vectors)
    top1 = [corpus.documents[int(i)].text for i in np.argmax(sims, axis=1)]
    other = texts[1:] + texts[:1]
    doc_sets = {f"target: {attack.params.target}": [attack.target()], "top-1 clean doc": top1, "another query": other}
    table3 = orthogonal_augmentation_table(retriever, texts, doc_sets)
    per_set = {cfg.queries: clean_retrieval_similarity(retriever, qv, base.vectors, k=5)}
    for name in table4_sets:
        if name not in per_set:
            qs = load_queries(name, data_dir=cfg.data_dir or None, limit=cfg.limit)
            per_set[name] = clean_retrieval_similarity(
                retriever, retriever.encode_queries([q.text for q in qs]), base.vectors, k=5
            )
    table4 = clean_similarity_table(per_set)
    return {"table3_orthogonal_augmentation": table3, "table4_clean_retrieval": table4}
