"""ℓ2-based baselines: the embedding-norm filter and the isotropic distance to the anchor mean."""
from __future__ import annotations

import numpy as np

from ..params import Params, param
from .base import Detector


class L2NormDetector(Detector):
    """ℓ2-norm of the embedding, ‖f(x)‖₂: the filter the paper shows to fail on most retrievers.

    Source: Zou et al., PoisonedRAG (USENIX Security 2025), §6 defenses; evaluated as the
    baseline in the universal-poisoning paper, §5 and Figure 2. For normalised embeddings
    every norm is 1, so this detector is at chance by construction.
    ``direction``: flag large norms (``high``), small (``low``) or far from the anchors' median
    in either direction (``two-sided``); threshold = quantile of anchor scores.
    """

    class Params(Params):
        direction: str = param("two-sided", choices=("high", "low", "two-sided"), help="Which norms are suspicious")
        quantile: float = param(0.95, min=0.5, max=0.9999, help="Threshold quantile of anchor scores")
        folds: int = param(5, min=2, max=20, help="Folds for out-of-fold calibration")
        calibration: str = param("out-of-fold", choices=("out-of-fold", "in-sample"), help="Threshold source")
        seed: int = param(0, help="Fold assignment seed")

    def _fit(self, X: np.ndarray) -> float:
        return float(np.median(np.linalg.norm(X, axis=1)))

    def _score(self, state: float, X: np.ndarray) -> np.ndarray:
        n = np.linalg.norm(X, axis=1)
        return {"high": n, "low": -n, "two-sided": np.abs(n - state)}[self.params.direction]


class L2DistanceDetector(Detector):
    """Euclidean distance to the anchors' mean, ‖f(x) − μ‖₂ (isotropic: Σ = I).

    Source: universal-poisoning paper, §1.1 and Figure 2 ("ℓ2 distance, which assumes data are
    isotropic"); equals the Mahalanobis detector in the limit β = 1, up to scale.
    """

    class Params(Params):
        quantile: float = param(0.95, min=0.5, max=0.9999, help="Threshold quantile of anchor scores")
        folds: int = param(5, min=2, max=20, help="Folds for out-of-fold calibration")
        calibration: str = param("out-of-fold", choices=("out-of-fold", "in-sample"), help="Threshold source")
        seed: int = param(0, help="Fold assignment seed")

    def _fit(self, X: np.ndarray) -> np.ndarray:
        return X.mean(axis=0)

    def _score(self, state: np.ndarray, X: np.ndarray) -> np.ndarray:
        return np.linalg.norm(X - state, axis=1)
