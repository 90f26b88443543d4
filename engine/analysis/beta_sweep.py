"""The universal-poisoning paper's Table 8: the Mahalanobis detector's detection rate for each shrinkage β.

Every β is refitted on the same run's anchors (:func:`engine.views.poisoning_run.detector_report`), with the
out-of-fold 95th-percentile threshold the run itself uses, and scored on the same poisons and held-out clean
documents, so the rows differ only by β. The paper reports detection rates between 0.95 and 0.99 for
β ∈ {0.001, 0.005, 0.01, 0.05, 0.1, 0.2} (its Table 8).
"""

from __future__ import annotations

from typing import Any, Sequence

from .paper_tables import PAPER_BETAS


def beta_table(run: Any, betas: Sequence[float] = PAPER_BETAS) -> list[dict[str, Any]]:
    """One row per β: TPR (the paper's detection rate), FPR on held-out clean documents, AUROC, threshold."""
    from ..views.poisoning_run import detector_report

    cache: dict = {}
    rows = []
    for b in betas:
        rep = detector_report(run, "mahalanobis", {"beta": float(b)}, cache=cache)
        rows.append(
            {
                "beta": float(b),
                "tpr": rep["tpr"],
                "fpr": rep["fpr"],
                "auroc": rep["auroc"],
                "threshold": rep["threshold"],
                "n_anchors": rep["n_anchors"],
            }
        )
    return rows
