"""Analysis of why attacks work (paper §4) and the paper tables; what the app shows of a run lives in
:mod:`engine.views`."""

from .orthogonal import (
    TABLE3_ROWS,
    clean_retrieval_similarity,
    clean_similarity_table,
    orthogonal_augmentation_pairs,
    orthogonal_augmentation_table,
)

from .correlations import FEATURES, correlate, query_features

__all__ = [
    "FEATURES",
    "correlate",
    "query_features",
    "TABLE3_ROWS",
    "clean_retrieval_similarity",
    "clean_similarity_table",
    "orthogonal_augmentation_pairs",
    "orthogonal_augmentation_table",
]
