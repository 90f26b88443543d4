"""Membership-inference metrics: AUROC with a bootstrap interval, the ROC curve, TPR at a fixed FPR.

Scores are the attack's: higher means "more likely a member". The figures follow the membership-inference
literature's reporting (Carlini et al. 2022, *Membership Inference Attacks From First Principles*, §III: the
ROC curve and the TPR at a low FPR rather than accuracy alone), as the RAG attacks' papers report them
(Li et al. 2024 and Liu et al. 2024 report AUROC; Anderson et al. 2024 TPR at low FPR).

* AUROC: the Mann–Whitney statistic, P(score of a member > score of a non-member), ties counted half; exact,
  no curve integration.
* Its interval: a stratified percentile bootstrap (members and non-members resampled separately, each with
  replacement, ``n_boot`` times, seeded): the 2.5th and 97.5th percentiles. Stratified because the class sizes
  are the experiment's design, not random. Where every resample gives the same AUROC (a perfect separation,
  1.0 or 0.0, or scores all tied) the percentile bootstrap collapses to a point — [1.00, 1.00] from 3 + 3 records
  would claim a certainty no sample that small gives. There (a choice, documented) the interval is the Wilson
  interval of the AUROC read as a proportion of min(members, non-members) trials: 3 + 3 perfectly separated gives
  [0.44, 1.00], 200 + 200 gives [0.98, 1.00].
* TPR at FPR ≤ α: the threshold is the lowest score that keeps the non-members' false-positive share at or below
  α (every score tied with it counts as positive); the TPR at that threshold with its Wilson interval over the
  members. With m non-members an FPR of α allows ⌊α·m⌋ false positives: at 1% with fewer than 100 non-members
  the threshold must pass no non-member at all, which the summary states (``fpr_resolution``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .intervals import wilson


def auroc(members: Sequence[float], non_members: Sequence[float]) -> float:
    """P(member score > non-member score) + ½ P(tie): the area under the ROC curve (0.5 = chance). NaN if a
    class is empty."""
    a = np.asarray(members, dtype=float)
    b = np.asarray(non_members, dtype=float)
    if not len(a) or not len(b):
        return float("nan")
    ranks = _midranks(np.concatenate([a, b]))
    u = ranks[: len(a)].sum() - len(a) * (len(a) + 1) / 2
    return float(u / (len(a) * len(b)))


def _midranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sx = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def auroc_interval(
    members: Sequence[float], non_members: Sequence[float], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Stratified percentile-bootstrap interval of the AUROC (None if a class is empty)."""
    a = np.asarray(members, dtype=float)
    b = np.asarray(non_members, dtype=float)
    if not len(a) or not len(b):
        return None
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot)
    for i in range(n_boot):
        stats[i] = auroc(a[rng.integers(0, len(a), len(a))], b[rng.integers(0, len(b), len(b))])
    lo, hi = np.percentile(stats, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    if hi - lo < 1e-12:  # every resample alike: a point is no interval (see the module's note)
        n = min(len(a), len(b))
        return wilson(int(round(float(lo) * n)), n)
    return float(lo), float(hi)


def roc_curve(members: Sequence[float], non_members: Sequence[float]) -> tuple[list[float], list[float]]:
    """(FPR, TPR) points of the ROC curve, one per distinct threshold from the highest score down, starting at
    (0, 0) and ending at (1, 1)."""
    a = np.asarray(members, dtype=float)
    b = np.asarray(non_members, dtype=float)
    fpr, tpr = [0.0], [0.0]
    for t in sorted(set(a.tolist()) | set(b.tolist()), reverse=True):
        fpr.append(float((b >= t).mean()) if len(b) else 0.0)
        tpr.append(float((a >= t).mean()) if len(a) else 0.0)
    if fpr[-1] != 1.0 or tpr[-1] != 1.0:
        fpr.append(1.0)
        tpr.append(1.0)
    return fpr, tpr


def tpr_at_fpr(
    members: Sequence[float], non_members: Sequence[float], alpha: float
) -> tuple[float, tuple[float, float], float]:
    """(TPR, its Wilson interval, the FPR reached) at the lowest threshold whose FPR is ≤ ``alpha``. No threshold
    at all (every score a non-member has too): TPR 0 at FPR 0."""
    a = np.asarray(members, dtype=float)
    b = np.asarray(non_members, dtype=float)
    if not len(a):
        return 0.0, (0.0, 0.0), 0.0
    allowed = math.floor(alpha * len(b) + 1e-9)
    best_k, best_fp = 0, 0
    for t in sorted(set(a.tolist()) | set(b.tolist()), reverse=True):
        fp = int((b >= t).sum())
        if fp > allowed:
            break
        best_k, best_fp = int((a >= t).sum()), fp
    return best_k / len(a), wilson(best_k, len(a)), (best_fp / len(b) if len(b) else 0.0)


def membership_metrics(
    members: Sequence[float], non_members: Sequence[float], *, seed: int = 0, n_boot: int = 2000
) -> dict:
    """Every headline figure of a membership experiment, JSON-ready (see the module doc)."""
    fpr, tpr = roc_curve(members, non_members)
    out: dict = {
        "auroc": auroc(members, non_members),
        "auroc_ci": auroc_interval(members, non_members, n_boot=n_boot, seed=seed),
        "roc": {"fpr": fpr, "tpr": tpr},
        "n_members": len(members),
        "n_non_members": len(non_members),
        "fpr_resolution": 1 / len(non_members) if len(non_members) else None,
    }
    for alpha, key in ((0.01, "tpr_at_1fpr"), (0.05, "tpr_at_5fpr")):
        t, ci, reached = tpr_at_fpr(members, non_members, alpha)
        out[key], out[f"{key}_ci"], out[f"{key}_fpr"] = t, ci, reached
    if math.isnan(out["auroc"]):
        out["auroc"] = None
    return out
