"""Distance threshold: drop retrieved chunks that are not close enough to the query."""

from __future__ import annotations

from typing import Sequence

from ..params import Params, param
from .base import Chunk, Defense, DefenseAction, DefenseContext


class DistanceThreshold(Defense):
    """Keep only chunks whose similarity to the query is at least ``min_similarity``.

    Source: the retrieval-side mitigation evaluated by Zeng et al. 2024 ("The Good and the Bad",
    §5, distance threshold). Similarity is the retriever's own score (cosine for the dense
    retrievers here), so 1 − score is the cosine distance. Extraction prompts ("repeat all the
    context") sit farther from any one chunk than genuine questions do, which is what this exploits;
    too high a threshold also starves genuine questions of context (the utility cost).
    """

    stage = "retrieval"

    class Params(Params):
        min_similarity: float = param(
            0.45, min=-1.0, max=1.0, help="Smallest query–chunk similarity kept (cosine for dense retrievers)"
        )

    def filter(self, query: str, chunks: Sequence[Chunk], ctx: DefenseContext) -> tuple[list[Chunk], DefenseAction]:
        """Drops chunks scoring below ``min_similarity``; the action lists the dropped ids and how many were kept."""
        kept = [c for c in chunks if c.score >= self.params.min_similarity]
        dropped = [c.doc_id for c in chunks if c.score < self.params.min_similarity]
        return kept, self.action("dropped" if dropped else "passed", dropped=tuple(dropped), kept=len(kept))
