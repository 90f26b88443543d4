"""Per-run views the UI renders: the rounds table and a 2-D embedding map of one round."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from ..events import DetectorScored, Event, QueryIssued, Retrieved

if TYPE_CHECKING:
    from ..runs.poisoning import PoisoningRun


def rounds_table(events: Sequence[Event]) -> pd.DataFrame:
    """One row per attacked query: its text, the exact rank of its poison, success at K=1/2/5,
    whether Chroma agreed with exact search, and each detector's verdict on the poison."""
    texts = {e.query_id: e.text for e in events if isinstance(e, QueryIssued)}
    flags: dict[str, dict[str, bool]] = {}
    for e in events:
        if isinstance(e, DetectorScored):
            for d, lab, f in zip(e.doc_ids, e.labels, e.flagged):
                if lab == 1:
                    flags.setdefault(d, {})[e.detector] = f
    rows = []
    for e in events:
        if isinstance(e, Retrieved):
            best = min(e.target_ranks) if e.target_ranks else None
            row: dict[str, Any] = {
                "round": e.round + 1,
                "query_id": e.query_id,
                "query": texts.get(e.query_id, ""),
                "poison_rank": best,
                **{f"success@{k}": bool(best is not None and best <= k) for k in (1, 2, 5)},
                "chroma_agreed": e.store_agreed,
            }
            for t in e.target_ids:
                for det, f in flags.get(t, {}).items():
                    row[f"{det}_flagged"] = row.get(f"{det}_flagged", False) or f
            rows.append(row)
    return pd.DataFrame(rows)


def embedding_map(run: "PoisoningRun", round_index: int, n_background: int = 300) -> pd.DataFrame:
    """2-D PCA of one round: the query, its clean top-K, its poison(s) and a sample of anchors.

    PCA is fitted on all points shown (native embeddings). Columns: x, y, kind (query / clean
    top-K / poison / anchor sample), doc_id, text, and ``<detector>_flagged`` for poisons.
    """
    if run.store is None or not run.store.base.dense:
        return pd.DataFrame()
    ret = next((e for e in run.events if isinstance(e, Retrieved) and e.round == round_index), None)
    if ret is None:
        return pd.DataFrame()
    base = run.store.base
    qi = next(i for i, q in enumerate(run.queries) if q.id == ret.query_id)
    anchors_X, anchor_ids, _, _ = run.detection_split() if run.config.detectors else (None, [], None, [])
    rng = np.random.default_rng(0)
    pick = rng.choice(len(anchor_ids), size=min(n_background, len(anchor_ids)), replace=False) if anchor_ids else []
    points: list[tuple[str, str, np.ndarray, str]] = [("query", ret.query_id, run._qvecs[qi], run.queries[qi].text)]
    for d, p in zip(ret.doc_ids, ret.is_poison):
        if not p:
            points.append(("clean top-K", d, run.store.embedding_of(d), run.store.text_of(d)))
    for t in ret.target_ids:
        points.append(("poison", t, run.store.embedding_of(t), run.store.text_of(t)))
    for j in pick:
        d = anchor_ids[int(j)]
        points.append(
            ("anchor sample", d, base.vectors[base.id_to_row[d]], base.corpus.documents[base.id_to_row[d]].text)
        )
    X = np.vstack([p[2] for p in points]).astype(np.float64)
    Xc = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    xy = Xc @ vt[:2].T
    df = pd.DataFrame(
        {
            "x": xy[:, 0],
            "y": xy[:, 1],
            "kind": [p[0] for p in points],
            "doc_id": [p[1] for p in points],
            "text": [p[3][:200] for p in points],
        }
    )
    for e in run.events:
        if isinstance(e, DetectorScored):
            for d, f in zip(e.doc_ids, e.flagged):
                if d in set(ret.target_ids):
                    df.loc[df.doc_id == d, f"{e.detector}_flagged"] = f
    return df


def fit_detector(run: "PoisoningRun", name: str, params: dict | None = None, cache: dict | None = None):
    """The run's own fitted detector (default parameters), or one re-fitted on the run's anchors with
    other parameters (e.g. a fixed β); ``cache`` (any dict the caller keeps) avoids refitting."""
    from ..detectors import DETECTORS

    key = (run.run_id, name, repr(sorted((params or {}).items())))
    if cache is not None and key in cache:
        return cache[key]
    own = getattr(run, "_detectors", {}).get(name)
    if params is None and own is not None:
        det = own
    else:
        anchors, _, _, _ = run.detection_split()
        det = DETECTORS.create(name, {**dict((run.config.detector_params or {}).get(name, {})), **(params or {})})
        det.fit(anchors)
    if cache is not None:
        cache[key] = det
    return det


def detector_report(
    run: "PoisoningRun",
    name: str,
    params: dict | None = None,
    threshold: float | None = None,
    cache: dict | None = None,
) -> dict[str, Any]:
    """Score the held-out clean documents and the poisons attacked so far with a detector (see
    :func:`fit_detector`) — without touching the run's events. ``threshold`` overrides the
    calibrated one (the UI slider)."""
    from sklearn.metrics import roc_auc_score

    det = fit_detector(run, name, params, cache)
    anchors, _, held, _ = run.detection_split()
    attacked = [t for e in run.events if isinstance(e, Retrieved) for t in e.target_ids]
    rows = [run._poison_row[t] for t in attacked]
    sp = det.score(run._pvecs[rows]) if rows else np.zeros(0)
    sh = det.score(held) if len(held) else np.zeros(0)
    thr = det.calibration.threshold if threshold is None else float(threshold)
    tpr = float(np.mean(sp > thr)) if len(sp) else float("nan")
    fpr = float(np.mean(sh > thr)) if len(sh) else float("nan")
    auroc = float(roc_auc_score([0] * len(sh) + [1] * len(sp), np.r_[sh, sp])) if len(sp) and len(sh) else float("nan")
    return {
        "detector": name,
        "threshold": thr,
        "calibrated_threshold": det.calibration.threshold,
        "threshold_in_sample": det.calibration.threshold_in_sample,
        "tpr": tpr,
        "fpr": fpr,
        "auroc": auroc,
        "clean_scores": sh,
        "poison_scores": sp,
        "info": det.fitted_info,
        "n_anchors": len(anchors),
    }
