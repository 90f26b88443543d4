"""ℓ2-based baselines: the embedding-norm filter and the isotropic distance to the anchor mean."""

from __future__ import annotations

import numpy as np

from ..params import param
from .base import Detector


class L2NormDetector(Detector):
    """ℓ2-norm of the embedding, ‖f(x)‖₂: the filter the paper shows to fail on most retrievers.

    Source: Zou et al., PoisonedRAG (USENIX Security 2025), §6 defenses; evaluated as the
    baseline in the universal-poisoning paper, §5 and Figure 2. For normalised embeddings
    every norm is 1, so this detector is at chance by construction.
    ``direction``: flag large norms (``high``), small (``low``) or far from the anchors' median
    in either direction (``two-sided``); threshold = quantile of anchor scores.
    """

    class Params(Detector.Params):
        direction: str = param("two-sided", choices=("high", "low", "two-sided"), help="Which norms are suspicious")

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

    class Params(Detector.Params):
        """Only the shared calibration parameters."""

    def _fit(self, X: np.ndarray) -> np.ndarray:
        return X.mean(axis=0)

    def _score(self, state: np.ndarray, X: np.ndarray) -> np.ndarray:
        return np.linalg.norm(X - state, axis=1)
