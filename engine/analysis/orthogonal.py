"""Why poisons win (paper §4): orthogonal augmentation (Table 3) and the low similarity of
clean retrieved documents (Table 4), as data frames."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..embedders import Retriever
from ..errors import ConfigError


def _angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    cos = np.einsum("ij,ij->i", a, b) / np.maximum(na * nb, 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def orthogonal_augmentation_pairs(
    retriever: Retriever, queries: Sequence[str], docs: Sequence[str], separator: str = " "
) -> pd.DataFrame:
    """Per pair (q_i, p_i): the four measurements of Table 3.

    f(q)ᵀf(p); f(q)ᵀ(f(q⊕p) − f(q)); ∠(f(q⊕p) − f(q), f(q)) in degrees; f(q)ᵀf(q). All are
    inner products of the raw (native) embeddings, as in the paper. Documents (p and q⊕p) are
    embedded with the document encoder and q with the query encoder, as retrieval does.
    """
    if not retriever.dense:
        raise ConfigError("orthogonal augmentation needs a dense retriever (embeddings)")
    if len(queries) != len(docs):
        raise ConfigError("queries and documents must pair up one to one")
    fq = retriever.encode_queries(list(queries)).astype(np.float64)
    fp = retriever.encode_documents(list(docs))[0].astype(np.float64)
    fqp = retriever.encode_documents([f"{q}{separator}{p}" for q, p in zip(queries, docs)])[0].astype(np.float64)
    delta = fqp - fq
    return pd.DataFrame(
        {
            "q_dot_p": np.einsum("ij,ij->i", fq, fp),
            "q_dot_delta": np.einsum("ij,ij->i", fq, delta),
            "angle_delta_q": _angle_deg(delta, fq),
            "q_dot_q": np.einsum("ij,ij->i", fq, fq),
            "q_dot_qp": np.einsum("ij,ij->i", fq, fqp),
            "angle_q_p": _angle_deg(fq, fp),
        }
    )


TABLE3_ROWS = {
    "q_dot_p": "f(q)ᵀf(p)",
    "q_dot_delta": "f(q)ᵀ(f(q⊕p)−f(q))",
    "angle_delta_q": "∠(f(q⊕p)−f(q), f(q)) [°]",
    "q_dot_q": "f(q)ᵀf(q)",
}


def orthogonal_augmentation_table(
    retriever: Retriever, queries: Sequence[str], doc_sets: Mapping[str, Sequence[str]]
) -> pd.DataFrame:
    """Table 3: mean ± std of each measurement (rows) for each document set P_j (columns).

    ``doc_sets`` maps a set name to documents paired with ``queries`` (one per query; a single
    document is repeated for every query, as a universal target is).
    """
    cols = {}
    for name, docs in doc_sets.items():
        docs = list(docs)
        if len(docs) == 1:
            docs = docs * len(queries)
        df = orthogonal_augmentation_pairs(retriever, queries, docs)
        cols[name] = {label: f"{df[key].mean():.3g} ± {df[key].std(ddof=0):.2g}" for key, label in TABLE3_ROWS.items()}
    return pd.DataFrame(cols)


def clean_retrieval_similarity(
    retriever: Retriever, query_vecs: np.ndarray, doc_vecs: np.ndarray, k: int = 5
) -> pd.DataFrame:
    """Table 4 per query: angle and inner product between q and its K nearest clean documents
    (under the retriever's native similarity), and f(q)ᵀf(q).

    Returns one row per query with the mean over its K documents.
    """
    q = np.asarray(query_vecs, dtype=np.float64)
    d = np.asarray(doc_vecs, dtype=np.float64)
    sims = retriever.score(q, d)
    k = min(k, d.shape[0])
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    rows = []
    for i in range(len(q)):
        R = d[top[i]]
        ip = R @ q[i]
        ang = _angle_deg(R, np.repeat(q[i : i + 1], len(R), axis=0))
        rows.append({"angle_q_R": ang.mean(), "q_dot_R": ip.mean(), "q_dot_q": float(q[i] @ q[i])})
    return pd.DataFrame(rows)


def clean_similarity_table(per_query: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 4 layout: rows = measurements, columns = query sets, cells = mean ± std."""
    labels = {"angle_q_R": "∠(f(q), f(R)) [°]", "q_dot_R": "f(q)ᵀf(R)", "q_dot_q": "f(q)ᵀf(q)"}
    return pd.DataFrame(
        {
            name: {lab: f"{df[c].mean():.3g} ± {df[c].std(ddof=0):.2g}" for c, lab in labels.items()}
            for name, df in per_query.items()
        }
    )
