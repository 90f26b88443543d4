import numpy as np
import pytest
from sklearn.covariance import ShrunkCovariance

from engine.detectors import DETECTORS, MahalanobisDetector
from engine.errors import ConfigError


def _data(n=400, d=64, seed=0):
    """Correlated Gaussian samples; one fixed covariance per dimension, ``seed`` picks the sample."""
    A = np.random.default_rng(1234).normal(size=(d, d)) / np.sqrt(d)
    return np.random.default_rng(seed).normal(size=(n, d)) @ A


def test_mahalanobis_matches_the_paper_formula():
    """s(x) = (x−μ)ᵀ Σβ⁻¹ (x−μ), Σβ = (1−β)S + β tr(S)/d I — checked against scikit-learn's ShrunkCovariance,
    which implements exactly that shrinkage (with the ML covariance; we use the unbiased S, so rescale)."""
    X = _data()
    det = DETECTORS.create("mahalanobis", {"beta": 0.05}).fit(X)
    Y = _data(seed=1)[:50]
    n = len(X)
    S = np.cov(X, rowvar=False)
    d = S.shape[0]
    sigma = 0.95 * S + 0.05 * np.trace(S) / d * np.eye(d)
    diff = Y - X.mean(0)
    expected = np.einsum("ij,ij->i", diff @ np.linalg.inv(sigma), diff)
    assert np.allclose(det.score(Y), expected, rtol=1e-6)
    sk = ShrunkCovariance(shrinkage=0.05, assume_centered=False).fit(X)
    # sklearn uses S_ml = S (n-1)/n; both shrink the same way, so scores differ by exactly n/(n-1)
    assert np.allclose(det.score(Y), sk.mahalanobis(Y) * (n - 1) / n, rtol=1e-6)


def test_beta_is_cross_validated_from_the_grid():
    det = DETECTORS.create("mahalanobis").fit(_data(n=120, d=64))
    assert det.beta_ in det.params.beta_grid
    assert set(det.cv_scores_) == set(det.params.beta_grid)


def test_out_of_fold_threshold_corrects_the_in_sample_bias():
    """With anchors near the dimension, in-sample scores are biased low: the in-sample 95th percentile
    flags far more than 5% of unseen clean points, the out-of-fold one about 5%."""
    X = _data(n=90, d=64, seed=2)
    unseen = _data(n=2000, d=64, seed=3)
    det = DETECTORS.create("mahalanobis", {"beta": 0.01}).fit(X)
    s = det.score(unseen)
    fpr_in = np.mean(s > det.calibration.threshold_in_sample)
    fpr_oof = np.mean(s > det.calibration.threshold_out_of_fold)
    assert fpr_in > 0.3
    assert fpr_oof < 0.15
    assert det.calibration.threshold == det.calibration.threshold_out_of_fold


def test_detects_shifted_poisons_and_l2_norm_is_blind_on_the_sphere():
    rng = np.random.default_rng(5)
    clean = _data(n=500, d=32, seed=6)
    clean /= np.linalg.norm(clean, axis=1, keepdims=True)
    direction = rng.normal(size=32)
    poisons = clean[:100] + 0.8 * direction / np.linalg.norm(direction)
    poisons /= np.linalg.norm(poisons, axis=1, keepdims=True)
    maha = DETECTORS.create("mahalanobis").fit(clean[100:400])
    assert np.mean(maha.flag(poisons)) > 0.95
    l2 = DETECTORS.create("l2").fit(clean[100:400])
    assert np.mean(l2.flag(poisons)) < 0.2


def test_numerically_sound_when_anchors_are_fewer_than_dimensions():
    X = _data(n=20, d=384)
    det = MahalanobisDetector(MahalanobisDetector.Params(beta=0.001)).fit(X)
    s = det.score(_data(n=5, d=384, seed=9))
    assert np.all(np.isfinite(s)) and np.all(s > 0)


def test_too_few_anchors_is_a_clear_error():
    with pytest.raises(ConfigError, match="needs at least 5 anchor documents"):
        DETECTORS.create("mahalanobis").fit(np.ones((3, 8)))
    with pytest.raises(ConfigError, match="beta_grid"):
        DETECTORS.create("mahalanobis", {"beta_grid": (0.0, 2.0)})
