"""PoisonedRAG black-box attack (Zou et al., USENIX Security 2025)."""

from __future__ import annotations

from typing import Sequence

from ...errors import ConfigError
from ...params import Params, param
from ...types import Document, Query
from .base import Poison, PoisoningAttack


class PoisonedRAGBlackBox(PoisoningAttack):
    """PoisonedRAG black-box: five adversarial texts per question, each injected as S ⊕ I.

    Source: Zou et al., "PoisonedRAG: Knowledge Corruption Attacks to Retrieval-Augmented
    Generation of Large Language Models", USENIX Security 2025, §4 (black-box: S = the target
    question). The I texts are the published adversarial texts (``targets/poisonedrag_*``);
    use a ``poisonedrag:nq|msmarco|hotpotqa`` query set. Scored by precision/recall/F1 of
    adversarial texts in the top-k.
    """

    class Params(Params):
        n_texts: int = param(5, min=1, max=5, help="Adversarial texts injected per question")
        prefix_question: bool = param(True, help="Black-box S ⊕ I (True) or I alone (False)")

    def craft(self, queries: Sequence[Query]) -> list[Poison]:
        """Up to ``n_texts`` poisons per question from its published adversarial texts, each S ⊕ I (or I alone)."""
        out = []
        for qi, q in enumerate(queries):
            advs = q.metadata.get("adv_texts")
            if not advs:
                raise ConfigError(
                    "the poisonedrag attack needs a poisonedrag:nq|msmarco|hotpotqa query set "
                    f"(query {q.id!r} has no adversarial texts)"
                )
            for j, adv in enumerate(advs[: self.params.n_texts]):
                text = f"{q.text} {adv}" if self.params.prefix_question else adv
                out.append(
                    Poison(
                        Document(f"poison-{qi:05d}-{j}", text, {"poison": True, "query_id": q.id, "attack": self.name}),
                        q.id,
                        "poisonedrag",
                        (str(q.metadata["incorrect"]),) if q.metadata.get("incorrect") else (),
                    )
                )
        return out
