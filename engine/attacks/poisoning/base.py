"""The poisoning-attack contract: one verb, ``craft(queries) -> poisons``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ...capabilities import Declares
from ...params import Params
from ...types import Document, Query


@dataclass(frozen=True)
class Poison:
    """A document to inject, the query it is aimed at, and what an answer must repeat for the attack to work
    at generation (``goal``: the target's items, e.g. a fake phone number or PoisonedRAG's wrong answer)."""

    doc: Document
    query_id: str
    target_kind: str
    goal: tuple[str, ...] = ()


class PoisoningAttack(Declares):
    """Base class: crafts the documents to inject for a set of protected queries.

    ``requires = {"index"}`` (:mod:`engine.capabilities`): the attack queries the clean retriever before crafting
    (an adaptive attacker); the run then calls :meth:`bind` with a clean-search function. An attack whose
    ``Params`` has a ``target`` field takes the run's target information (:meth:`takes_target`).
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]]

    @classmethod
    def takes_target(cls) -> bool:
        """Whether the run's ``target`` / ``target_text`` are this attack's parameters."""
        import dataclasses

        return any(f.name == "target" for f in dataclasses.fields(cls.Params))

    def bind(self, search_clean) -> None:
        """``search_clean(query_texts, k) -> list of lists of clean texts`` (the attacker's view); only
        called when the attack ``needs("index")``."""

    def __init__(self, params: Params, *, seed: int = 0, data_dir: str | None = None) -> None:
        self.params = params
        self.seed = seed
        self.data_dir = data_dir

    def craft(self, queries: Sequence[Query]) -> list[Poison]:
        """The documents to inject for ``queries``, each tagged with the query it is aimed at."""
        raise NotImplementedError
