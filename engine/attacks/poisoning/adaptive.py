"""A detector-aware (adaptive) variant of universal poisoning."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import ConfigError
from ...params import param
from ...types import Document, Query
from .base import Poison
from .universal import UniversalPoisoning


class CamouflagedPoisoning(UniversalPoisoning):
    """Adaptive universal poisoning: q ⊕ target ⊕ camouflage, where the camouflage is the text of the
    query's own best clean documents, pulling the poison's embedding back into the clean distribution
    that a Mahalanobis detector models, while the query prefix keeps it near the top.

    Source: the adaptive-attack principle of Tramèr et al., "On Adaptive Attacks to Adversarial Example
    Defenses", NeurIPS 2020, applied to the detector of the universal-poisoning paper (§5); the attacker
    may query the retriever and see retrieved documents (paper §2, threat model). Our construction,
    not the paper's: the number of camouflage documents trades attack success for stealth.
    """

    requires = frozenset({"index"})

    class Params(UniversalPoisoning.Params):
        camouflage_docs: int = param(1, min=0, max=5, help="Clean top documents appended as camouflage")
        camouflage_words: int = param(60, min=5, max=400, help="Words kept from each camouflage document")

    def bind(self, search_clean) -> None:
        """``search_clean(query_texts, k) -> list of lists of clean texts`` (the attacker's view)."""
        self._search_clean = search_clean

    def craft(self, queries: Sequence[Query]) -> list[Poison]:
        """One poison per query: q ⊕ target ⊕ the first ``camouflage_words`` words of each of its top clean documents;
        needs :meth:`bind` first."""
        if self.params.camouflage_docs and not hasattr(self, "_search_clean"):
            raise ConfigError("the camouflaged attack needs to query the retriever (run it through a PoisoningRun)")
        info, goal = self.target(), self.goal()
        camo = (
            self._search_clean([q.text for q in queries], self.params.camouflage_docs)
            if self.params.camouflage_docs
            else [[] for _ in queries]
        )
        out = []
        for i, (q, docs) in enumerate(zip(queries, camo)):
            extra = " ".join(" ".join(d.split()[: self.params.camouflage_words]) for d in docs)
            text = f"{q.text}{self.params.separator}{info}" + (f" {extra}" if extra else "")
            out.append(
                Poison(
                    Document(f"poison-{i:05d}", text, {"poison": True, "query_id": q.id, "attack": self.name}),
                    q.id,
                    self.params.target,
                    goal,
                )
            )
        return out


def clean_searcher(index):
    """The attacker's black-box view of the clean index: top-k texts per query (exact)."""

    def search(texts: list[str], k: int) -> list[list[str]]:
        if not index.dense:
            out = []
            for t in texts:
                base, _ = index.bm25.scores(t, [])
                out.append([index.corpus.documents[int(j)].text for j in np.argsort(-base)[:k]])
            return out
        qv = index.retriever.encode_queries(texts)
        S = index.retriever.score(qv, index.vectors)
        top = np.argsort(-S, axis=1)[:, :k]
        return [[index.corpus.documents[int(j)].text for j in row] for row in top]

    return search
