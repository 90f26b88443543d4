"""Analysis of why attacks work (paper §4)."""

from .orthogonal import (
    TABLE3_ROWS,
    clean_retrieval_similarity,
    clean_similarity_table,
    orthogonal_augmentation_pairs,
    orthogonal_augmentation_table,
)

from .correlations import FEATURES, correlate, query_features
from .views import detector_report, embedding_map, rounds_table

__all__ = [
    "FEATURES",
    "correlate",
    "query_features",
    "detector_report",
    "embedding_map",
    "rounds_table",
    "TABLE3_ROWS",
    "clean_retrieval_similarity",
    "clean_similarity_table",
    "orthogonal_augmentation_pairs",
    "orthogonal_augmentation_table",
]
