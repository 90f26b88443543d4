"""Poison detectors (registry): fitted on clean anchors, score embeddings (higher = suspicious)."""

from __future__ import annotations

from ..registry import Registry
from .base import Calibration, Detector
from .l2 import L2DistanceDetector, L2NormDetector
from .mahalanobis import PAPER_BETA_GRID, MahalanobisDetector

DETECTORS: Registry[Detector] = Registry("detector")
DETECTORS.register("l2")(L2NormDetector)
DETECTORS.register("l2-distance")(L2DistanceDetector)
DETECTORS.register("mahalanobis")(MahalanobisDetector)

__all__ = [
    "DETECTORS",
    "Detector",
    "Calibration",
    "MahalanobisDetector",
    "L2NormDetector",
    "L2DistanceDetector",
    "PAPER_BETA_GRID",
]
