"""Metrics: pure functions over a run's events."""

from .poisoning import (
    MetricValue,
    answer_matches,
    asr,
    asr_curve,
    asr_defended,
    asr_generation,
    defense_rates,
    detection,
    detector_scores,
    mean_poison_rank,
    poisonedrag_prf,
    rates_at,
    roc_points,
    store_agreement,
    triggered_rounds,
)

__all__ = [
    "MetricValue",
    "answer_matches",
    "asr",
    "asr_curve",
    "asr_defended",
    "asr_generation",
    "defense_rates",
    "detection",
    "detector_scores",
    "rates_at",
    "mean_poison_rank",
    "poisonedrag_prf",
    "roc_points",
    "store_agreement",
    "triggered_rounds",
]
