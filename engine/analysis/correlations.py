"""Correlations across the queries of a run: what makes a poison rank high? (scipy statistics)"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import ConfigError
from ..events import Retrieved

if TYPE_CHECKING:
    from ..runs.poisoning import PoisoningRun

FEATURES = {
    "query_words": "query length (words)",
    "angle_q_poison": "angle between query and poison [°]",
    "angle_q_top1_clean": "angle between query and its best clean document [°]",
    "clean_top5_similarity": "mean similarity of the clean top-5",
    "poison_rank": "poison's exact rank",
    "success@2": "attack success at K=2 (0/1)",
}


def _angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.einsum("ij,ij->i", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def query_features(run: "PoisoningRun") -> pd.DataFrame:
    """One row per attacked query of a (dense) run with the features of :data:`FEATURES`."""
    if run.store is None or not run.store.base.dense:
        raise ConfigError("correlations need a dense retriever run")
    rets = [e for e in run.events if isinstance(e, Retrieved) and e.target_ids]
    if not rets:
        return pd.DataFrame(columns=["query_id", *FEATURES])
    base = run.store.base
    idx = {q.id: i for i, q in enumerate(run.queries)}
    qi = np.asarray([idx[e.query_id] for e in rets])
    Q = run._qvecs[qi].astype(np.float64)
    P = run._pvecs[[run._poison_row[e.target_ids[0]] for e in rets]].astype(np.float64)
    S = base.retriever.score(Q, base.vectors)
    top5 = np.argsort(-S, axis=1)[:, :5]
    best = base.vectors[top5[:, 0]].astype(np.float64)
    return pd.DataFrame(
        {
            "query_id": [e.query_id for e in rets],
            "query_words": [len(run.queries[i].text.split()) for i in qi],
            "angle_q_poison": _angle(Q, P),
            "angle_q_top1_clean": _angle(Q, best),
            "clean_top5_similarity": np.take_along_axis(S, top5, axis=1).mean(axis=1),
            "poison_rank": [min(e.target_ranks) for e in rets],
            "success@2": [int(min(e.target_ranks) <= 2) for e in rets],
        }
    )


def correlate(df: pd.DataFrame, x: str, y: str) -> dict[str, float]:
    """Pearson r and Spearman ρ with their two-sided p-values (scipy.stats); NaN when undefined."""
    d = df[[x, y]].dropna()
    out = {
        "n": int(len(d)),
        "pearson_r": float("nan"),
        "pearson_p": float("nan"),
        "spearman_rho": float("nan"),
        "spearman_p": float("nan"),
    }
    if len(d) >= 3 and d[x].nunique() > 1 and d[y].nunique() > 1:
        r = stats.pearsonr(d[x], d[y])
        s = stats.spearmanr(d[x], d[y])
        out.update(
            pearson_r=float(r.statistic),
            pearson_p=float(r.pvalue),
            spearman_rho=float(s.statistic),
            spearman_p=float(s.pvalue),
        )
    return out


EXTRACTION_FEATURES = {
    "query_words": "attack query length (words)",
    "top1_score": "similarity of the best retrieved chunk",
    "mean_score": "mean similarity of the retrieved chunks",
    "context_chunks": "chunks that reached the generator",
    "answer_words": "answer length (words)",
    "max_recall": "best ROUGE-L recall of a context chunk in the answer",
    "new_recovered": "chunks newly recovered (CRR) this round",
    "new_pii": "PII items newly leaked this round",
    "blocked": "query blocked by a defense (0/1)",
}


def extraction_round_features(runs: dict[str, list]) -> pd.DataFrame:
    """One row per round of one or more extraction runs (events), with :data:`EXTRACTION_FEATURES`."""
    rows = []
    for run_id, events in runs.items():
        by_round: dict[int, dict] = {}
        for e in events:
            r = getattr(e, "round", None)
            if not r:
                continue
            row = by_round.setdefault(r, {"run_id": run_id, "round": r})
            if e.kind == "query_issued":
                row["query_words"] = len(e.text.split())
            elif e.kind == "retrieved":
                row["top1_score"] = max(e.scores) if e.scores else np.nan
                row["mean_score"] = float(np.mean(e.scores)) if e.scores else np.nan
            elif e.kind == "generated":
                row["context_chunks"] = len(e.context_ids)
                row["answer_words"] = len(e.text.split())
                row["blocked"] = int(bool(e.blocked_by))
            elif e.kind == "leak_scored":
                row["max_recall"] = max(e.recall.values()) if e.recall else 0.0
                row["new_recovered"] = len(e.recovered)
                row["new_pii"] = len(e.pii)
        rows += [r for r in by_round.values() if "new_recovered" in r]
    return pd.DataFrame(rows, columns=["run_id", "round", *EXTRACTION_FEATURES])


def correlation_rows(df: pd.DataFrame, features: dict[str, str], target: str) -> list[dict[str, object]]:
    """Every feature of ``features`` ({column: label}) against ``target`` as rows a table shows: the label, n,
    Pearson r and Spearman ρ with their p-values to 3 decimals (below 0.001: "<0.001"), "—" where undefined (a
    constant column, or fewer than 3 rows)."""

    def shown(v: float) -> str:
        return "—" if v != v else f"{v:.3f}"  # NaN != NaN

    def p_value(v: float) -> str:
        return "<0.001" if v == v and v < 0.001 else shown(v)

    rows = []
    for f, label in features.items():
        if f == target:
            continue
        c = correlate(df, f, target)
        rows.append(
            {
                "feature": label,
                "n": c["n"],
                "Pearson r": shown(c["pearson_r"]),
                "p (Pearson)": p_value(c["pearson_p"]),
                "Spearman ρ": shown(c["spearman_rho"]),
                "p (Spearman)": p_value(c["spearman_p"]),
            }
        )
    return rows
