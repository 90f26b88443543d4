"""The membership-inference contract: the questions asked about one record, and a score from the answers.

An attack sees one candidate record (a chunk of text the data owner holds) and what a black-box user of the RAG
system sees: the answers to its own questions. It returns a score, higher for "this record is in the knowledge
base"; the experiment (engine.runs.membership) turns scores of members and non-members into AUROC and TPR at a
low FPR. Attacks are stateless between records, so a run resumes by re-scoring nothing: each record's score is
recorded in its round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Sequence

import numpy as np

from ...capabilities import Declares
from ...params import Params


@dataclass
class MembershipContext:
    """The attacker's own resources: a seed and, for attacks that need one, a small proxy LLM of its own."""

    seed: int = 0
    proxy_llm: Optional[Any] = None  # a Generator (MBA chooses its masks with one); not the target's


class MembershipAttack(Declares):
    """Base class: subclasses implement :meth:`probes` (the questions about one record) and :meth:`score`.

    ``queries_per_record``: how many questions a decision costs (reported as the attack's query cost);
    ``suggested_model``: the smallest packaged model measured to answer this attack's questions usefully (the app
    preselects it), "" when any will do."""

    name: ClassVar[str] = ""
    queries_per_record: ClassVar[int] = 1
    suggested_model: ClassVar[str] = ""  # a packaged model this attack needs at least (forms preselect it); "" = any

    class Params(Params):
        pass

    def __init__(self, params: Params, ctx: MembershipContext | None = None) -> None:
        self.params = params
        self.ctx = ctx or MembershipContext()

    def probes(self, record: str, rng: np.random.Generator) -> list[str]:
        """The questions sent to the RAG system about ``record`` (one record, its text as the data owner holds
        it), in order; ``rng`` is this record's own seeded generator (the same record gets the same questions
        on a re-run)."""
        raise NotImplementedError

    def score(self, record: str, probes: Sequence[str], answers: Sequence[str]) -> float:
        """Membership score of ``record`` from the answers to its :meth:`probes` (same order): higher means
        more likely in the knowledge base. Any real number; only the order of scores matters to the metrics."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Name and parameters (for the run manifest)."""
        return {"name": self.name, "params": self.params.to_dict()}
