"""The poison-detector contract and its honest calibration.

A detector is fitted on an anchor set of clean document embeddings and scores embeddings
(higher = more suspicious). The flagging threshold is the ``quantile`` (95th, paper §5) of
anchor scores. Scores of the very anchors a detector was fitted on are biased low when the
number of anchors is close to the embedding dimension, so the default calibration takes the
quantile over *out-of-fold* anchor scores (k-fold: each anchor scored by a detector fitted
without it). The in-sample threshold is kept too, to show the difference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError
from ..params import Params


@dataclass(frozen=True)
class Calibration:
    threshold: float            # the one used to flag (out-of-fold unless calibration = in-sample)
    threshold_in_sample: float
    threshold_out_of_fold: float
    anchor_scores: tuple[float, ...]  # in-sample scores of the anchors


class Detector:
    """Base class: ``fit(anchors)``, then ``score(X)`` and ``flag(X)``."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]]
    min_anchors: ClassVar[int] = 5

    def __init__(self, params: Params) -> None:
        self.params = params
        self.state: Any = None
        self.calibration: Calibration | None = None

    # subclass hooks ------------------------------------------------------------------
    def _fit(self, X: np.ndarray) -> Any:
        raise NotImplementedError

    def _score(self, state: Any, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _prepare(self, X: np.ndarray) -> None:
        """Choose hyper-parameters on the anchors before fitting (e.g. β by CV)."""

    # public --------------------------------------------------------------------------
    @property
    def fitted_info(self) -> dict:
        return {}

    def fit(self, anchors: np.ndarray) -> "Detector":
        X = np.asarray(anchors, dtype=np.float64)
        folds = int(getattr(self.params, "folds", 5))
        if X.ndim != 2 or len(X) < max(self.min_anchors, folds):
            raise ConfigError(f"{self.name}: needs at least {max(self.min_anchors, folds)} anchor documents, "
                              f"got {len(X)} (protect more queries or retrieve more anchors per query)")
        q = float(getattr(self.params, "quantile", 0.95))
        self._prepare(X)
        self.state = self._fit(X)
        in_scores = self._score(self.state, X)
        oof = np.empty(len(X))
        rng = np.random.default_rng(int(getattr(self.params, "seed", 0)))
        order = rng.permutation(len(X))
        for k in range(folds):
            test = order[k::folds]
            train = np.setdiff1d(order, test)
            oof[test] = self._score(self._fit(X[train]), X[test])
        t_in, t_oof = float(np.quantile(in_scores, q)), float(np.quantile(oof, q))
        use = t_in if getattr(self.params, "calibration", "out-of-fold") == "in-sample" else t_oof
        self.calibration = Calibration(use, t_in, t_oof, tuple(map(float, in_scores)))
        return self

    def score(self, X: np.ndarray) -> np.ndarray:
        if self.state is None:
            raise ConfigError(f"{self.name}: fit the detector on anchors before scoring")
        return self._score(self.state, np.atleast_2d(np.asarray(X, dtype=np.float64)))

    def flag(self, X: np.ndarray) -> np.ndarray:
        return self.score(X) > self.calibration.threshold
