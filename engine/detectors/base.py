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
from ..params import Params, param


@dataclass(frozen=True)
class Calibration:
    """Thresholds from one fit: the one used to flag, both candidates, and the anchors' in-sample scores."""

    threshold: float  # the one used to flag (out-of-fold unless calibration = in-sample)
    threshold_in_sample: float
    threshold_out_of_fold: float
    anchor_scores: tuple[float, ...]  # in-sample scores of the anchors


class Detector:
    """Base class: ``fit(anchors)``, then ``score(X)`` and ``flag(X)``. A detector's own ``Params``
    subclass ``Detector.Params``, which holds what the base's calibration reads."""

    name: ClassVar[str] = ""
    min_anchors: ClassVar[int] = 5
    # True when the fit estimates a d×d covariance: with fewer anchors than dimensions it is poorly
    # estimated, which the lab warns about (a norm or a distance to the mean needs no such care)
    estimates_covariance: ClassVar[bool] = False

    class Params(Params):
        quantile: float = param(0.95, min=0.5, max=0.9999, help="Threshold quantile of anchor scores")
        folds: int = param(5, min=2, max=20, help="Folds for out-of-fold calibration (and any CV of the detector)")
        calibration: str = param(
            "out-of-fold", choices=("out-of-fold", "in-sample"), help="Which anchor scores set the threshold"
        )
        seed: int = param(0, min=0, help="Fold assignment seed")

    def __init__(self, params: Params) -> None:
        self.params = params
        self.state: Any = None
        self.calibration: Calibration | None = None

    # subclass hooks ------------------------------------------------------------------
    def _fit(self, X: np.ndarray) -> Any:
        """Fit on clean anchor embeddings ``X`` (n × d, float64, n ≥ ``min_anchors``) and return the fitted
        state (any object: a mean and a precision matrix, a norm, …). It must not keep ``X`` on ``self``:
        :meth:`fit` also calls it on each calibration fold's subset and keeps only the full fit's state.
        Called after :meth:`_prepare`. May raise :class:`~engine.errors.ConfigError` for anchors it cannot use."""
        raise NotImplementedError

    def _score(self, state: Any, X: np.ndarray) -> np.ndarray:
        """One score per row of ``X`` (n × d, float64) under a ``state`` that :meth:`_fit` returned: a 1-D
        float array, higher = more suspicious. The base calibrates the threshold on these scores (the
        ``quantile`` of the anchors' out-of-fold or in-sample scores); it must be a pure function of its
        arguments."""
        raise NotImplementedError

    def _prepare(self, X: np.ndarray) -> None:
        """Choose hyper-parameters on the anchors before fitting (e.g. β by CV)."""

    # public --------------------------------------------------------------------------
    @property
    def fitted_info(self) -> dict:
        """Hyper-parameters the fit chose, recorded with ``detector_fitted`` (none for the base class)."""
        return {}

    def fit(self, anchors: np.ndarray) -> "Detector":
        """Fit on clean anchor embeddings and set the threshold from in-sample and k-fold out-of-fold anchor scores;
        returns self."""
        X = np.asarray(anchors, dtype=np.float64)
        folds = int(self.params.folds)
        if X.ndim != 2 or len(X) < max(self.min_anchors, folds):
            raise ConfigError(
                f"{self.name}: needs at least {max(self.min_anchors, folds)} anchor documents, "
                f"got {len(X)} (protect more queries or retrieve more anchors per query)"
            )
        q = float(self.params.quantile)
        self._prepare(X)
        self.state = self._fit(X)
        in_scores = self._score(self.state, X)
        oof = np.empty(len(X))
        rng = np.random.default_rng(int(self.params.seed))
        order = rng.permutation(len(X))
        for k in range(folds):
            test = order[k::folds]
            train = np.setdiff1d(order, test)
            oof[test] = self._score(self._fit(X[train]), X[test])
        t_in, t_oof = float(np.quantile(in_scores, q)), float(np.quantile(oof, q))
        use = t_in if self.params.calibration == "in-sample" else t_oof
        self.calibration = Calibration(use, t_in, t_oof, tuple(map(float, in_scores)))
        return self

    def score(self, X: np.ndarray) -> np.ndarray:
        """Scores of the embeddings ``X`` (higher = more suspicious); :meth:`fit` first."""
        if self.state is None:
            raise ConfigError(f"{self.name}: fit the detector on anchors before scoring")
        return self._score(self.state, np.atleast_2d(np.asarray(X, dtype=np.float64)))

    def flag(self, X: np.ndarray) -> np.ndarray:
        """True where the score is above the calibrated threshold."""
        return self.score(X) > self.calibration.threshold
