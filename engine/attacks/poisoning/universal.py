"""Universal poisoning (paper §3.1) and its paraphrased-query variant (§3.2, Table 2)."""

from __future__ import annotations

from typing import Sequence

from ...params import Params, param
from ...types import Document, Query
from .base import Poison, PoisoningAttack
from .paraphrase import PARAPHRASERS
from .targets import TARGET_KINDS, target_goal, target_text


class UniversalPoisoning(PoisoningAttack):
    """Universal poisoning: poisoned doc p_i = q_i ⊕ target information, one per query.

    Source: "On the Vulnerability of Applying Retrieval-Augmented Generation within
    Knowledge-Intensive Application Domains" (universal poisoning), §3.1 "Attacking Method".
    Success for q_i when p_i is among the top-K documents retrieved for q_i (K=2 in the paper).
    """

    class Params(Params):
        target: str = param("pii", choices=TARGET_KINDS, help="Kind of target information appended to the query")
        target_text: str = param("", help="Your own target text (target = custom)")
        variant: int = param(0, min=0, max=99, help="Which generated target document of this kind")
        separator: str = param(" ", help="Text between the query and the target information")
        order: str = param(
            "query-first",
            choices=("query-first", "target-first"),
            help="query-first: q ⊕ target (the paper); target-first: target ⊕ q, so the target is "
            "always inside what the retriever reads, however long the question",
        )
        goal: str = param(
            "",
            help="Comma-separated strings whose appearance in an answer counts as the attack "
            "working at generation (default: the target's own items: name, e-mail, "
            "phone, MRN …, or PoisonedRAG's wrong answer)",
        )

    def target(self) -> str:
        """The target information appended to every query (one text for all, set by ``target``, ``variant`` and the
        seed)."""
        p = self.params
        return target_text(p.target, seed=self.seed, variant=p.variant, text=p.target_text, data_dir=self.data_dir)

    def goal(self) -> tuple[str, ...]:
        """What an answer must repeat for the attack to have worked (the ``goal`` parameter, else
        :func:`~engine.attacks.poisoning.targets.target_goal` of the target)."""
        p = self.params
        if p.goal.strip():
            return tuple(x.strip() for x in p.goal.split(",") if x.strip())
        return target_goal(p.target, seed=self.seed, variant=p.variant, text=p.target_text, data_dir=self.data_dir)

    def attacker_query(self, q: Query) -> str:
        """The query text the attacker knows (the exact query here)."""
        return q.text

    def craft(self, queries: Sequence[Query]) -> list[Poison]:
        """One poison per query: the attacker's query text, ``separator``, then the target information (or the
        target first, with ``order = target-first``: a variant of ours, not the paper's, for retrievers whose
        window a long question fills, e.g. MedQA's vignettes under MiniLM's 256 word pieces)."""
        info, goal = self.target(), self.goal()
        sep = self.params.separator
        out = []
        for i, q in enumerate(queries):
            aq = self.attacker_query(q)
            text = f"{info}{sep}{aq}" if self.params.order == "target-first" else f"{aq}{sep}{info}"
            out.append(
                Poison(
                    Document(f"poison-{i:05d}", text, {"poison": True, "query_id": q.id, "attack": self.name}),
                    q.id,
                    self.params.target,
                    goal,
                )
            )
        return out


class ParaphrasedPoisoning(UniversalPoisoning):
    """Universal poisoning when the attacker knows only a paraphrase: p_i = para(q_i) ⊕ target.

    Source: universal-poisoning paper, §3.2 "How robust is the attack against paraphrasing?"
    (Table 2). The victim still queries with the original q_i. The paraphrase source is a
    registry (``rule-based`` ships: deterministic, offline).
    """

    class Params(UniversalPoisoning.Params):
        paraphraser: str = param("rule-based", help="Paraphrase source (registry name)")
        rate: float = param(0.7, min=0.0, max=1.0, help="Share of replaceable words the paraphraser changes")

        def validate(self) -> None:
            PARAPHRASERS.get(self.paraphraser)

    def attacker_query(self, q: Query) -> str:
        """A paraphrase of the victim's query by the configured paraphraser (the attacker never sees the original)."""
        para = PARAPHRASERS.create(self.params.paraphraser, {"rate": self.params.rate, "seed": self.seed})
        return para.paraphrase(q.text)
